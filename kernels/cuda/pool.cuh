// The pool family's kernels: max pooling with a one-byte argmax and its gathering backward
// (maxpool.cuh); global average pooling as a per-image channel-tile reduction and a
// broadcast.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/cuda/channel_tile.cuh"
#include "kernels/cuda/maxpool.cuh"
#include "kernels/cuda/pool.h"
#include "kernels/error.h"

namespace engine::cuda {

// y[image, c] = mean over the image's `spatial` rows: block (channel tile, image), row lanes
// sum strided rows, then lane 0 adds the lanes' sums in order. Dynamic shared memory:
// blockDim.x * blockDim.y * kVec floats.
template <typename T, int kVec>
__global__ void global_avgpool_forward_kernel(const T* x, T* y, int64_t spatial, int64_t c) {
  DYNAMIC_SHARED_MEMORY(float, shared);
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  const bool active = c0 < c;
  const T* image = x + static_cast<int64_t>(blockIdx.y) * spatial * c;
  float sums[1][kVec] = {};
  float(&sum)[kVec] = sums[0];
  if (active) {
    for (int64_t s = threadIdx.y; s < spatial; s += blockDim.y) {
      float v[kVec];
      load_channels<kVec>(image + s * c + c0, v);
#pragma unroll
      for (int k = 0; k < kVec; ++k)
        sum[k] += v[k];
    }
  }
  sum_row_lanes(shared, sums);
  if (threadIdx.y != 0 || !active) return;
#pragma unroll
  for (int k = 0; k < kVec; ++k)
    sum[k] /= static_cast<float>(spatial);
  store_channels<kVec>(y + static_cast<int64_t>(blockIdx.y) * c + c0, sum);
}

// dx[image, s, c] = dy[image, c] / spatial, over rows = n * spatial.
template <typename T, int kVec>
__global__ void global_avgpool_backward_kernel(const T* dy, T* dx, int64_t rows, int64_t spatial,
                                               int64_t c) {
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (c0 >= c) return;
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<int64_t>(gridDim.y) * blockDim.y) {
    float v[kVec];
    load_channels<kVec>(dy + r / spatial * c + c0, v);
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      v[k] /= static_cast<float>(spatial);
    store_channels<kVec>(dx + r * c + c0, v);
  }
}

// ---------------------------------------------------------------------------------------
// Launchers

// One block row per image (grid.y), so n <= 65535.
inline void global_avgpool_forward(const GlobalAvgPoolForwardArgs& args, cudaStream_t stream,
                                   int threads) {
  ENGINE_REQUIRE(args.n <= 65535, "global_avgpool_forward: at most 65535 images per launch");
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* x = static_cast<const T*>(args.x);
    T* y = static_cast<T*>(args.y);
    dispatch_channel_vector<T>(channel_vector_width<T>(args.c, x, y), [&]<int kVec>() {
      ChannelTileGrid layout = channel_tile_block(args.c / kVec, threads);
      layout.grid.y = static_cast<unsigned>(args.n);
      const size_t smem = sizeof(float) * kVec * layout.block.x * layout.block.y;
      launch(global_avgpool_forward_kernel<T, kVec>, layout.grid, layout.block, smem, stream, x, y,
             args.spatial, args.c);
    });
  });
}

inline void global_avgpool_backward(const GlobalAvgPoolBackwardArgs& args, cudaStream_t stream,
                                    const ChannelTileLaunch& geometry) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* dy = static_cast<const T*>(args.dy);
    T* dx = static_cast<T*>(args.dx);
    dispatch_channel_vector<T>(channel_vector_width<T>(args.c, dy, dx), [&]<int kVec>() {
      const ChannelTileGrid layout =
          channel_tile_grid(args.n * args.spatial, args.c / kVec, geometry);
      launch(global_avgpool_backward_kernel<T, kVec>, layout.grid, layout.block, 0, stream, dy, dx,
             args.n * args.spatial, args.spatial, args.c);
    });
  });
}

// With the default geometry.
void maxpool2d_forward(const MaxPool2dForwardArgs& args, cudaStream_t stream) {
  maxpool2d_forward(args, stream, PoolLaunch{});
}
void maxpool2d_backward(const MaxPool2dBackwardArgs& args, cudaStream_t stream) {
  maxpool2d_backward(args, stream, PoolLaunch{});
}
void global_avgpool_forward(const GlobalAvgPoolForwardArgs& args, cudaStream_t stream) {
  global_avgpool_forward(args, stream, 256);
}
void global_avgpool_backward(const GlobalAvgPoolBackwardArgs& args, cudaStream_t stream) {
  global_avgpool_backward(args, stream, ChannelTileLaunch{});
}

}  // namespace engine::cuda
