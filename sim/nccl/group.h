// ncclGroupStart/End of the sim device's NCCL shim. Calls made inside a group (per host
// thread, nested groups counting) are collected; at the outermost ncclGroupEnd, or at once
// outside a group, the operations of each (communicator, stream) become ONE task on that
// stream, which drives all their transfers concurrently (progress.h): a grouped send+recv
// around a ring cannot deadlock, as with real NCCL.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

#include "sim/nccl/comm_state.h"
#include "sim/nccl/operation.h"

namespace engine::sim_nccl {

ncclResult_t group_start();
// ncclInvalidUsage without a matching start; the first error of a call inside the group
// (its ops are then dropped, as NCCL does).
ncclResult_t group_end();
// Queues `op` (at once outside a group).
ncclResult_t add_to_group(const std::shared_ptr<CommState>& comm, cudaStream_t stream,
                          Operation op);
// A call inside the current group failed: group_end returns its status.
void note_group_error(ncclResult_t status);

}  // namespace engine::sim_nccl
