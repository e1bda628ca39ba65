// The fused SGD step: one pass over params, grads and the momentum buffer (16-byte vectors
// when all three are aligned), in a grid-stride loop.
#pragma once

#include <cstdint>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/optim.h"

namespace engine::cuda {

struct SgdHyper {
  float lr, momentum, dampening, weight_decay, grad_scale;
  bool nesterov, first_step;
};

// torch.optim.SGD for one element (see kernels/ops/optim.h).
__device__ __forceinline__ void sgd_update(float& param, float grad, float* buffer,
                                           const SgdHyper& h) {
  float g = grad * h.grad_scale;
  if (h.weight_decay != 0.f) g += h.weight_decay * param;
  if (h.momentum != 0.f) {
    const float buf = h.first_step ? g : h.momentum * *buffer + (1.f - h.dampening) * g;
    *buffer = buf;
    g = h.nesterov ? g + h.momentum * buf : buf;
  }
  param -= h.lr * g;
}

template <int kVec>
__global__ void sgd_step_kernel(float* params, const float* grads, float* momentum_buffer,
                                int64_t n, SgdHyper h) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t groups = n / kVec;
  for (int64_t g = first; g < groups; g += stride) {
    Pack<float, kVec> p = reinterpret_cast<const Pack<float, kVec>*>(params)[g];
    const Pack<float, kVec> d = reinterpret_cast<const Pack<float, kVec>*>(grads)[g];
    Pack<float, kVec> b = {};
    if (h.momentum != 0.f && !h.first_step) {
      b = reinterpret_cast<const Pack<float, kVec>*>(momentum_buffer)[g];
    }
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      sgd_update(p.v[k], d.v[k], &b.v[k], h);
    reinterpret_cast<Pack<float, kVec>*>(params)[g] = p;
    if (h.momentum != 0.f) reinterpret_cast<Pack<float, kVec>*>(momentum_buffer)[g] = b;
  }
  for (int64_t i = groups * kVec + first; i < n; i += stride) {
    float p = params[i];
    float b = h.momentum != 0.f && !h.first_step ? momentum_buffer[i] : 0.f;
    sgd_update(p, grads[i], &b, h);
    params[i] = p;
    if (h.momentum != 0.f) momentum_buffer[i] = b;
  }
}

// ---------------------------------------------------------------------------------------
// Launcher and entry point (declared in optim.h)

// momentum_buffer may be null when h.momentum == 0.
inline void sgd_step_launch(float* params, const float* grads, float* momentum_buffer, int64_t n,
                            const SgdHyper& h, cudaStream_t stream, ElementwiseLaunch shape = {}) {
  if (n == 0) return;
  const bool aligned = all_aligned<4>(params, grads) &&
                       (momentum_buffer == nullptr || all_aligned<4>(momentum_buffer));
  if (aligned) {
    launch(sgd_step_kernel<4>, elementwise_grid(n / 4, shape), dim3(shape.threads), 0, stream,
           params, grads, momentum_buffer, n, h);
  } else {
    launch(sgd_step_kernel<1>, elementwise_grid(n, shape), dim3(shape.threads), 0, stream, params,
           grads, momentum_buffer, n, h);
  }
}

void sgd_step(float* params, const float* grads, float* momentum_buffer, int64_t n, float lr,
              float momentum, float dampening, float weight_decay, bool nesterov, float grad_scale,
              bool first_step, cudaStream_t stream) {
  const SgdHyper h{lr, momentum, dampening, weight_decay, grad_scale, nesterov, first_step};
  sgd_step_launch(params, grads, momentum_buffer, n, h, stream);
}

}  // namespace engine::cuda
