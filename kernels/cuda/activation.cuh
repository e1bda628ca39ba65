// ReLU forward/backward, the fused residual add + ReLU and the plain add, as element-wise maps.
// Math in fp32, one rounding to the storage type; x < 0 ? 0 : x keeps NaN (as PyTorch).
#pragma once

#include "kernels/cuda/activation.h"
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

// ---------------------------------------------------------------------------------------
// Launchers

template <typename T>
void relu_forward_launch(const T* x, T* y, int64_t n, cudaStream_t stream,
                         ElementwiseLaunch shape = {}) {
  launch_map1(n, ReluOp<T>{}, y, x, stream, shape);
}

template <typename T>
void relu_backward_launch(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream,
                          ElementwiseLaunch shape = {}) {
  launch_map2(n, ReluBackwardOp<T>{}, dx, y, dy, stream, shape);
}

template <typename T>
void add_relu_forward_launch(const T* a, const T* b, T* y, int64_t n, cudaStream_t stream,
                             ElementwiseLaunch shape = {}) {
  launch_map2(n, AddOp<T, true>{}, y, a, b, stream, shape);
}

template <typename T>
void add_launch(const T* a, const T* b, T* y, int64_t n, cudaStream_t stream,
                ElementwiseLaunch shape = {}) {
  launch_map2(n, AddOp<T, false>{}, y, a, b, stream, shape);
}

// ---------------------------------------------------------------------------------------
// Entry points (declared in activation.h)

void relu_forward(DType dtype, const void* x, void* y, int64_t n, cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    relu_forward_launch(static_cast<const T*>(x), static_cast<T*>(y), n, stream);
  });
}

void relu_backward(DType dtype, const void* y, const void* dy, void* dx, int64_t n,
                   cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    relu_backward_launch(static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx),
                         n, stream);
  });
}

void add_relu_forward(DType dtype, const void* a, const void* b, void* y, int64_t n,
                      cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    add_relu_forward_launch(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y),
                            n, stream);
  });
}

void add(DType dtype, const void* a, const void* b, void* y, int64_t n, cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    add_launch(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), n, stream);
  });
}

}  // namespace engine::cuda
