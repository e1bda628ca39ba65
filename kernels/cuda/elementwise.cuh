// Element-wise map kernels of arity 0, 1 and 2, shared by fill, cast and the activations.
// Each thread moves 16 bytes per step (float4 / 8 x bf16) when every pointer is aligned for
// that, in a grid-stride loop; the scalar variant handles unaligned views, and the last
// n % kVec elements are done one by one.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch.h"

namespace engine::cuda {

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// The grid of an element-wise launch (its geometry). max_blocks caps the grid (the loop strides
// over the rest); tests lower it to exercise the stride with small inputs.
struct ElementwiseLaunch {
  int threads = 256;
  int max_blocks = 2048;
};

template <int kVec, typename Op, typename TOut>
__global__ void map0_kernel(int64_t n, Op op, TOut* y) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t groups = n / kVec;
  for (int64_t g = first; g < groups; g += stride) {
    Pack<TOut, kVec> out;
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      out.v[k] = op();
    reinterpret_cast<Pack<TOut, kVec>*>(y)[g] = out;
  }
  for (int64_t i = groups * kVec + first; i < n; i += stride)
    y[i] = op();
}

template <int kVec, typename Op, typename TOut, typename TIn>
__global__ void map1_kernel(int64_t n, Op op, TOut* y, const TIn* x) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t groups = n / kVec;
  for (int64_t g = first; g < groups; g += stride) {
    const Pack<TIn, kVec> in = reinterpret_cast<const Pack<TIn, kVec>*>(x)[g];
    Pack<TOut, kVec> out;
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      out.v[k] = op(in.v[k]);
    reinterpret_cast<Pack<TOut, kVec>*>(y)[g] = out;
  }
  for (int64_t i = groups * kVec + first; i < n; i += stride)
    y[i] = op(x[i]);
}

template <int kVec, typename Op, typename TOut, typename TA, typename TB>
__global__ void map2_kernel(int64_t n, Op op, TOut* y, const TA* a, const TB* b) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t groups = n / kVec;
  for (int64_t g = first; g < groups; g += stride) {
    const Pack<TA, kVec> in_a = reinterpret_cast<const Pack<TA, kVec>*>(a)[g];
    const Pack<TB, kVec> in_b = reinterpret_cast<const Pack<TB, kVec>*>(b)[g];
    Pack<TOut, kVec> out;
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      out.v[k] = op(in_a.v[k], in_b.v[k]);
    reinterpret_cast<Pack<TOut, kVec>*>(y)[g] = out;
  }
  for (int64_t i = groups * kVec + first; i < n; i += stride)
    y[i] = op(a[i], b[i]);
}

// ---------------------------------------------------------------------------------------
// Launchers

// Elements per 16-byte step for the widest of the types.
template <typename... T>
constexpr int vector_width() {
  return static_cast<int>(16 / std::max({sizeof(T)...}));
}

template <int kVec, typename... T>
bool all_aligned(const T*... ptrs) {
  return ((reinterpret_cast<uintptr_t>(ptrs) % (sizeof(T) * kVec) == 0) && ...);
}

inline dim3 elementwise_grid(int64_t work_items, const ElementwiseLaunch& geometry) {
  const int64_t blocks =
      (std::max<int64_t>(work_items, 1) + geometry.threads - 1) / geometry.threads;
  return dim3(static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, geometry.max_blocks)));
}

// y[i] = op() for i < n.
template <typename Op, typename TOut>
void launch_map0(int64_t n, Op op, TOut* y, cudaStream_t stream, ElementwiseLaunch geometry = {}) {
  if (n == 0) return;
  constexpr int kVec = vector_width<TOut>();
  if (all_aligned<kVec>(y)) {
    launch(map0_kernel<kVec, Op, TOut>, elementwise_grid(n / kVec, geometry),
           dim3(geometry.threads), 0, stream, n, op, y);
  } else {
    launch(map0_kernel<1, Op, TOut>, elementwise_grid(n, geometry), dim3(geometry.threads), 0,
           stream, n, op, y);
  }
}

// y[i] = op(x[i]) for i < n; y may alias x.
template <typename Op, typename TOut, typename TIn>
void launch_map1(int64_t n, Op op, TOut* y, const TIn* x, cudaStream_t stream,
                 ElementwiseLaunch geometry = {}) {
  if (n == 0) return;
  constexpr int kVec = vector_width<TOut, TIn>();
  if (all_aligned<kVec>(y, x)) {
    launch(map1_kernel<kVec, Op, TOut, TIn>, elementwise_grid(n / kVec, geometry),
           dim3(geometry.threads), 0, stream, n, op, y, x);
  } else {
    launch(map1_kernel<1, Op, TOut, TIn>, elementwise_grid(n, geometry), dim3(geometry.threads), 0,
           stream, n, op, y, x);
  }
}

// y[i] = op(a[i], b[i]) for i < n; y may alias a or b.
template <typename Op, typename TOut, typename TA, typename TB>
void launch_map2(int64_t n, Op op, TOut* y, const TA* a, const TB* b, cudaStream_t stream,
                 ElementwiseLaunch geometry = {}) {
  if (n == 0) return;
  constexpr int kVec = vector_width<TOut, TA, TB>();
  if (all_aligned<kVec>(y, a, b)) {
    launch(map2_kernel<kVec, Op, TOut, TA, TB>, elementwise_grid(n / kVec, geometry),
           dim3(geometry.threads), 0, stream, n, op, y, a, b);
  } else {
    launch(map2_kernel<1, Op, TOut, TA, TB>, elementwise_grid(n, geometry), dim3(geometry.threads),
           0, stream, n, op, y, a, b);
  }
}

}  // namespace engine::cuda
