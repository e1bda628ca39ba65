// CHECK_CUDA: ENGINE_CHECK with the CUDA runtime's error codes. Its siblings are
// CHECK_CUBLAS (check_cublas.h) and CHECK_CUDNN (check_cudnn.h), each in its own header so
// that including this one needs neither library. Only for translation units that already
// compile against the CUDA toolkit.
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
