// The optimizer kernels. SGD and AdamW: one fused pass over params, grads and the state
// (16-byte vectors when all are aligned for SGD), in a grid-stride loop. Gradient clipping and
// LARS: a sum of squares per parameter tensor in two launches (blocks' partials, then their
// sum per tensor in a fixed order), then one element-wise pass that reads the sums on the
// device, so no step waits for the host.
#pragma once

#include <cstdint>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/optim.h"
#include "kernels/optim_scalars.h"

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
                                int64_t n, SgdOptions h, bool first_step, const float* lr) {
  h.lr = step_rate(h.lr, lr);
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
           args.params, args.grads, buffer, n, args.options, args.first_step, args.lr);
  } else {
    launch(sgd_step_kernel<1>, elementwise_grid(n, geometry), dim3(geometry.threads), 0, stream,
           args.params, args.grads, buffer, n, args.options, args.first_step, args.lr);
  }
}

void sgd_step(const SgdStepArgs& args, cudaStream_t stream) {
  sgd_step(args, stream, ElementwiseLaunch{});
}

// ---------------------------------------------------------------------------------------
// AdamW

// torch.optim.AdamW for one element (see kernels/cpu/optim.cpp for PyTorch's op order).
__device__ __forceinline__ void adamw_update(float& param, float grad, float& m, float& v,
                                             const AdamWScalars& s) {
  const float g = grad * s.grad_scale;
  const float p = param * s.decay;
  m = m * s.beta1 + s.one_minus_beta1 * g;
  v = v * s.beta2 + s.one_minus_beta2 * g * g;
  const float denom = sqrtf(v) / s.bias_correction2_sqrt + s.eps;
  param = p + s.neg_step_size * m / denom;
}

__global__ void adamw_step_kernel(float* params, const float* grads, float* exp_avg,
                                  float* exp_avg_sq, int64_t n, AdamWScalars by_value,
                                  const float* step_scalars, float weight_decay) {
  const AdamWScalars s = adamw_step_scalars(by_value, step_scalars, weight_decay);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    float p = params[i], m = exp_avg[i], v = exp_avg_sq[i];
    adamw_update(p, grads[i], m, v, s);
    params[i] = p;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
  }
}

inline void adamw_step(const AdamWStepArgs& args, cudaStream_t stream,
                       const ElementwiseLaunch& geometry) {
  if (args.n == 0) return;
  launch(adamw_step_kernel, elementwise_grid(args.n, geometry), dim3(geometry.threads), 0, stream,
         args.params, args.grads, args.exp_avg, args.exp_avg_sq, args.n,
         adamw_scalars(args.options, args.step), args.step_scalars, args.options.weight_decay);
}

void adamw_step(const AdamWStepArgs& args, cudaStream_t stream) {
  adamw_step(args, stream, ElementwiseLaunch{});
}

// ---------------------------------------------------------------------------------------
// Sums of squares per segment

constexpr int kSumSquaresThreads = 256;

// Block (k, s) sums the squares of share k of segment s (the CPU twin's share) in double:
// f32 accumulation over a 2.4M-element tensor would lose about log2(n) bits to the running
// sum's rounding, and the double adds cost nothing next to the loads. A fixed tree combines
// the block's threads.
__global__ void sum_squares_partials_kernel(SumSquaresArgs a) {
  __shared__ double sums[2][kSumSquaresThreads];
  const int64_t s = blockIdx.y, k = blockIdx.x, shares = a.blocks_per_segment;
  const int64_t begin = a.segments[s * kSegmentFields];
  const int64_t length = a.segments[s * kSegmentFields + 1] - begin;
  const int64_t to = begin + length * (k + 1) / shares;
  double sum_a = 0, sum_b = 0;
  for (int64_t i = begin + length * k / shares + threadIdx.x; i < to; i += blockDim.x) {
    const double x = a.a[i];
    sum_a += x * x;
    if (a.b != nullptr) {
      const double y = a.b[i];
      sum_b += y * y;
    }
  }
  sums[0][threadIdx.x] = sum_a;
  sums[1][threadIdx.x] = sum_b;
  __syncthreads();
  for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      sums[0][threadIdx.x] += sums[0][threadIdx.x + width];
      sums[1][threadIdx.x] += sums[1][threadIdx.x + width];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const int inputs = a.b != nullptr ? 2 : 1;
    const int64_t at = (s * shares + k) * inputs;
    a.partials[at] = sums[0][0];
    if (inputs == 2) a.partials[at + 1] = sums[1][0];
  }
}

// One thread per (segment, input): the partials in order k = 0, 1, ..., as the CPU twin.
__global__ void sum_squares_finish_kernel(SumSquaresArgs a) {
  const int inputs = a.b != nullptr ? 2 : 1;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (item >= static_cast<int64_t>(a.segment_count) * inputs) return;
  const int64_t s = item / inputs, input = item % inputs;
  double sum = 0;
  for (int64_t k = 0; k < a.blocks_per_segment; ++k)
    sum += a.partials[(s * a.blocks_per_segment + k) * inputs + input];
  a.sums[item] = sum;
}

// threads: a power of two up to kSumSquaresThreads (the tree halves it; the shared sums hold
// that many); the SIMT tests pass 32.
inline void sum_squares(const SumSquaresArgs& args, cudaStream_t stream, int threads) {
  if (args.segment_count == 0) return;
  launch(sum_squares_partials_kernel,
         dim3(static_cast<unsigned>(args.blocks_per_segment),
              static_cast<unsigned>(args.segment_count)),
         dim3(threads), 0, stream, args);
  const int items = args.segment_count * (args.b != nullptr ? 2 : 1);
  launch(sum_squares_finish_kernel, dim3(static_cast<unsigned>((items + 127) / 128)), dim3(128), 0,
         stream, args);
}

void sum_squares(const SumSquaresArgs& args, cudaStream_t stream) {
  sum_squares(args, stream, kSumSquaresThreads);
}

// ---------------------------------------------------------------------------------------
// Gradient clipping

__global__ void clip_grad_kernel(float* grads, int64_t n, const double* sum_squares,
                                 float max_norm) {
  const float coefficient = clip_coefficient(*sum_squares, max_norm);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    grads[i] *= coefficient;
}

inline void clip_grad(const ClipGradArgs& args, cudaStream_t stream,
                      const ElementwiseLaunch& geometry) {
  if (args.n == 0) return;
  launch(clip_grad_kernel, elementwise_grid(args.n, geometry), dim3(geometry.threads), 0, stream,
         args.grads, args.n, args.sum_squares, args.max_norm);
}

void clip_grad(const ClipGradArgs& args, cudaStream_t stream) {
  clip_grad(args, stream, ElementwiseLaunch{});
}

// ---------------------------------------------------------------------------------------
// LARS

// blockIdx.y is the parameter tensor: every thread of the block derives the same rate from
// the tensor's sums, then the blocks along x stride over its elements.
__global__ void lars_step_kernel(LarsStepArgs a) {
  const int64_t s = blockIdx.y;
  const int32_t* segment = a.segments + s * kSegmentFields;
  LarsOptions o = a.options;
  o.lr = step_rate(o.lr, a.lr);
  const LarsScalars l = lars_scalars(o, segment[2], a.sum_squares + 2 * s);
  const float momentum = a.options.momentum, grad_scale = a.options.grad_scale;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = segment[0] + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < segment[1]; i += stride) {
    const float g = a.grads[i] * grad_scale + l.weight_decay * a.params[i];
    const float v = momentum * a.momentum_buffer[i] + l.scaled_lr * g;
    a.momentum_buffer[i] = v;
    a.params[i] -= v;
  }
}

// blocks_per_segment blocks along x for every tensor (the largest tensors set the need; the
// small ones' extra blocks exit at once).
inline void lars_step(const LarsStepArgs& args, cudaStream_t stream, int blocks_per_segment,
                      int threads) {
  if (args.segment_count == 0) return;
  launch(lars_step_kernel,
         dim3(static_cast<unsigned>(blocks_per_segment), static_cast<unsigned>(args.segment_count)),
         dim3(threads), 0, stream, args);
}

void lars_step(const LarsStepArgs& args, cudaStream_t stream) {
  lars_step(args, stream, 16, 256);
}

}  // namespace engine::cuda
