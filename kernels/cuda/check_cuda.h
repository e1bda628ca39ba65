// CHECK_CUDA / CHECK_CUBLAS / CHECK_CUDNN: ENGINE_CHECK with the CUDA libraries' tags.
// Only for translation units that already compile against the CUDA toolkit.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "kernels/error.h"

namespace engine {

struct CudaLibrary {
  using Status = cudaError_t;
  static bool ok(Status status) { return status == cudaSuccess; }
  static std::string describe(Status status) {
    return std::string("CUDA error ") + cudaGetErrorName(status) + " (" +
           cudaGetErrorString(status) + ")";
  }
};

}  // namespace engine

#define CHECK_CUDA(call) ENGINE_CHECK(::engine::CudaLibrary, call)
