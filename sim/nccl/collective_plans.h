// NCCL's calls as Operations of the sim device's shim (operation.h): point-to-point calls are
// one transfer; collectives exchange whole buffers with every peer that needs them and then
// reduce on the host in a FIXED rank order (0, 1, ..., nranks-1), so every rank computes the
// same bits and a result does not depend on which peer answered first. The combining step is
// the CPU twin of the ring's kernels (collectives/cpu/reduce.h): same expressions, same
// rounding (bf16: once per step), avg dividing once at the end.
//
// Arguments are already checked (nccl_api.cpp); `bytes` is one rank's block (count elements).
// In place (sendbuff == recvbuff, or the rank's block of it for all-gather/reduce-scatter)
// works: sends read before any result is written, and an own input that the result would
// overwrite before it is read is staged first.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/core/reduce_op.h"
#include "sim/nccl/comm_state.h"
#include "sim/nccl/operation.h"

namespace engine::sim_nccl {

struct Reducer {
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
};

Operation send_operation(const CallSite& site, const void* data, size_t bytes, int peer);
Operation recv_operation(const CallSite& site, void* data, size_t bytes, int peer);
Operation all_reduce_operation(const CallSite& site, const void* send, void* recv, int64_t count,
                               const Reducer& reducer);
Operation broadcast_operation(const CallSite& site, const void* send, void* recv, size_t bytes,
                              int root);
Operation reduce_operation(const CallSite& site, const void* send, void* recv, int64_t count,
                           const Reducer& reducer, int root);
Operation all_gather_operation(const CallSite& site, const void* send, void* recv, size_t bytes);
Operation reduce_scatter_operation(const CallSite& site, const void* send, void* recv,
                                   int64_t count, const Reducer& reducer);

}  // namespace engine::sim_nccl
