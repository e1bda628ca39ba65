// CHECK_CUBLAS: ENGINE_CHECK with cuBLAS's status codes.
#pragma once

#include <cublas_v2.h>

#include <string>

#include "kernels/error.h"

namespace engine {

struct CublasLibrary {
  using Status = cublasStatus_t;
  static bool ok(Status status) { return status == CUBLAS_STATUS_SUCCESS; }
  static std::string describe(Status status) {
    return std::string("cuBLAS error ") + cublasGetStatusName(status) + " (" +
           cublasGetStatusString(status) + ")";
  }
};

}  // namespace engine

#define CHECK_CUBLAS(call) ENGINE_CHECK(::engine::CublasLibrary, call)
