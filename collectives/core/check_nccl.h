// CHECK_NCCL: ENGINE_CHECK with NCCL's result codes. NCCL's last-error text says which
// peer or transport failed, so it is appended.
#pragma once

#include <nccl.h>

#include <string>

#include "kernels/error.h"

namespace engine {

struct NcclLibrary {
  using Status = ncclResult_t;
  static bool ok(Status status) { return status == ncclSuccess || status == ncclInProgress; }
  static std::string describe(Status status) {
    std::string text = std::string("NCCL error ") + ncclGetErrorString(status);
    const char* last = ncclGetLastError(nullptr);
    if (last != nullptr && last[0] != '\0') text.append(": ").append(last);
    return text;
  }
};

}  // namespace engine

#define CHECK_NCCL(call) ENGINE_CHECK(::engine::NcclLibrary, call)
