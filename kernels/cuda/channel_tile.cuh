// Thread layout shared by the kernels over an NHWC activation viewed as a [rows, channels]
// matrix (rows = N*H*W): threadIdx.x walks groups of kVec adjacent channels, so a warp reads
// one contiguous stretch of each row it touches (coalesced), and threadIdx.y walks rows.
// blockIdx.x picks a tile of channel groups and blockIdx.y a slice of the rows. A thread
// keeps its channels' parameters in registers for every row it visits.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/launch.h"

namespace engine::cuda {

// Element-wise kernels over [rows, channels]. max_row_blocks caps grid.y (the kernels stride
// over the remaining rows); tests lower it to exercise that loop with small inputs.
struct ChannelTileLaunch {
  int threads = 256;
  int max_row_blocks = 1024;
};

// Per-channel reductions over rows: grid.y = the number of partial results, each over a
// contiguous slice of at least min_rows_per_partial rows, merged by a second kernel.
struct ChannelReduceLaunch {
  int threads = 256;
  int max_partials = 512;
  int min_rows_per_partial = 64;
};

struct ChannelTileGrid {
  dim3 grid;
  dim3 block;
};

// Channel lanes per block: the channel groups rounded up to a power of two, at most a warp,
// so that narrow tensors (C = 3) do not leave most of a warp idle.
inline ChannelTileGrid channel_tile_block(int64_t groups, int threads) {
  int lanes = 1;
  while (lanes < 32 && lanes < groups && lanes < threads)
    lanes *= 2;
  const int row_lanes = std::max(1, threads / lanes);
  const int64_t tiles = (groups + lanes - 1) / lanes;
  return {dim3(static_cast<unsigned>(tiles)), dim3(lanes, row_lanes)};
}

inline ChannelTileGrid channel_tile_grid(int64_t rows, int64_t groups,
                                         const ChannelTileLaunch& geometry) {
  ChannelTileGrid layout = channel_tile_block(groups, geometry.threads);
  const int64_t row_blocks = (rows + layout.block.y - 1) / layout.block.y;
  const int64_t cap = std::min(geometry.max_row_blocks, 65535);
  layout.grid.y = static_cast<unsigned>(std::clamp<int64_t>(row_blocks, 1, cap));
  return layout;
}

inline int64_t channel_reduce_partials(int64_t rows, const ChannelReduceLaunch& geometry) {
  const int64_t wanted = (rows + geometry.min_rows_per_partial - 1) / geometry.min_rows_per_partial;
  return std::clamp<int64_t>(wanted, 1, std::min(geometry.max_partials, 65535));
}

// Channels per thread: 16 bytes of T when every row of every tensor starts 16-byte aligned,
// else 1. pointers are the activations' base pointers (nullptr ones are ignored).
template <typename T, typename... P>
int channel_vector_width(int64_t channels, const P*... pointers) {
  constexpr int kVec = static_cast<int>(16 / sizeof(T));
  const bool aligned =
      ((pointers == nullptr || reinterpret_cast<uintptr_t>(pointers) % 16 == 0) && ...);
  return aligned && channels % kVec == 0 ? kVec : 1;
}

// Calls fn.template operator()<kVec>() with the vector width as a compile-time constant.
template <typename T, typename Fn>
void dispatch_channel_vector(int width, Fn&& fn) {
  constexpr int kVec = static_cast<int>(16 / sizeof(T));
  if (width == kVec) {
    fn.template operator()<kVec>();
  } else {
    fn.template operator()<1>();
  }
}

template <int kVec, typename T>
__device__ __forceinline__ void load_channels(const T* source, float (&values)[kVec]) {
  const Pack<T, kVec> pack = *reinterpret_cast<const Pack<T, kVec>*>(source);
#pragma unroll
  for (int k = 0; k < kVec; ++k)
    values[k] = to_f32(pack.v[k]);
}

template <int kVec, typename T>
__device__ __forceinline__ void store_channels(T* target, const float (&values)[kVec]) {
  Pack<T, kVec> pack;
#pragma unroll
  for (int k = 0; k < kVec; ++k)
    pack.v[k] = from_f32<T>(values[k]);
  *reinterpret_cast<Pack<T, kVec>*>(target) = pack;
}

// Sums each thread's kSums vectors of kVec channel values over the block's row lanes
// (threadIdx.y), in lane order, through `shared`: kSums * blockDim.x * blockDim.y * kVec
// floats. Every thread of the block must call it (it holds a barrier); afterwards the sums of
// the threads of row lane 0 are the block's totals (the other lanes' are unchanged).
template <int kVec, int kSums>
__device__ __forceinline__ void sum_row_lanes(float* shared, float (&sums)[kSums][kVec]) {
  const int width = blockDim.x * kVec;
  const int lane_floats = blockDim.y * width;
#pragma unroll
  for (int s = 0; s < kSums; ++s) {
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      shared[s * lane_floats + threadIdx.y * width + threadIdx.x * kVec + k] = sums[s][k];
  }
  __syncthreads();
  if (threadIdx.y != 0) return;
  for (unsigned lane = 1; lane < blockDim.y; ++lane) {
#pragma unroll
    for (int s = 0; s < kSums; ++s) {
#pragma unroll
      for (int k = 0; k < kVec; ++k)
        sums[s][k] += shared[s * lane_floats + lane * width + threadIdx.x * kVec + k];
    }
  }
}

}  // namespace engine::cuda
