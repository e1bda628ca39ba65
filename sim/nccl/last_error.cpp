#include "sim/nccl/last_error.h"

#include "sim/nccl/group.h"

namespace engine::sim_nccl {
namespace {

thread_local std::string t_last_error;

}  // namespace

ncclResult_t fail(ncclResult_t status, const std::string& why) {
  t_last_error = why;
  note_group_error(status);
  return status;
}

const std::string& last_error() {
  return t_last_error;
}

}  // namespace engine::sim_nccl

// As NCCL words them, without its hints to rerun with NCCL_DEBUG: ncclGetLastError says more.
const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}
