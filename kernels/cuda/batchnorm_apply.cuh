// The element-wise phases of batchnorm: normalize + affine (training, from the batch
// statistics; evaluation, from the running statistics), with an optional fused residual add
// and ReLU, and the backward element-wise pass. Each thread loads its channels' parameters
// once and then streams rows (see channel_tile.cuh).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/args/batchnorm.h"
#include "kernels/cuda/batchnorm_reduce.cuh"
#include "kernels/cuda/channel_tile.cuh"
#include "kernels/cuda/device_types.cuh"

namespace engine::cuda {

// What batchnorm_apply_kernel takes, by value: the fields the training normalize and the
// evaluation forward share, typed, and the statistics they differ in: `spread` holds the
// batch's invstd (kEval false) or the running variance, invstd then being 1 / sqrt(var + eps).
template <typename T>
struct BatchNormApplyParams {
  const T* x = nullptr;
  const float* mean = nullptr;
  const float* spread = nullptr;
  float eps = 0.f;
  const float* weight = nullptr;  // or null (1)
  const float* bias = nullptr;    // or null (0)
  const T* residual = nullptr;    // or null
  bool relu = false;
  T* y = nullptr;
  int64_t rows = 0;
  int64_t channels = 0;
};

// y = act((x - mean) * invstd * weight + bias [+ residual]). Subtracting the mean before
// scaling keeps full precision when |mean| >> std.
template <typename T, int kVec, bool kEval>
__global__ void batchnorm_apply_kernel(BatchNormApplyParams<T> p) {
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (c0 >= p.channels) return;
  float center[kVec], scale[kVec], shift[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int64_t c = c0 + k;
    const float invstd = kEval ? 1.f / sqrtf(p.spread[c] + p.eps) : p.spread[c];
    center[k] = p.mean[c];
    scale[k] = invstd * (p.weight ? p.weight[c] : 1.f);
    shift[k] = p.bias ? p.bias[c] : 0.f;
  }
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < p.rows;
       r += static_cast<int64_t>(gridDim.y) * blockDim.y) {
    const int64_t at = r * p.channels + c0;
    float v[kVec];
    load_channels<kVec>(p.x + at, v);
    float add[kVec] = {};
    if (p.residual) load_channels<kVec>(p.residual + at, add);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      float out = (v[k] - center[k]) * scale[k] + shift[k] + add[k];
      if (p.relu) out = out < 0.f ? 0.f : out;
      v[k] = out;
    }
    store_channels<kVec>(p.y + at, v);
  }
}

// What batchnorm_backward_elementwise_kernel takes, by value: its entry point's arguments
// (BatchNormBackwardElementwiseArgs), typed.
template <typename T>
struct BatchNormBackwardElementwiseParams {
  const T* dy = nullptr;
  const T* relu_output = nullptr;     // or null: see load_gradient_through_relu
  const float* relu_scale = nullptr;  // or null: see gate_by_recomputed_relu
  const float* relu_shift = nullptr;
  const T* x = nullptr;
  const float* batch_stats = nullptr;
  const float* weight = nullptr;  // or null (1)
  const float* grad_sums = nullptr;
  T* dx = nullptr;
  int64_t rows = 0;
  int64_t channels = 0;
};

// dx = weight * invstd * (dy - sum_dy / n - xhat * sum_dy_xhat / n), dy through the fused
// ReLU when there is one (its mask read from relu_output or recomputed from x).
template <typename T, int kVec>
__global__ void batchnorm_backward_elementwise_kernel(BatchNormBackwardElementwiseParams<T> p) {
  const int64_t channels = p.channels;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (c0 >= channels) return;
  const float count = p.batch_stats[2 * channels];
  float mean[kVec], invstd[kVec], scale[kVec], mean_dy[kVec], mean_dy_xhat[kVec];
  float relu_scale[kVec], relu_shift[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int64_t c = c0 + k;
    mean[k] = p.batch_stats[c];
    invstd[k] = p.batch_stats[channels + c];
    scale[k] = invstd[k] * (p.weight ? p.weight[c] : 1.f);
    mean_dy[k] = p.grad_sums[c] / count;
    mean_dy_xhat[k] = p.grad_sums[channels + c] / count;
  }
  load_relu_coefficients<kVec>(p.relu_scale, p.relu_shift, c0, relu_scale, relu_shift);
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < p.rows;
       r += static_cast<int64_t>(gridDim.y) * blockDim.y) {
    const int64_t at = r * channels + c0;
    float g[kVec], v[kVec];
    load_gradient_through_relu<kVec>(p.dy, p.relu_output, at, g);
    load_channels<kVec>(p.x + at, v);
    if (p.relu_scale) gate_by_recomputed_relu<kVec>(v, relu_scale, relu_shift, g);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const float xhat = (v[k] - mean[k]) * invstd[k];
      g[k] = scale[k] * (g[k] - mean_dy[k] - xhat * mean_dy_xhat[k]);
    }
    store_channels<kVec>(p.dx + at, g);
  }
}

// ---------------------------------------------------------------------------------------
// Launchers

// batchnorm_apply_kernel for the fields normalize's and eval_forward's arguments share (x,
// weight, bias, residual, relu, y, rows, channels): the training normalize (kEval false:
// `spread` is the batch's invstd) or the evaluation forward (kEval: the running variance).
template <bool kEval, typename Args>
void batchnorm_apply_launch(const Args& args, const float* mean, const float* spread, float eps,
                            cudaStream_t stream, const ChannelTileLaunch& geometry) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* x = static_cast<const T*>(args.x);
    const T* residual = static_cast<const T*>(args.residual);
    T* y = static_cast<T*>(args.y);
    const int64_t channels = args.channels;
    dispatch_channel_vector<T>(channel_vector_width<T>(channels, x, residual, y), [&]<int kVec>() {
      const ChannelTileGrid layout = channel_tile_grid(args.rows, channels / kVec, geometry);
      launch(batchnorm_apply_kernel<T, kVec, kEval>, layout.grid, layout.block, 0, stream,
             BatchNormApplyParams<T>{.x = x,
                                     .mean = mean,
                                     .spread = spread,
                                     .eps = eps,
                                     .weight = args.weight,
                                     .bias = args.bias,
                                     .residual = residual,
                                     .relu = args.relu,
                                     .y = y,
                                     .rows = args.rows,
                                     .channels = channels});
    });
  });
}

// The element-wise entry points (kernels/cuda/batchnorm.h) with their launch geometry: the
// SIMT tests force grids through it.
inline void batchnorm_normalize(const BatchNormNormalizeArgs& args, cudaStream_t stream,
                                const ChannelTileLaunch& geometry) {
  batchnorm_apply_launch<false>(args, args.batch_stats, args.batch_stats + args.channels, 0.f,
                                stream, geometry);
}

inline void batchnorm_eval_forward(const BatchNormEvalForwardArgs& args, cudaStream_t stream,
                                   const ChannelTileLaunch& geometry) {
  batchnorm_apply_launch<true>(args, args.running_mean, args.running_var, args.eps, stream,
                               geometry);
}

inline void batchnorm_backward_elementwise(const BatchNormBackwardElementwiseArgs& args,
                                           cudaStream_t stream, const ChannelTileLaunch& geometry) {
  ENGINE_REQUIRE(args.relu_output == nullptr || args.relu_scale == nullptr,
                 "batchnorm_backward_elementwise: relu_output and relu_scale exclude each other");
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* dy = static_cast<const T*>(args.dy);
    const T* relu_output = static_cast<const T*>(args.relu_output);
    const T* x = static_cast<const T*>(args.x);
    T* dx = static_cast<T*>(args.dx);
    const int64_t channels = args.channels;
    const int width = channel_vector_width<T>(channels, dy, relu_output, x, dx);
    dispatch_channel_vector<T>(width, [&]<int kVec>() {
      const ChannelTileGrid layout = channel_tile_grid(args.rows, channels / kVec, geometry);
      launch(batchnorm_backward_elementwise_kernel<T, kVec>, layout.grid, layout.block, 0, stream,
             BatchNormBackwardElementwiseParams<T>{.dy = dy,
                                                   .relu_output = relu_output,
                                                   .relu_scale = args.relu_scale,
                                                   .relu_shift = args.relu_shift,
                                                   .x = x,
                                                   .batch_stats = args.batch_stats,
                                                   .weight = args.weight,
                                                   .grad_sums = args.grad_sums,
                                                   .dx = dx,
                                                   .rows = args.rows,
                                                   .channels = channels});
    });
  });
}

}  // namespace engine::cuda
