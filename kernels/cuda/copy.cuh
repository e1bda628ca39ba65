// fill and the f32 <-> bf16 cast, as element-wise maps.
#pragma once

#include "kernels/cuda/copy.h"
#include "kernels/cuda/elementwise.cuh"

namespace engine::cuda {

template <typename T>
struct FillOp {
  T value;
  __device__ __forceinline__ T operator()() const { return value; }
};

template <typename TOut, typename TIn>
struct CastOp {
  __device__ __forceinline__ TOut operator()(TIn x) const { return from_f32<TOut>(to_f32(x)); }
};

// ---------------------------------------------------------------------------------------
// Launchers

// The value is rounded to T on the host side of the launch, once, so every element gets the
// same bits as the CPU fill.
template <typename T>
void fill_launch(T* dst, int64_t n, T value, cudaStream_t stream, ElementwiseLaunch shape = {}) {
  launch_map0(n, FillOp<T>{value}, dst, stream, shape);
}

template <typename TOut, typename TIn>
void cast_launch(const TIn* src, TOut* dst, int64_t n, cudaStream_t stream,
                 ElementwiseLaunch shape = {}) {
  launch_map1(n, CastOp<TOut, TIn>{}, dst, src, stream, shape);
}

// ---------------------------------------------------------------------------------------
// Entry points (declared in copy.h)

void fill(DType dtype, void* dst, int64_t n, float value, cudaStream_t stream) {
  if (dtype == DType::f32) {
    fill_launch(static_cast<float*>(dst), n, value, stream);
  } else if (dtype == DType::bf16) {
    __nv_bfloat16_raw bits;
    bits.x = bf16::from_float(value);
    fill_launch(static_cast<__nv_bfloat16*>(dst), n, __nv_bfloat16(bits), stream);
  } else if (dtype == DType::f64) {
    fill_launch(static_cast<double*>(dst), n, static_cast<double>(value), stream);
  } else {
    fail_not_float_dtype(dtype, "fill");
  }
}

void cast(DType src_dtype, const void* src, DType dst_dtype, void* dst, int64_t n,
          cudaStream_t stream) {
  dispatch_device_dtype(src_dtype, [&]<typename TIn>() {
    dispatch_device_dtype(dst_dtype, [&]<typename TOut>() {
      cast_launch(static_cast<const TIn*>(src), static_cast<TOut*>(dst), n, stream);
    });
  });
}

}  // namespace engine::cuda
