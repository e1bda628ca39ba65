// The reduction phases of batchnorm: per-channel statistics and the backward sums (their
// finalization is in batchnorm_sums.cuh). Each reduction is two kernels: the first writes one
// partial result per (channel, slice of rows) to a workspace, the second merges the partials of a
// channel in a fixed order. Results are deterministic and no atomics are involved.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/args/batchnorm.h"
#include "kernels/batchnorm_sums.h"
#include "kernels/cuda/channel_tile.cuh"
#include "kernels/cuda/device_types.cuh"
#include "kernels/error.h"

namespace engine::cuda {

// kVec gradients at a fused ReLU's output (dy at `at`), passed where that output y > 0 and 0
// elsewhere (relu_backward's rule); no ReLU (relu_output null): dy as it is.
template <int kVec, typename T>
__device__ __forceinline__ void load_gradient_through_relu(const T* dy, const T* relu_output,
                                                           int64_t at, float (&g)[kVec]) {
  load_channels<kVec>(dy + at, g);
  if (relu_output == nullptr) return;
  float y[kVec];
  load_channels<kVec>(relu_output + at, y);
#pragma unroll
  for (int k = 0; k < kVec; ++k)
    g[k] = y[k] > 0.f ? g[k] : 0.f;
}

// Chan et al.: merges the (count, mean, m2) of a second set into the first.
__device__ __forceinline__ void chan_merge(float& count, float& mean, float& m2, float count_b,
                                           float mean_b, float m2_b) {
  if (count_b == 0.f) return;
  const float total = count + count_b;
  const float delta = mean_b - mean;
  mean += delta * (count_b / total);
  m2 += m2_b + delta * delta * (count * (count_b / total));
  count = total;
}

// One partial (mean, m2) per channel over the rows slice blockIdx.y of gridDim.y. Sums of
// x - shift, with shift = the slice's first row: a value of the same channel, so within a few
// standard deviations of the mean, and s2 - s1^2/n does not cancel even when |mean| >> std.
// Dynamic shared memory: 2 * blockDim.x * blockDim.y * kVec floats.
template <typename T, int kVec>
__global__ void batchnorm_stats_partial_kernel(const T* x, int64_t rows, int64_t channels,
                                               float* part_mean, float* part_m2,
                                               float* part_count) {
  DYNAMIC_SHARED_MEMORY(float, shared);
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  const bool active = c0 < channels;
  const int64_t begin = rows * blockIdx.y / gridDim.y;
  const int64_t end = rows * (blockIdx.y + 1) / gridDim.y;
  float shift[kVec], sums[2][kVec];
  float(&s1)[kVec] = sums[0];
  float(&s2)[kVec] = sums[1];
#pragma unroll
  for (int k = 0; k < kVec; ++k)
    s1[k] = s2[k] = shift[k] = 0.f;
  if (active) {
    load_channels<kVec>(x + begin * channels + c0, shift);
    for (int64_t r = begin + threadIdx.y; r < end; r += blockDim.y) {
      float v[kVec];
      load_channels<kVec>(x + r * channels + c0, v);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const float d = v[k] - shift[k];
        s1[k] += d;
        s2[k] += d * d;
      }
    }
  }
  // Every row lane shares the shift, so the block's partial is the plain sum over lanes.
  sum_row_lanes(shared, sums);
  if (threadIdx.y != 0 || !active) return;
  const float n = static_cast<float>(end - begin);
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int64_t at = blockIdx.y * channels + c0 + k;
    part_mean[at] = shift[k] + s1[k] / n;
    part_m2[at] = fmaxf(s2[k] - s1[k] * (s1[k] / n), 0.f);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) part_count[blockIdx.y] = n;
}

// One channel's (count, mean, m2).
struct ChannelStats {
  float count, mean, m2;
};

// Merges the parts' statistics of one channel, part_at(0) .. part_at(parts - 1), in order.
// The means are merged as offsets from the first part's mean: each update of a running mean
// near 1e3 would round to an ulp of 1e3, and hundreds of them add up; offsets of the size of
// a standard deviation round far below that, and adding the reference back rounds once.
template <typename PartAt>
__device__ __forceinline__ ChannelStats merge_in_order(int64_t parts, PartAt part_at) {
  const float reference = part_at(0).mean;
  float count = 0.f, offset = 0.f, m2 = 0.f;
  for (int64_t p = 0; p < parts; ++p) {
    const ChannelStats part = part_at(p);
    chan_merge(count, offset, m2, part.count, part.mean - reference, part.m2);
  }
  return {count, reference + offset, m2};
}

// What batchnorm_stats_merge_kernel takes, by value: the workspace's partials [parts,
// channels] and counts [parts], and the outputs of BatchNormStatsArgs (sums and finalize as
// there: or null).
struct BatchNormStatsMergeParams {
  const float* part_mean = nullptr;
  const float* part_m2 = nullptr;
  const float* part_count = nullptr;
  int64_t parts = 0;
  int64_t channels = 0;
  float* stats = nullptr;
  double* sums = nullptr;
  BatchNormFinalizeSumsArgs finalize = {};
};

// stats = (mean[C], m2[C], count) merged from the row slices' partials in order; then, in the
// same thread, the fp64 sums (batchnorm_stats_to_sums) and the finalize
// (batchnorm_finalize_sums) when asked: the same helpers on the same values, so the same bits
// as those phases, without their launches.
__global__ void batchnorm_stats_merge_kernel(BatchNormStatsMergeParams p) {
  const int64_t channels = p.channels;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const ChannelStats merged = merge_in_order(p.parts, [&](int64_t part) {
      return ChannelStats{p.part_count[part], p.part_mean[part * channels + c],
                          p.part_m2[part * channels + c]};
    });
    p.stats[c] = merged.mean;
    p.stats[channels + c] = merged.m2;
    if (c == 0) p.stats[2 * channels] = merged.count;
    if (p.sums == nullptr) continue;
    const ChannelSums sums = batchnorm_channel_sums(merged.count, merged.mean, merged.m2);
    const double count = static_cast<double>(merged.count);
    p.sums[c] = sums.sum;
    p.sums[channels + c] = sums.sumsq;
    if (c == 0) p.sums[2 * channels] = count;
    if (p.finalize.batch_stats != nullptr) {
      batchnorm_finalize_channel(p.finalize, c, sums.sum, sums.sumsq, count);
    }
  }
}

// What batchnorm_backward_partial_kernel takes, by value: dy and x [rows, channels], the
// batch statistics, and the workspace's two partial arrays [slices, channels].
template <typename T>
struct BatchNormBackwardPartialParams {
  const T* dy = nullptr;
  const T* relu_output = nullptr;  // or null: see load_gradient_through_relu
  T* relu_grad = nullptr;          // or null: receives dy through the ReLU
  const T* x = nullptr;
  int64_t rows = 0;
  int64_t channels = 0;
  const float* batch_stats = nullptr;
  float* part_dy = nullptr;
  float* part_dy_xmu = nullptr;
};

// Partial (sum dy, sum dy * (x - mean)) per channel over the rows slice blockIdx.y.
// Dynamic shared memory: 2 * blockDim.x * blockDim.y * kVec floats.
template <typename T, int kVec>
__global__ void batchnorm_backward_partial_kernel(BatchNormBackwardPartialParams<T> p) {
  DYNAMIC_SHARED_MEMORY(float, shared);
  const int64_t rows = p.rows, channels = p.channels;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  const bool active = c0 < channels;
  const int64_t begin = rows * blockIdx.y / gridDim.y;
  const int64_t end = rows * (blockIdx.y + 1) / gridDim.y;
  float mean[kVec], sums[2][kVec];
  float(&s_dy)[kVec] = sums[0];
  float(&s_dy_xmu)[kVec] = sums[1];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    s_dy[k] = s_dy_xmu[k] = 0.f;
    mean[k] = active ? p.batch_stats[c0 + k] : 0.f;
  }
  if (active) {
    for (int64_t r = begin + threadIdx.y; r < end; r += blockDim.y) {
      float g[kVec], v[kVec];
      load_gradient_through_relu<kVec>(p.dy, p.relu_output, r * channels + c0, g);
      if (p.relu_grad) store_channels<kVec>(p.relu_grad + r * channels + c0, g);
      load_channels<kVec>(p.x + r * channels + c0, v);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        s_dy[k] += g[k];
        s_dy_xmu[k] += g[k] * (v[k] - mean[k]);
      }
    }
  }
  sum_row_lanes(shared, sums);
  if (threadIdx.y != 0 || !active) return;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    p.part_dy[blockIdx.y * channels + c0 + k] = s_dy[k];
    p.part_dy_xmu[blockIdx.y * channels + c0 + k] = s_dy_xmu[k];
  }
}

// What batchnorm_backward_merge_kernel takes, by value: the workspace's partials [parts,
// channels] and the outputs of BatchNormBackwardReduceArgs.
struct BatchNormBackwardMergeParams {
  const float* part_dy = nullptr;
  const float* part_dy_xmu = nullptr;
  int64_t parts = 0;
  int64_t channels = 0;
  const float* batch_stats = nullptr;
  float* grad_sums = nullptr;
  float* bias_grad = nullptr;    // or null
  float* weight_grad = nullptr;  // or null
  bool accumulate = false;
};

// grad_sums = (sum_dy[C], invstd * sum dy * (x - mean) [C]) summed over the partials in order,
// and the same two sums into the bias and weight gradients (overwritten or accumulated): what
// two copies or adds did after this kernel before.
__global__ void batchnorm_backward_merge_kernel(BatchNormBackwardMergeParams p) {
  const int64_t channels = p.channels;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float sum_dy = 0.f, sum_dy_xmu = 0.f;
    for (int64_t part = 0; part < p.parts; ++part) {
      sum_dy += p.part_dy[part * channels + c];
      sum_dy_xmu += p.part_dy_xmu[part * channels + c];
    }
    const float sum_dy_xhat = sum_dy_xmu * p.batch_stats[channels + c];
    p.grad_sums[c] = sum_dy;
    p.grad_sums[channels + c] = sum_dy_xhat;
    batchnorm_write_grad(p.bias_grad, c, sum_dy, p.accumulate);
    batchnorm_write_grad(p.weight_grad, c, sum_dy_xhat, p.accumulate);
  }
}

// ---------------------------------------------------------------------------------------
// Launchers

// Threads of the per-channel kernels (merges, and those of batchnorm_sums.cuh): one thread
// per channel.
constexpr int kChannelThreads = 256;

inline dim3 per_channel_grid(int64_t channels) {
  return dim3(static_cast<unsigned>(
      std::clamp<int64_t>((channels + kChannelThreads - 1) / kChannelThreads, 1, 1024)));
}

inline int64_t batchnorm_workspace_numel(int64_t rows, int64_t channels,
                                         const ChannelReduceLaunch& geometry) {
  return channel_reduce_partials(rows, geometry) * (2 * channels + 1);
}

// The partial kernels' block: one channel tile per block column, one slice per block row.
template <int kVec>
ChannelTileGrid channel_reduce_grid(int64_t rows, int64_t channels,
                                    const ChannelReduceLaunch& geometry, size_t* smem_bytes) {
  ChannelTileGrid layout = channel_tile_block(channels / kVec, geometry.threads);
  layout.grid.y = static_cast<unsigned>(channel_reduce_partials(rows, geometry));
  *smem_bytes = 2 * sizeof(float) * kVec * layout.block.x * layout.block.y;
  ENGINE_REQUIRE(*smem_bytes <= 48 * 1024,
                 "batchnorm: too many threads per block for the "
                 "shared-memory reduction (at most 48 KiB)");
  return layout;
}

// The reduction entry points (kernels/cuda/batchnorm.h) with their launch geometry: the SIMT
// tests force grids through it. workspace: batchnorm_workspace_numel(rows, channels, geometry).
inline void batchnorm_stats(const BatchNormStatsArgs& args, cudaStream_t stream,
                            const ChannelReduceLaunch& geometry) {
  const int64_t rows = args.rows, channels = args.channels;
  const int64_t parts = channel_reduce_partials(rows, geometry);
  float* part_mean = args.workspace;
  float* part_m2 = args.workspace + parts * channels;
  float* part_count = args.workspace + 2 * parts * channels;
  BatchNormFinalizeSumsArgs finalize = args.finalize;
  finalize.sums = args.sums;
  finalize.channels = channels;
  ENGINE_REQUIRE(finalize.batch_stats == nullptr || args.sums != nullptr,
                 "batchnorm_stats: finalizing needs the sums");
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* x = static_cast<const T*>(args.x);
    dispatch_channel_vector<T>(channel_vector_width<T>(channels, x), [&]<int kVec>() {
      size_t smem = 0;
      const ChannelTileGrid layout = channel_reduce_grid<kVec>(rows, channels, geometry, &smem);
      launch(batchnorm_stats_partial_kernel<T, kVec>, layout.grid, layout.block, smem, stream, x,
             rows, channels, part_mean, part_m2, part_count);
    });
  });
  launch(batchnorm_stats_merge_kernel, per_channel_grid(channels), dim3(kChannelThreads), 0, stream,
         BatchNormStatsMergeParams{.part_mean = part_mean,
                                   .part_m2 = part_m2,
                                   .part_count = part_count,
                                   .parts = parts,
                                   .channels = channels,
                                   .stats = args.stats,
                                   .sums = args.sums,
                                   .finalize = finalize});
}

inline void batchnorm_backward_reduce(const BatchNormBackwardReduceArgs& args, cudaStream_t stream,
                                      const ChannelReduceLaunch& geometry) {
  const int64_t rows = args.rows, channels = args.channels;
  const int64_t parts = channel_reduce_partials(rows, geometry);
  ENGINE_REQUIRE(args.relu_grad == nullptr || args.relu_output != nullptr,
                 "batchnorm_backward_reduce: relu_grad needs relu_output");
  float* part_dy = args.workspace;
  float* part_dy_xmu = args.workspace + parts * channels;
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* dy = static_cast<const T*>(args.dy);
    const T* relu_output = static_cast<const T*>(args.relu_output);
    T* relu_grad = static_cast<T*>(args.relu_grad);
    const T* x = static_cast<const T*>(args.x);
    const int width = channel_vector_width<T>(channels, dy, relu_output, relu_grad, x);
    dispatch_channel_vector<T>(width, [&]<int kVec>() {
      size_t smem = 0;
      const ChannelTileGrid layout = channel_reduce_grid<kVec>(rows, channels, geometry, &smem);
      launch(batchnorm_backward_partial_kernel<T, kVec>, layout.grid, layout.block, smem, stream,
             BatchNormBackwardPartialParams<T>{.dy = dy,
                                               .relu_output = relu_output,
                                               .relu_grad = relu_grad,
                                               .x = x,
                                               .rows = rows,
                                               .channels = channels,
                                               .batch_stats = args.batch_stats,
                                               .part_dy = part_dy,
                                               .part_dy_xmu = part_dy_xmu});
    });
  });
  launch(batchnorm_backward_merge_kernel, per_channel_grid(channels), dim3(kChannelThreads), 0,
         stream,
         BatchNormBackwardMergeParams{.part_dy = part_dy,
                                      .part_dy_xmu = part_dy_xmu,
                                      .parts = parts,
                                      .channels = channels,
                                      .batch_stats = args.batch_stats,
                                      .grad_sums = args.grad_sums,
                                      .bias_grad = args.bias_grad,
                                      .weight_grad = args.weight_grad,
                                      .accumulate = args.accumulate});
}

}  // namespace engine::cuda
