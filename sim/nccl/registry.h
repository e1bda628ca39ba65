// The sim device's NCCL handles: an ncclComm_t is a number the shim hands out (never a
// pointer into freed memory), so a destroyed or made-up handle is ncclInvalidArgument, not a
// crash. An aborted communicator stays registered (unusable, its asynchronous error still
// readable) until ncclCommDestroy, a leniency real NCCL does not have: there the handle is
// gone once ncclCommAbort returns.
#pragma once

#include <nccl.h>

#include <memory>

#include "sim/nccl/comm_state.h"

namespace engine::sim_nccl {

ncclComm_t register_comm(std::shared_ptr<CommState> state);
// The live communicator behind `handle`, or nullptr.
std::shared_ptr<CommState> find_comm(ncclComm_t handle);
void unregister_comm(ncclComm_t handle);

}  // namespace engine::sim_nccl
