// The body of the task that an NCCL group (or a lone call) becomes on its stream: waits for the
// communicator's earlier tasks, then drives every send and receive of its operations at once
// until all complete, as NCCL's kernels do, then runs their host-side steps in call order.
//
// Between one pair of ranks, transfers match in call order: each is framed by its byte count,
// so a receive of another size than the matching send is reported, not silently misread.
// Like NCCL, a transfer whose peer never comes blocks until ncclCommAbort (the engine's
// watchdog calls it on a timeout); a peer whose process has exited is also reported as the
// communicator's asynchronous error (ncclRemoteError) while the task keeps waiting.
#pragma once

#include <memory>
#include <vector>

#include "sim/nccl/comm_state.h"
#include "sim/nccl/operation.h"

namespace engine::sim_nccl {

void run_operations(const std::shared_ptr<CommState>& comm, uint64_t ticket,
                    std::vector<Operation>& operations);

}  // namespace engine::sim_nccl
