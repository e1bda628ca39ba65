// The collectives' combining step on the GPU: dst = op(a, b) for sum/avg/max/min, f32 and
// bf16 with fp32 math and one rounding, as an element-wise map (kernels/cuda/elementwise.cuh:
// 16-byte vector path, scalar path for unaligned views, grid-stride loop). The expressions
// are the CPU twin's (collectives/cpu/reduce.cpp), so both give the same bits.
#pragma once

#include "collectives/cuda/reduce.h"
#include "kernels/cuda/elementwise.cuh"

namespace engine::cuda {

struct SumCombine {
  __device__ __forceinline__ static float apply(float a, float b) { return a + b; }
};
// NaN wins, as in PyTorch's max/min.
struct MaxCombine {
  __device__ __forceinline__ static float apply(float a, float b) {
    return (a > b || a != a) ? a : b;
  }
};
struct MinCombine {
  __device__ __forceinline__ static float apply(float a, float b) {
    return (a < b || a != a) ? a : b;
  }
};

template <typename T, typename Combine, bool kDivide>
struct ReduceFunctor {
  float divisor;
  __device__ __forceinline__ T operator()(T a, T b) const {
    float value = Combine::apply(to_f32(a), to_f32(b));
    if constexpr (kDivide) value = value / divisor;
    return from_f32<T>(value);
  }
};

// ---------------------------------------------------------------------------------------
// Launchers

template <typename T, typename Combine>
void reduce_combine_launch(T* dst, const T* a, const T* b, int64_t n, int divisor,
                           cudaStream_t stream, ElementwiseLaunch shape) {
  if (divisor == 1) {
    launch_map2(n, ReduceFunctor<T, Combine, false>{1.f}, dst, a, b, stream, shape);
  } else {
    launch_map2(n, ReduceFunctor<T, Combine, true>{static_cast<float>(divisor)}, dst, a, b, stream,
                shape);
  }
}

template <typename T>
void reduce_launch(const Reduction& reduction, T* dst, const T* a, const T* b, int64_t n,
                   cudaStream_t stream, ElementwiseLaunch shape = {}) {
  switch (reduction.op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      reduce_combine_launch<T, SumCombine>(dst, a, b, n, reduction.divisor, stream, shape);
      break;
    case ReduceOp::max:
      reduce_combine_launch<T, MaxCombine>(dst, a, b, n, reduction.divisor, stream, shape);
      break;
    case ReduceOp::min:
      reduce_combine_launch<T, MinCombine>(dst, a, b, n, reduction.divisor, stream, shape);
      break;
  }
}

// ---------------------------------------------------------------------------------------
// Entry point (declared in reduce.h)

void reduce(const Reduction& reduction, void* dst, const void* a, const void* b, int64_t n,
            cudaStream_t stream) {
  dispatch_device_dtype(reduction.dtype, [&]<typename T>() {
    reduce_launch(reduction, static_cast<T*>(dst), static_cast<const T*>(a),
                  static_cast<const T*>(b), n, stream);
  });
}

}  // namespace engine::cuda
