// ncclGetLastError's text in the sim device's NCCL shim: the calling thread's last failure,
// naming the call, the rank and the peer or argument at fault.
#pragma once

#include <nccl.h>

#include <string>

namespace engine::sim_nccl {

// Records `why` as this thread's last error (and as the current group's error) and returns
// `status`.
ncclResult_t fail(ncclResult_t status, const std::string& why);
const std::string& last_error();

}  // namespace engine::sim_nccl
