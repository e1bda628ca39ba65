// CHECK_CUDNN: ENGINE_CHECK with cuDNN's status codes.
#pragma once

#include <cudnn.h>

#include <string>

#include "kernels/error.h"

namespace engine {

struct CudnnLibrary {
  using Status = cudnnStatus_t;
  static bool ok(Status status) { return status == CUDNN_STATUS_SUCCESS; }
  static std::string describe(Status status) {
    return std::string("cuDNN error ") + cudnnGetErrorString(status);
  }
};

}  // namespace engine

#define CHECK_CUDNN(call) ENGINE_CHECK(::engine::CudnnLibrary, call)
