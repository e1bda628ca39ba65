// The reduction phases of batchnorm: per-channel statistics and the backward sums (their
// finalization is in batchnorm_sums.cuh). Each reduction is one kernel: every block writes one
// partial result per (channel of its tile, slice of rows) to a workspace, and the last block
// of a channel tile to finish (a ticket from an atomic counter) merges the tile's partials in
// part order. Results are deterministic: the order of the merge never depends on arrival.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/args/batchnorm.h"
#include "kernels/batchnorm_sums.h"
#include "kernels/conv_input_value.h"
#include "kernels/cuda/channel_tile.cuh"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/last_arrival.cuh"
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

// The per-channel scale and shift of a ReLU mask recomputed from x (relu_scale set), loaded
// once per thread as the statistics are; zeros when there is none.
template <int kVec>
__device__ __forceinline__ void load_relu_coefficients(const float* relu_scale,
                                                       const float* relu_shift, int64_t c0,
                                                       float (&scale)[kVec], float (&shift)[kVec]) {
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    scale[k] = relu_scale ? relu_scale[c0 + k] : 0.f;
    shift[k] = relu_scale ? relu_shift[c0 + k] : 0.f;
  }
}

// g where the ReLU's output, recomputed from x's values v as the next convolution read it
// (conv_input_value: the same bits), is > 0, and 0 elsewhere (NaN included).
template <int kVec>
__device__ __forceinline__ void gate_by_recomputed_relu(const float (&v)[kVec],
                                                        const float (&scale)[kVec],
                                                        const float (&shift)[kVec],
                                                        float (&g)[kVec]) {
#pragma unroll
  for (int k = 0; k < kVec; ++k)
    g[k] = conv_input_value(v[k], scale[k], shift[k], true) > 0.f ? g[k] : 0.f;
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

// Whether this block is the last of its channel tile (blockIdx.x) to have written its
// partials over the parts (gridDim.y), so that it merges them.
__device__ __forceinline__ bool last_block_of_tile(unsigned* counters, unsigned& ticket) {
  return last_to_arrive(counters + blockIdx.x, gridDim.y, ticket);
}

// Calls merge(c) for every channel of this block's tile, spread over all its threads.
template <int kVec, typename Merge>
__device__ __forceinline__ void for_each_tile_channel(int64_t channels, Merge merge) {
  const int64_t tile_begin = static_cast<int64_t>(blockIdx.x) * blockDim.x * kVec;
  const int64_t tile_width = static_cast<int64_t>(blockDim.x) * kVec;
  const int64_t tile_end = channels < tile_begin + tile_width ? channels : tile_begin + tile_width;
  for (int64_t c = tile_begin + threadIdx.y * blockDim.x + threadIdx.x; c < tile_end;
       c += static_cast<int64_t>(blockDim.x) * blockDim.y)
    merge(c);
}

// The rows of slice `part` of `parts`: the partial kernels' split, which the merge recomputes
// (the count of a part is exact in fp32 below 2^24 rows per part).
__device__ __forceinline__ int64_t slice_rows(int64_t rows, int64_t part, int64_t parts) {
  return rows * (part + 1) / parts - rows * part / parts;
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

// What batchnorm_stats_kernel takes, by value: x [rows, channels], the workspace's partials
// [parts = gridDim.y, channels] and tile counters, and the outputs of BatchNormStatsArgs
// (sums and finalize as there: or null).
template <typename T>
struct BatchNormStatsParams {
  const T* x = nullptr;
  int64_t rows = 0;
  int64_t channels = 0;
  float* part_mean = nullptr;
  float* part_m2 = nullptr;
  unsigned* counters = nullptr;
  float* stats = nullptr;
  double* sums = nullptr;
  BatchNormFinalizeSumsArgs finalize = {};
};

// Channel c's statistics from the partials, in part order: stats = (mean[C], m2[C], count);
// then, in the same thread, the fp64 sums (batchnorm_stats_to_sums) and the finalize
// (batchnorm_finalize_sums) when asked, through the same helpers as those phases: the same
// bits without their launches. The partials are other blocks' writes of this launch: read
// volatile, past any cached copy.
template <typename T>
__device__ __forceinline__ void batchnorm_stats_merge_channel(const BatchNormStatsParams<T>& p,
                                                              int64_t c, int64_t parts) {
  const int64_t channels = p.channels;
  const volatile float* part_mean = p.part_mean;
  const volatile float* part_m2 = p.part_m2;
  const ChannelStats merged = merge_in_order(parts, [&](int64_t part) {
    return ChannelStats{static_cast<float>(slice_rows(p.rows, part, parts)),
                        part_mean[part * channels + c], part_m2[part * channels + c]};
  });
  p.stats[c] = merged.mean;
  p.stats[channels + c] = merged.m2;
  if (c == 0) p.stats[2 * channels] = merged.count;
  if (p.sums == nullptr) return;
  const ChannelSums sums = batchnorm_channel_sums(merged.count, merged.mean, merged.m2);
  const double count = static_cast<double>(merged.count);
  p.sums[c] = sums.sum;
  p.sums[channels + c] = sums.sumsq;
  if (c == 0) p.sums[2 * channels] = count;
  if (p.finalize.batch_stats != nullptr) {
    batchnorm_finalize_channel(p.finalize, c, sums.sum, sums.sumsq, count);
  }
}

// The statistics in one launch. Each block: one partial (mean, m2) per channel of its tile
// over the rows slice blockIdx.y of gridDim.y, from sums of x - shift, with shift = the
// slice's first row: a value of the same channel, so within a few standard deviations of the
// mean, and s2 - s1^2/n does not cancel even when |mean| >> std. The last block of a tile to
// finish then merges the tile's partials in part order (batchnorm_stats_merge_channel): the
// order is fixed, whichever block arrives last. Dynamic shared memory: 2 * blockDim.x *
// blockDim.y * kVec floats.
template <typename T, int kVec>
__global__ void batchnorm_stats_kernel(BatchNormStatsParams<T> p) {
  DYNAMIC_SHARED_MEMORY(float, shared);
  __shared__ unsigned ticket;
  const int64_t rows = p.rows, channels = p.channels;
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
    load_channels<kVec>(p.x + begin * channels + c0, shift);
    for (int64_t r = begin + threadIdx.y; r < end; r += blockDim.y) {
      float v[kVec];
      load_channels<kVec>(p.x + r * channels + c0, v);
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
  if (threadIdx.y == 0 && active) {
    const float n = static_cast<float>(end - begin);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const int64_t at = blockIdx.y * channels + c0 + k;
      p.part_mean[at] = shift[k] + s1[k] / n;
      p.part_m2[at] = fmaxf(s2[k] - s1[k] * (s1[k] / n), 0.f);
    }
  }
  if (!last_block_of_tile(p.counters, ticket)) return;
  for_each_tile_channel<kVec>(channels,
                              [&](int64_t c) { batchnorm_stats_merge_channel(p, c, gridDim.y); });
}

// What batchnorm_backward_kernel takes, by value: dy and x [rows, channels] (dy through the
// fused ReLU when relu_output or relu_scale is set), the batch statistics, the workspace's two
// partial arrays [parts = gridDim.y, channels] and tile counters, and the outputs of
// BatchNormBackwardReduceArgs.
template <typename T>
struct BatchNormBackwardReduceParams {
  const T* dy = nullptr;
  const T* relu_output = nullptr;     // or null: see load_gradient_through_relu
  const float* relu_scale = nullptr;  // or null: see gate_by_recomputed_relu
  const float* relu_shift = nullptr;
  T* relu_grad = nullptr;  // or null: receives dy through the ReLU
  const T* x = nullptr;
  int64_t rows = 0;
  int64_t channels = 0;
  const float* batch_stats = nullptr;
  float* part_dy = nullptr;
  float* part_dy_xmu = nullptr;
  unsigned* counters = nullptr;
  float* grad_sums = nullptr;
  float* bias_grad = nullptr;    // or null
  float* weight_grad = nullptr;  // or null
  bool accumulate = false;
};

// Where the backward's merged sums go: grad_sums f32[2C] and the parameter gradients.
struct BatchNormGradTargets {
  const float* batch_stats = nullptr;  // its invstd[C] scales the second sum
  float* grad_sums = nullptr;
  float* bias_grad = nullptr;    // or null
  float* weight_grad = nullptr;  // or null
  bool accumulate = false;
};

// Channel c's grad_sums = (sum_dy, invstd * sum dy * (x - mean)) from its merged sums, and the
// same two sums into the bias and weight gradients (overwritten or accumulated): what two
// copies or adds did after the reduction before. Shared with the input-gradient convolution's
// epilogue (gemm_batchnorm_grad.cuh), so both give these bits from the same sums.
__device__ __forceinline__ void batchnorm_backward_write_channel(const BatchNormGradTargets& t,
                                                                 int64_t c, int64_t channels,
                                                                 float sum_dy, float sum_dy_xmu) {
  const float sum_dy_xhat = sum_dy_xmu * t.batch_stats[channels + c];
  t.grad_sums[c] = sum_dy;
  t.grad_sums[channels + c] = sum_dy_xhat;
  batchnorm_write_grad(t.bias_grad, c, sum_dy, t.accumulate);
  batchnorm_write_grad(t.weight_grad, c, sum_dy_xhat, t.accumulate);
}

// Channel c's sums over the partials in part order, written as above.
template <typename T>
__device__ __forceinline__ void batchnorm_backward_merge_channel(
    const BatchNormBackwardReduceParams<T>& p, int64_t c, int64_t parts) {
  const int64_t channels = p.channels;
  const volatile float* part_dy = p.part_dy;
  const volatile float* part_dy_xmu = p.part_dy_xmu;
  float sum_dy = 0.f, sum_dy_xmu = 0.f;
  for (int64_t part = 0; part < parts; ++part) {
    sum_dy += part_dy[part * channels + c];
    sum_dy_xmu += part_dy_xmu[part * channels + c];
  }
  batchnorm_backward_write_channel({.batch_stats = p.batch_stats,
                                    .grad_sums = p.grad_sums,
                                    .bias_grad = p.bias_grad,
                                    .weight_grad = p.weight_grad,
                                    .accumulate = p.accumulate},
                                   c, channels, sum_dy, sum_dy_xmu);
}

// The backward sums in one launch: each block a partial (sum dy, sum dy * (x - mean)) per
// channel of its tile over the rows slice blockIdx.y, then the tile's last block merges them
// in part order (as batchnorm_stats_kernel). Dynamic shared memory: 2 * blockDim.x *
// blockDim.y * kVec floats.
template <typename T, int kVec>
__global__ void batchnorm_backward_reduce_kernel(BatchNormBackwardReduceParams<T> p) {
  DYNAMIC_SHARED_MEMORY(float, shared);
  __shared__ unsigned ticket;
  const int64_t rows = p.rows, channels = p.channels;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  const bool active = c0 < channels;
  const int64_t begin = rows * blockIdx.y / gridDim.y;
  const int64_t end = rows * (blockIdx.y + 1) / gridDim.y;
  float mean[kVec], relu_scale[kVec], relu_shift[kVec], sums[2][kVec];
  float(&s_dy)[kVec] = sums[0];
  float(&s_dy_xmu)[kVec] = sums[1];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    s_dy[k] = s_dy_xmu[k] = 0.f;
    mean[k] = active ? p.batch_stats[c0 + k] : 0.f;
  }
  if (active) {
    load_relu_coefficients<kVec>(p.relu_scale, p.relu_shift, c0, relu_scale, relu_shift);
    for (int64_t r = begin + threadIdx.y; r < end; r += blockDim.y) {
      float g[kVec], v[kVec];
      load_gradient_through_relu<kVec>(p.dy, p.relu_output, r * channels + c0, g);
      load_channels<kVec>(p.x + r * channels + c0, v);
      if (p.relu_scale) gate_by_recomputed_relu<kVec>(v, relu_scale, relu_shift, g);
      if (p.relu_grad) store_channels<kVec>(p.relu_grad + r * channels + c0, g);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        s_dy[k] += g[k];
        s_dy_xmu[k] += g[k] * (v[k] - mean[k]);
      }
    }
  }
  sum_row_lanes(shared, sums);
  if (threadIdx.y == 0 && active) {
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      p.part_dy[blockIdx.y * channels + c0 + k] = s_dy[k];
      p.part_dy_xmu[blockIdx.y * channels + c0 + k] = s_dy_xmu[k];
    }
  }
  if (!last_block_of_tile(p.counters, ticket)) return;
  for_each_tile_channel<kVec>(
      channels, [&](int64_t c) { batchnorm_backward_merge_channel(p, c, gridDim.y); });
}

// ---------------------------------------------------------------------------------------
// Launchers

// Threads of the per-channel kernels (those of batchnorm_sums.cuh): one thread per channel.
constexpr int kChannelThreads = 256;

// The workspace: partials [parts, 2C] (the statistics' means and m2, or the backward's two
// sums), then one counter per channel tile (at most C tiles). The counters must be zero
// before the first launch (a zeroed workspace); every launch leaves them zero.
inline int64_t batchnorm_workspace_numel(int64_t rows, int64_t channels,
                                         const ChannelReduceLaunch& geometry) {
  return channel_reduce_partials(rows, geometry) * 2 * channels + channels;
}
inline unsigned* reduce_tile_counters(float* workspace, int64_t parts, int64_t channels) {
  static_assert(sizeof(unsigned) == sizeof(float));
  return reinterpret_cast<unsigned*>(workspace + parts * 2 * channels);
}

// The reduction kernels' block: one channel tile per block column, one slice per block row.
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
// tests force grids through it. workspace: batchnorm_workspace_numel(rows, channels, geometry),
// zeroed before its first use.
inline void batchnorm_stats(const BatchNormStatsArgs& args, cudaStream_t stream,
                            const ChannelReduceLaunch& geometry) {
  const int64_t rows = args.rows, channels = args.channels;
  const int64_t parts = channel_reduce_partials(rows, geometry);
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
      launch(
          batchnorm_stats_kernel<T, kVec>, layout.grid, layout.block, smem, stream,
          BatchNormStatsParams<T>{.x = x,
                                  .rows = rows,
                                  .channels = channels,
                                  .part_mean = args.workspace,
                                  .part_m2 = args.workspace + parts * channels,
                                  .counters = reduce_tile_counters(args.workspace, parts, channels),
                                  .stats = args.stats,
                                  .sums = args.sums,
                                  .finalize = finalize});
    });
  });
}

inline void batchnorm_backward_reduce(const BatchNormBackwardReduceArgs& args, cudaStream_t stream,
                                      const ChannelReduceLaunch& geometry) {
  const int64_t rows = args.rows, channels = args.channels;
  const int64_t parts = channel_reduce_partials(rows, geometry);
  ENGINE_REQUIRE(
      args.relu_grad == nullptr || args.relu_output != nullptr || args.relu_scale != nullptr,
      "batchnorm_backward_reduce: relu_grad needs relu_output or relu_scale");
  ENGINE_REQUIRE(args.relu_output == nullptr || args.relu_scale == nullptr,
                 "batchnorm_backward_reduce: relu_output and relu_scale exclude each other");
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* dy = static_cast<const T*>(args.dy);
    const T* relu_output = static_cast<const T*>(args.relu_output);
    T* relu_grad = static_cast<T*>(args.relu_grad);
    const T* x = static_cast<const T*>(args.x);
    const int width = channel_vector_width<T>(channels, dy, relu_output, relu_grad, x);
    dispatch_channel_vector<T>(width, [&]<int kVec>() {
      size_t smem = 0;
      const ChannelTileGrid layout = channel_reduce_grid<kVec>(rows, channels, geometry, &smem);
      launch(batchnorm_backward_reduce_kernel<T, kVec>, layout.grid, layout.block, smem, stream,
             BatchNormBackwardReduceParams<T>{
                 .dy = dy,
                 .relu_output = relu_output,
                 .relu_scale = args.relu_scale,
                 .relu_shift = args.relu_shift,
                 .relu_grad = relu_grad,
                 .x = x,
                 .rows = rows,
                 .channels = channels,
                 .batch_stats = args.batch_stats,
                 .part_dy = args.workspace,
                 .part_dy_xmu = args.workspace + parts * channels,
                 .counters = reduce_tile_counters(args.workspace, parts, channels),
                 .grad_sums = args.grad_sums,
                 .bias_grad = args.bias_grad,
                 .weight_grad = args.weight_grad,
                 .accumulate = args.accumulate});
    });
  });
}

}  // namespace engine::cuda
