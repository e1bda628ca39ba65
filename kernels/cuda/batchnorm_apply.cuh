// The element-wise phases of batchnorm: normalize + affine (training, from the batch
// statistics; evaluation, from the running statistics), with an optional fused residual add
// and ReLU, and the backward element-wise pass. Each thread loads its channels' parameters
// once and then streams rows (see channel_tile.cuh).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/args/batchnorm.h"
#include "kernels/cuda/channel_tile.cuh"
#include "kernels/cuda/device_types.cuh"

namespace engine::cuda {

// y = act((x - mean) * invstd * weight + bias [+ residual]). kEval: `spread` holds the
// running variance and invstd = 1 / sqrt(var + eps); else it holds invstd. Subtracting the
// mean before scaling keeps full precision when |mean| >> std.
template <typename T, int kVec, bool kEval>
__global__ void batchnorm_apply_kernel(const T* x, const float* mean, const float* spread,
                                       float eps, const float* weight, const float* bias,
                                       const T* residual, bool relu, T* y, int64_t rows,
                                       int64_t channels) {
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (c0 >= channels) return;
  float center[kVec], scale[kVec], shift[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int64_t c = c0 + k;
    const float invstd = kEval ? 1.f / sqrtf(spread[c] + eps) : spread[c];
    center[k] = mean[c];
    scale[k] = invstd * (weight ? weight[c] : 1.f);
    shift[k] = bias ? bias[c] : 0.f;
  }
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<int64_t>(gridDim.y) * blockDim.y) {
    const int64_t at = r * channels + c0;
    float v[kVec];
    load_channels<kVec>(x + at, v);
    float add[kVec] = {};
    if (residual) load_channels<kVec>(residual + at, add);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      float out = (v[k] - center[k]) * scale[k] + shift[k] + add[k];
      if (relu) out = out < 0.f ? 0.f : out;
      v[k] = out;
    }
    store_channels<kVec>(y + at, v);
  }
}

// dx = weight * invstd * (dy - sum_dy / n - xhat * sum_dy_xhat / n).
template <typename T, int kVec>
__global__ void batchnorm_backward_elementwise_kernel(const T* dy, const T* x,
                                                      const float* batch_stats, const float* weight,
                                                      const float* grad_sums, T* dx, int64_t rows,
                                                      int64_t channels) {
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (c0 >= channels) return;
  const float count = batch_stats[2 * channels];
  float mean[kVec], invstd[kVec], scale[kVec], mean_dy[kVec], mean_dy_xhat[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int64_t c = c0 + k;
    mean[k] = batch_stats[c];
    invstd[k] = batch_stats[channels + c];
    scale[k] = invstd[k] * (weight ? weight[c] : 1.f);
    mean_dy[k] = grad_sums[c] / count;
    mean_dy_xhat[k] = grad_sums[channels + c] / count;
  }
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<int64_t>(gridDim.y) * blockDim.y) {
    const int64_t at = r * channels + c0;
    float g[kVec], v[kVec];
    load_channels<kVec>(dy + at, g);
    load_channels<kVec>(x + at, v);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const float xhat = (v[k] - mean[k]) * invstd[k];
      g[k] = scale[k] * (g[k] - mean_dy[k] - xhat * mean_dy_xhat[k]);
    }
    store_channels<kVec>(dx + at, g);
  }
}

// ---------------------------------------------------------------------------------------
// Launchers

// batchnorm_apply_kernel for the fields normalize's and eval_forward's arguments share (x,
// weight, bias, residual, relu, y, rows, channels): the training normalize (kEval false:
// `spread` is the batch's invstd) or the evaluation forward (kEval: the running variance).
template <bool kEval, typename Args>
void batchnorm_apply_launch(const Args& args, const float* mean, const float* spread, float eps,
                            cudaStream_t stream, const ChannelTileLaunch& shape) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* x = static_cast<const T*>(args.x);
    const T* residual = static_cast<const T*>(args.residual);
    T* y = static_cast<T*>(args.y);
    const int64_t channels = args.channels;
    dispatch_channel_vector<T>(channel_vector_width<T>(channels, x, residual, y), [&]<int kVec>() {
      const ChannelTileGrid layout = channel_tile_grid(args.rows, channels / kVec, shape);
      launch(batchnorm_apply_kernel<T, kVec, kEval>, layout.grid, layout.block, 0, stream, x, mean,
             spread, eps, args.weight, args.bias, residual, args.relu, y, args.rows, channels);
    });
  });
}

// The element-wise entry points (kernels/cuda/batchnorm.h) with their launch geometry: the
// SIMT tests force grids through it.
inline void batchnorm_normalize(const BatchNormNormalizeArgs& args, cudaStream_t stream,
                                const ChannelTileLaunch& shape) {
  batchnorm_apply_launch<false>(args, args.batch_stats, args.batch_stats + args.channels, 0.f,
                                stream, shape);
}

inline void batchnorm_eval_forward(const BatchNormEvalForwardArgs& args, cudaStream_t stream,
                                   const ChannelTileLaunch& shape) {
  batchnorm_apply_launch<true>(args, args.running_mean, args.running_var, args.eps, stream, shape);
}

inline void batchnorm_backward_elementwise(const BatchNormBackwardElementwiseArgs& args,
                                           cudaStream_t stream, const ChannelTileLaunch& shape) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* dy = static_cast<const T*>(args.dy);
    const T* x = static_cast<const T*>(args.x);
    T* dx = static_cast<T*>(args.dx);
    const int64_t channels = args.channels;
    dispatch_channel_vector<T>(channel_vector_width<T>(channels, dy, x, dx), [&]<int kVec>() {
      const ChannelTileGrid layout = channel_tile_grid(args.rows, channels / kVec, shape);
      launch(batchnorm_backward_elementwise_kernel<T, kVec>, layout.grid, layout.block, 0, stream,
             dy, x, args.batch_stats, args.weight, args.grad_sums, dx, args.rows, channels);
    });
  });
}

}  // namespace engine::cuda
