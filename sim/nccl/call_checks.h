// The argument checks of the sim device's NCCL calls, with NCCL's result codes: each failure
// is recorded (last_error.h) with a message naming the call, the rank and what is wrong.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <memory>

#include "sim/nccl/collective_plans.h"
#include "sim/nccl/comm_state.h"

namespace engine::sim_nccl {

struct CheckedCall {
  std::shared_ptr<CommState> comm;
  CallSite site{"", 0, 1};
};

// The live, not aborted communicator behind `handle`: ncclInvalidArgument for NULL or an
// unknown handle, ncclInvalidUsage once aborted.
ncclResult_t check_comm(const char* call, ncclComm_t handle, CheckedCall& out);
// Bytes per element of `type` (any of NCCL's types moves).
ncclResult_t check_datatype(const CheckedCall& c, ncclDataType_t type, size_t& element_bytes);
// The reduction of `type` and `op`: float32, float64 and bfloat16 with sum, avg, max or min.
ncclResult_t check_reducer(const CheckedCall& c, ncclDataType_t type, ncclRedOp_t op,
                           Reducer& reducer);
// count * element_bytes * blocks without overflow.
ncclResult_t check_size(const CheckedCall& c, size_t count, size_t element_bytes, size_t blocks,
                        size_t& bytes);
// The checks every call starts with: check_comm, then check_datatype and check_size of
// `count` elements, whose size in bytes it returns; with `all_ranks_bytes`, also of the
// nranks blocks of the gathering and scattering calls.
ncclResult_t check_call(const char* call, ncclComm_t handle, ncclDataType_t type, size_t count,
                        CheckedCall& out, size_t& bytes, size_t* all_ranks_bytes = nullptr);
// A peer or root (`what`) in [0, nranks).
ncclResult_t check_rank(const CheckedCall& c, const char* what, int rank);
// `bytes` at `data` inside one device allocation of the communicator's device (nothing to
// check for 0 bytes).
ncclResult_t check_buffer(const CheckedCall& c, const char* what, const void* data, size_t bytes);

}  // namespace engine::sim_nccl
