// Element types on the device and their fp32 conversions (CUDA's own round-to-nearest-even),
// shared by the kernels of every op family.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/dtype.h"

namespace engine::cuda {

__device__ __forceinline__ float to_f32(float value) {
  return value;
}
__device__ __forceinline__ float to_f32(__nv_bfloat16 value) {
  return __bfloat162float(value);
}

template <typename T>
__device__ __forceinline__ T from_f32(float value);
template <>
__device__ __forceinline__ float from_f32<float>(float value) {
  return value;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float value) {
  return __float2bfloat16(value);
}

// Calls fn.template operator()<T>() with T = float or __nv_bfloat16 for the tensor dtype, and
// throws for any other: an i32 buffer must never be read as bf16 by a float kernel.
template <typename Fn>
void dispatch_device_dtype(DType dtype, Fn&& fn) {
  if (dtype == DType::f32) {
    fn.template operator()<float>();
  } else if (dtype == DType::bf16) {
    fn.template operator()<__nv_bfloat16>();
  } else {
    fail_not_float_dtype(dtype, "dispatch_device_dtype");
  }
}

}  // namespace engine::cuda
