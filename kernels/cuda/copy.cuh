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
// The entry points (declared in copy.h) with their launch geometry: the SIMT tests force grids
// through it.

// The value is rounded to the dtype on the host side of the launch, once, so every element
// gets the same bits as the CPU fill.
inline void fill(const FillArgs& args, cudaStream_t stream, const ElementwiseLaunch& geometry) {
  if (args.dtype == DType::f32) {
    launch_map0(args.n, FillOp<float>{args.value}, static_cast<float*>(args.dst), stream, geometry);
  } else if (args.dtype == DType::bf16) {
    __nv_bfloat16_raw bits;
    bits.x = bf16::from_float(args.value);
    launch_map0(args.n, FillOp<__nv_bfloat16>{__nv_bfloat16(bits)},
                static_cast<__nv_bfloat16*>(args.dst), stream, geometry);
  } else if (args.dtype == DType::f64) {
    launch_map0(args.n, FillOp<double>{static_cast<double>(args.value)},
                static_cast<double*>(args.dst), stream, geometry);
  } else {
    fail_not_float_dtype(args.dtype, "fill");
  }
}

inline void cast(const CastArgs& args, cudaStream_t stream, const ElementwiseLaunch& geometry) {
  dispatch_device_dtype(args.src_dtype, [&]<typename TIn>() {
    dispatch_device_dtype(args.dst_dtype, [&]<typename TOut>() {
      launch_map1(args.n, CastOp<TOut, TIn>{}, static_cast<TOut*>(args.dst),
                  static_cast<const TIn*>(args.src), stream, geometry);
    });
  });
}

// With the default geometry.
void fill(const FillArgs& args, cudaStream_t stream) {
  fill(args, stream, ElementwiseLaunch{});
}
void cast(const CastArgs& args, cudaStream_t stream) {
  cast(args, stream, ElementwiseLaunch{});
}

}  // namespace engine::cuda
