// The fused SGD step: one pass over params, grads and the momentum buffer (16-byte vectors
// when all three are aligned), in a grid-stride loop.
#pragma once

#include <cstdint>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/optim.h"

namespace engine::cuda {

// torch.optim.SGD for one element (see kernels/ops/optim.h).
__device__ __forceinline__ void sgd_update(float& param, float grad, float* buffer,
                                           const SgdOptions& h, bool first_step) {
  float g = grad * h.grad_scale;
  if (h.weight_decay != 0.f) g += h.weight_decay * param;
  if (h.momentum != 0.f) {
    const float buf = first_step ? g : h.momentum * *buffer + (1.f - h.dampening) * g;
    *buffer = buf;
    g = h.nesterov ? g + h.momentum * buf : buf;
  }
  param -= h.lr * g;
}

template <int kVec>
__global__ void sgd_step_kernel(float* params, const float* grads, float* momentum_buffer,
                                int64_t n, SgdOptions h, bool first_step) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t groups = n / kVec;
  for (int64_t g = first; g < groups; g += stride) {
    Pack<float, kVec> p = reinterpret_cast<const Pack<float, kVec>*>(params)[g];
    const Pack<float, kVec> d = reinterpret_cast<const Pack<float, kVec>*>(grads)[g];
    Pack<float, kVec> b = {};
    if (h.momentum != 0.f && !first_step) {
      b = reinterpret_cast<const Pack<float, kVec>*>(momentum_buffer)[g];
    }
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      sgd_update(p.v[k], d.v[k], &b.v[k], h, first_step);
    reinterpret_cast<Pack<float, kVec>*>(params)[g] = p;
    if (h.momentum != 0.f) reinterpret_cast<Pack<float, kVec>*>(momentum_buffer)[g] = b;
  }
  for (int64_t i = groups * kVec + first; i < n; i += stride) {
    float p = params[i];
    float b = h.momentum != 0.f && !first_step ? momentum_buffer[i] : 0.f;
    sgd_update(p, grads[i], &b, h, first_step);
    params[i] = p;
    if (h.momentum != 0.f) momentum_buffer[i] = b;
  }
}

// ---------------------------------------------------------------------------------------
// Launcher and entry point (declared in optim.h)

// momentum_buffer may be null when h.momentum == 0.
// The entry point (declared in optim.h) with its launch geometry: the SIMT tests force grids
// through it.
inline void sgd_step(const SgdStepArgs& args, cudaStream_t stream,
                     const ElementwiseLaunch& geometry) {
  const int64_t n = args.n;
  if (n == 0) return;
  float* buffer = args.momentum_buffer;
  const bool aligned =
      all_aligned<4>(args.params, args.grads) && (buffer == nullptr || all_aligned<4>(buffer));
  if (aligned) {
    launch(sgd_step_kernel<4>, elementwise_grid(n / 4, geometry), dim3(geometry.threads), 0, stream,
           args.params, args.grads, buffer, n, args.options, args.first_step);
  } else {
    launch(sgd_step_kernel<1>, elementwise_grid(n, geometry), dim3(geometry.threads), 0, stream,
           args.params, args.grads, buffer, n, args.options, args.first_step);
  }
}

void sgd_step(const SgdStepArgs& args, cudaStream_t stream) {
  sgd_step(args, stream, ElementwiseLaunch{});
}

}  // namespace engine::cuda
