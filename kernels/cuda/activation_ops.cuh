// The activation family's element-wise operations (ReLU forward/backward, add, add + ReLU),
// apart from activation.cuh's entry points, which one translation unit defines: so that other
// kernels' files (conv_backward_bn.cuh's fallback add) launch the same maps with the same bits.
// Math in fp32, one rounding to the storage type; x < 0 ? 0 : x keeps NaN (as PyTorch).
#pragma once

#include "kernels/cuda/elementwise.cuh"

namespace engine::cuda {

template <typename T>
struct ReluOp {
  __device__ __forceinline__ T operator()(T x) const {
    const float v = to_f32(x);
    return from_f32<T>(v < 0.f ? 0.f : v);
  }
};

// dx = dy where the forward output y > 0.
template <typename T>
struct ReluBackwardOp {
  __device__ __forceinline__ T operator()(T y, T dy) const {
    return to_f32(y) > 0.f ? dy : from_f32<T>(0.f);
  }
};

// a + b, then max(., 0) when Relu.
template <typename T, bool Relu>
struct AddOp {
  __device__ __forceinline__ T operator()(T a, T b) const {
    const float v = to_f32(a) + to_f32(b);
    return from_f32<T>(Relu && v < 0.f ? 0.f : v);
  }
};

}  // namespace engine::cuda
