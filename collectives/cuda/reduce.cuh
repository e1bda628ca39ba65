// The collectives' combining step on the GPU: dst = op(a, b) for sum/avg/max/min, f32 and
// bf16 with fp32 math and one rounding, f64 in fp64, as an element-wise map
// (kernels/cuda/elementwise.cuh: 16-byte vector path, scalar path for unaligned views, grid-stride
// loop). The expressions are the CPU twin's (collectives/cpu/reduce.cpp), so both give the same
// bits.
#pragma once

#include "collectives/cuda/reduce.h"
#include "kernels/cuda/elementwise.cuh"

namespace engine::cuda {

// V is the type a step computes in: float for f32 and bf16, double for f64.
struct SumCombine {
  template <typename V>
  __device__ __forceinline__ static V apply(V a, V b) {
    return a + b;
  }
};
// NaN wins, as in PyTorch's max/min.
struct MaxCombine {
  template <typename V>
  __device__ __forceinline__ static V apply(V a, V b) {
    return (a > b || a != a) ? a : b;
  }
};
struct MinCombine {
  template <typename V>
  __device__ __forceinline__ static V apply(V a, V b) {
    return (a < b || a != a) ? a : b;
  }
};

// How an element type is loaded into and stored from the type a step computes in.
template <typename T>
struct CombineElement {
  using Math = float;
  __device__ __forceinline__ static float load(T value) { return to_f32(value); }
  __device__ __forceinline__ static T store(float value) { return from_f32<T>(value); }
};
template <>
struct CombineElement<double> {
  using Math = double;
  __device__ __forceinline__ static double load(double value) { return value; }
  __device__ __forceinline__ static double store(double value) { return value; }
};

template <typename T, typename Combine, bool kDivide>
struct ReduceFunctor {
  typename CombineElement<T>::Math divisor;
  __device__ __forceinline__ T operator()(T a, T b) const {
    auto value = Combine::apply(CombineElement<T>::load(a), CombineElement<T>::load(b));
    if constexpr (kDivide) value = value / divisor;
    return CombineElement<T>::store(value);
  }
};

// ---------------------------------------------------------------------------------------
// Launchers

template <typename T, typename Combine>
void reduce_combine_launch(T* dst, const T* a, const T* b, int64_t n, int divisor,
                           cudaStream_t stream, ElementwiseLaunch shape) {
  using Math = typename CombineElement<T>::Math;
  if (divisor == 1) {
    launch_map2(n, ReduceFunctor<T, Combine, false>{Math{1}}, dst, a, b, stream, shape);
  } else {
    launch_map2(n, ReduceFunctor<T, Combine, true>{static_cast<Math>(divisor)}, dst, a, b, stream,
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
  if (reduction.dtype == DType::f64) {
    reduce_launch(reduction, static_cast<double*>(dst), static_cast<const double*>(a),
                  static_cast<const double*>(b), n, stream);
    return;
  }
  dispatch_device_dtype(reduction.dtype, [&]<typename T>() {
    reduce_launch(reduction, static_cast<T*>(dst), static_cast<const T*>(a),
                  static_cast<const T*>(b), n, stream);
  });
}

}  // namespace engine::cuda
