// The reduction phases of batchnorm: per-channel statistics and the backward sums (their
// finalization is in batchnorm_sums.cuh). Each reduction is two kernels: the first writes one
// partial result per (channel, slice of rows) to a workspace, the second merges the partials of a
// channel in a fixed order. Results are deterministic and no atomics are involved.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/args/batchnorm.h"
#include "kernels/cuda/channel_tile.cuh"
#include "kernels/cuda/device_types.cuh"
#include "kernels/error.h"

namespace engine::cuda {

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

// stats = (mean[C], m2[C], count) merged from the row slices' partials in order.
__global__ void batchnorm_stats_merge_kernel(const float* part_mean, const float* part_m2,
                                             const float* part_count, int64_t parts,
                                             int64_t channels, float* stats) {
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const ChannelStats merged = merge_in_order(parts, [&](int64_t p) {
      return ChannelStats{part_count[p], part_mean[p * channels + c], part_m2[p * channels + c]};
    });
    stats[c] = merged.mean;
    stats[channels + c] = merged.m2;
    if (c == 0) stats[2 * channels] = merged.count;
  }
}

// What batchnorm_backward_partial_kernel takes, by value: dy and x [rows, channels], the
// batch statistics, and the workspace's two partial arrays [slices, channels].
template <typename T>
struct BatchNormBackwardPartialParams {
  const T* dy = nullptr;
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
      load_channels<kVec>(p.dy + r * channels + c0, g);
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

// grad_sums = (sum_dy[C], invstd * sum dy * (x - mean) [C]) summed over the partials in order.
__global__ void batchnorm_backward_merge_kernel(const float* part_dy, const float* part_dy_xmu,
                                                int64_t parts, int64_t channels,
                                                const float* batch_stats, float* grad_sums) {
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float sum_dy = 0.f, sum_dy_xmu = 0.f;
    for (int64_t p = 0; p < parts; ++p) {
      sum_dy += part_dy[p * channels + c];
      sum_dy_xmu += part_dy_xmu[p * channels + c];
    }
    grad_sums[c] = sum_dy;
    grad_sums[channels + c] = sum_dy_xmu * batch_stats[channels + c];
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
         part_mean, part_m2, part_count, parts, channels, args.stats);
}

inline void batchnorm_backward_reduce(const BatchNormBackwardReduceArgs& args, cudaStream_t stream,
                                      const ChannelReduceLaunch& geometry) {
  const int64_t rows = args.rows, channels = args.channels;
  const int64_t parts = channel_reduce_partials(rows, geometry);
  float* part_dy = args.workspace;
  float* part_dy_xmu = args.workspace + parts * channels;
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* dy = static_cast<const T*>(args.dy);
    const T* x = static_cast<const T*>(args.x);
    dispatch_channel_vector<T>(channel_vector_width<T>(channels, dy, x), [&]<int kVec>() {
      size_t smem = 0;
      const ChannelTileGrid layout = channel_reduce_grid<kVec>(rows, channels, geometry, &smem);
      launch(batchnorm_backward_partial_kernel<T, kVec>, layout.grid, layout.block, smem, stream,
             BatchNormBackwardPartialParams<T>{.dy = dy,
                                               .x = x,
                                               .rows = rows,
                                               .channels = channels,
                                               .batch_stats = args.batch_stats,
                                               .part_dy = part_dy,
                                               .part_dy_xmu = part_dy_xmu});
    });
  });
  launch(batchnorm_backward_merge_kernel, per_channel_grid(channels), dim3(kChannelThreads), 0,
         stream, part_dy, part_dy_xmu, parts, channels, args.batch_stats, args.grad_sums);
}

}  // namespace engine::cuda
