// Arguments of the activation entry points (ReLU and the residual add), one struct per entry
// point, shared by the dispatcher (kernels/ops/activation.cpp), the CPU twin
// (kernels/cpu/activation.h) and the CUDA launcher (kernels/cuda/activation.h); see
// kernels/args/batchnorm.h for why. n elements of dtype each (device pointers on CUDA);
// outputs may alias inputs.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace engine {

struct ReluForwardArgs {
  DType dtype = DType::f32;
  const void* x = nullptr;
  void* y = nullptr;
  int64_t n = 0;
};

// dx = dy where the forward output y > 0.
struct ReluBackwardArgs {
  DType dtype = DType::f32;
  const void* y = nullptr;
  const void* dy = nullptr;
  void* dx = nullptr;
  int64_t n = 0;
};

// y = a + b, then max(., 0) when relu (the residual join of a block).
struct AddArgs {
  DType dtype = DType::f32;
  const void* a = nullptr;
  const void* b = nullptr;
  void* y = nullptr;
  int64_t n = 0;
  bool relu = false;
};

}  // namespace engine
