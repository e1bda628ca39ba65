// BatchNorm's fp64 phases on the GPU: the fp32 Welford statistics as fp64 sums (what SyncBN
// all-reduces), and the finalization of (reduced) sums into the batch statistics and the
// running statistics. One thread per channel; the arithmetic is kernels/batchnorm_sums.h,
// shared with the CPU twin, so both give the same bits.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/args/batchnorm.h"
#include "kernels/batchnorm_sums.h"
#include "kernels/cuda/batchnorm_reduce.cuh"

namespace engine::cuda {

// sums = (count * mean [C], m2 + count * mean^2 [C], count) from stats = (mean, m2, count).
__global__ void batchnorm_stats_to_sums_kernel(const float* stats, int64_t channels, double* sums) {
  const float count = stats[2 * channels];
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const ChannelSums channel = batchnorm_channel_sums(count, stats[c], stats[channels + c]);
    sums[c] = channel.sum;
    sums[channels + c] = channel.sumsq;
    if (c == 0) sums[2 * channels] = static_cast<double>(count);
  }
}

// batch_stats = (mean, invstd, count) from sums; running statistics as torch.nn.BatchNorm2d.
// Takes its entry point's arguments by value (no pointer of them is typeless).
__global__ void batchnorm_finalize_sums_kernel(BatchNormFinalizeSumsArgs p) {
  const int64_t channels = p.channels;
  const double count = p.sums[2 * channels];
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x)
    batchnorm_finalize_channel(p, c, p.sums[c], p.sums[channels + c], count);
}

// ---------------------------------------------------------------------------------------
// Launchers

// The per-channel kernels stride over channels, so tests can force that loop with a small
// grid (max_blocks) and few threads.
struct PerChannelLaunch {
  int threads = kChannelThreads;
  int max_blocks = 1024;
};

inline dim3 per_channel_grid(int64_t channels, const PerChannelLaunch& geometry) {
  const int64_t blocks = (channels + geometry.threads - 1) / geometry.threads;
  return dim3(static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, geometry.max_blocks)));
}

// The fp64 entry points (kernels/cuda/batchnorm.h) with their launch geometry.
inline void batchnorm_stats_to_sums(const BatchNormStatsToSumsArgs& args, cudaStream_t stream,
                                    const PerChannelLaunch& geometry) {
  ENGINE_REQUIRE(args.channels >= 1, "batchnorm_stats_to_sums: needs at least one channel");
  launch(batchnorm_stats_to_sums_kernel, per_channel_grid(args.channels, geometry),
         dim3(geometry.threads), 0, stream, args.stats, args.channels, args.sums);
}

inline void batchnorm_finalize_sums(const BatchNormFinalizeSumsArgs& args, cudaStream_t stream,
                                    const PerChannelLaunch& geometry) {
  ENGINE_REQUIRE(args.channels >= 1, "batchnorm_finalize_sums: needs at least one channel");
  launch(batchnorm_finalize_sums_kernel, per_channel_grid(args.channels, geometry),
         dim3(geometry.threads), 0, stream, args);
}

}  // namespace engine::cuda
