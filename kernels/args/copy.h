// Arguments of fill and cast, shared by the dispatcher (kernels/ops/copy.cpp), the CPU twin
// (kernels/cpu/copy.h) and the CUDA launcher (kernels/cuda/copy.h); see
// kernels/args/batchnorm.h for why. Device pointers on CUDA.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace engine {

struct FillArgs {
  DType dtype = DType::f32;  // f32, bf16 or f64
  void* dst = nullptr;
  int64_t n = 0;
  float value = 0.f;  // rounded to dtype once
};

// f32 <-> bf16 (or a plain copy when the dtypes match).
struct CastArgs {
  DType src_dtype = DType::f32;
  const void* src = nullptr;
  DType dst_dtype = DType::f32;
  void* dst = nullptr;
  int64_t n = 0;
};

}  // namespace engine
