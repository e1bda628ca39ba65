// Max pooling with argmax (forward) and its gathering backward, one thread per output or
// input element with channels fastest (coalesced NHWC); global average pooling as a
// per-image channel-tile reduction and a broadcast.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/cuda/channel_tile.cuh"
#include "kernels/cuda/pool.h"
#include "kernels/error.h"
#include "kernels/fast_divmod.h"

namespace engine::cuda {

// One launch's window: whole images whose input and output each hold under 2^31 elements, so
// every index is 32-bit and split into coordinates by FastDivmod (a 64-bit `/` is a
// ~70-instruction subroutine on the GPU; six of them per element held the backward to a
// twelfth of a copy's bandwidth on an H200: bench/results/gpu-check-h200-2026-12-04-op-harness).
struct PoolWindow {
  int32_t h, w, c, out_h, out_w;
  int32_t kernel, stride, padding;
  FastDivmod by_c, by_h, by_w, by_out_h, by_out_w, by_stride;
};

// A flat NHWC index's coordinates in a map of by_h x by_w pixels of by_c channels.
struct NhwcAt {
  int32_t image, row, col, ch;
};
__device__ __forceinline__ NhwcAt nhwc_at(int32_t i, const FastDivmod& by_c, const FastDivmod& by_w,
                                          const FastDivmod& by_h) {
  NhwcAt at;
  int32_t pixel, rows;
  by_c.divmod(i, pixel, at.ch);
  by_w.divmod(pixel, rows, at.col);
  by_h.divmod(rows, at.image, at.row);
  return at;
}

// As PyTorch: the index starts at the window's first valid position; a value wins when it is
// greater than the best so far or NaN (v != v), so NaN propagates. `total` outputs.
template <typename T>
__global__ void maxpool2d_forward_kernel(const T* x, T* y, int32_t* argmax, int32_t total,
                                         PoolWindow g) {
  for (int64_t flat = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; flat < total;
       flat += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const auto i = static_cast<int32_t>(flat);
    const auto [image, oh, ow, ch] = nhwc_at(i, g.by_c, g.by_out_w, g.by_out_h);
    const int32_t h0 = oh * g.stride - g.padding, w0 = ow * g.stride - g.padding;
    const int32_t h_begin = h0 < 0 ? 0 : h0, h_end = h0 + g.kernel < g.h ? h0 + g.kernel : g.h;
    const int32_t w_begin = w0 < 0 ? 0 : w0, w_end = w0 + g.kernel < g.w ? w0 + g.kernel : g.w;
    const T* plane = x + image * g.h * g.w * g.c + ch;
    float best = -INFINITY;
    int32_t index = h_begin * g.w + w_begin;
    for (int32_t ih = h_begin; ih < h_end; ++ih) {
      for (int32_t iw = w_begin; iw < w_end; ++iw) {
        const float v = to_f32(plane[(ih * g.w + iw) * g.c]);
        if (v > best || v != v) {
          best = v;
          index = ih * g.w + iw;
        }
      }
    }
    y[i] = from_f32<T>(best);
    argmax[i] = index;
  }
}

// Each of the `total` input elements sums dy over the outputs whose window holds it and chose
// it, in row-major output order: deterministic, no atomics, and dx needs no zero fill.
template <typename T>
__global__ void maxpool2d_backward_kernel(const T* dy, const int32_t* argmax, T* dx, int32_t total,
                                          PoolWindow g) {
  for (int64_t flat = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; flat < total;
       flat += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const auto i = static_cast<int32_t>(flat);
    const auto [image, ih, iw, ch] = nhwc_at(i, g.by_c, g.by_w, g.by_h);
    // Outputs oh with oh * stride - padding <= ih <= oh * stride - padding + kernel - 1 (a
    // negative lower bound is 0: FastDivmod takes no negative dividend).
    const int32_t oh_from = ih + g.padding - g.kernel + g.stride;
    const int32_t ow_from = iw + g.padding - g.kernel + g.stride;
    const int32_t oh_begin = oh_from > 0 ? g.by_stride.divide(oh_from) : 0;
    const int32_t ow_begin = ow_from > 0 ? g.by_stride.divide(ow_from) : 0;
    const int32_t oh_last = g.by_stride.divide(ih + g.padding) + 1;
    const int32_t ow_last = g.by_stride.divide(iw + g.padding) + 1;
    const int32_t oh_end = oh_last < g.out_h ? oh_last : g.out_h;
    const int32_t ow_end = ow_last < g.out_w ? ow_last : g.out_w;
    const int32_t position = ih * g.w + iw;
    const int32_t plane = image * g.out_h * g.out_w * g.c + ch;
    float sum = 0.f;
    for (int32_t oh = oh_begin; oh < oh_end; ++oh) {
      for (int32_t ow = ow_begin; ow < ow_end; ++ow) {
        const int32_t at = plane + (oh * g.out_w + ow) * g.c;
        if (argmax[at] == position) sum += to_f32(dy[at]);
      }
    }
    dx[i] = from_f32<T>(sum);
  }
}

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

// The launch geometry of max pooling: the element-wise grid, and the most elements a launch
// indexes (whole images; 32-bit indices need under 2^31). The SIMT tests force both.
struct PoolLaunch {
  ElementwiseLaunch grid;
  int64_t max_launch_elements = INT32_MAX;
};

// The elements one image takes in a launch: its input's or its output's, the larger.
inline int64_t maxpool_image_elements(const MaxPool2dWindow& window) {
  return std::max(window.h * window.w, window.out_h() * window.out_w()) * window.c;
}

// Calls run(first_image, images, window) for runs of whole images that each fit a launch.
template <typename Launch>
void for_each_image_run(const MaxPool2dWindow& window, int64_t max_launch_elements, Launch&& run) {
  const int64_t out_h = window.out_h(), out_w = window.out_w();
  const int64_t per_image = maxpool_image_elements(window);
  if (window.n == 0 || per_image == 0) return;
  ENGINE_REQUIRE(per_image <= max_launch_elements,
                 "maxpool2d: one image of " + std::to_string(window.h) + "x" +
                     std::to_string(window.w) + "x" + std::to_string(window.c) + " holds " +
                     std::to_string(per_image) + " elements, over the " +
                     std::to_string(max_launch_elements) + " a launch indexes");
  const int64_t images_per_launch = std::min(window.n, max_launch_elements / per_image);
  const PoolWindow g{static_cast<int32_t>(window.h),
                     static_cast<int32_t>(window.w),
                     static_cast<int32_t>(window.c),
                     static_cast<int32_t>(out_h),
                     static_cast<int32_t>(out_w),
                     window.params.kernel,
                     window.params.stride,
                     window.params.padding,
                     FastDivmod(static_cast<int32_t>(window.c)),
                     FastDivmod(static_cast<int32_t>(window.h)),
                     FastDivmod(static_cast<int32_t>(window.w)),
                     FastDivmod(static_cast<int32_t>(out_h)),
                     FastDivmod(static_cast<int32_t>(out_w)),
                     FastDivmod(window.params.stride)};
  for (int64_t first = 0; first < window.n; first += images_per_launch)
    run(first, std::min(images_per_launch, window.n - first), g);
}

// The entry points (declared in pool.h) with their launch geometry: the SIMT tests force
// grids and launch sizes through it.
inline void maxpool2d_forward(const MaxPool2dForwardArgs& args, cudaStream_t stream,
                              const PoolLaunch& shape) {
  const MaxPool2dWindow& window = args.window;
  const int64_t in_image = window.h * window.w * window.c;
  const int64_t out_image = window.out_h() * window.out_w() * window.c;
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    for_each_image_run(window, shape.max_launch_elements,
                       [&](int64_t first, int64_t images, const PoolWindow& g) {
                         const int64_t total = images * out_image;
                         launch(maxpool2d_forward_kernel<T>, elementwise_grid(total, shape.grid),
                                dim3(shape.grid.threads), 0, stream,
                                static_cast<const T*>(args.x) + first * in_image,
                                static_cast<T*>(args.y) + first * out_image,
                                args.argmax + first * out_image, static_cast<int32_t>(total), g);
                       });
  });
}

inline void maxpool2d_backward(const MaxPool2dBackwardArgs& args, cudaStream_t stream,
                               const PoolLaunch& shape) {
  const MaxPool2dWindow& window = args.window;
  const int64_t in_image = window.h * window.w * window.c;
  const int64_t out_image = window.out_h() * window.out_w() * window.c;
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    for_each_image_run(
        window, shape.max_launch_elements, [&](int64_t first, int64_t images, const PoolWindow& g) {
          const int64_t total = images * in_image;
          launch(maxpool2d_backward_kernel<T>, elementwise_grid(total, shape.grid),
                 dim3(shape.grid.threads), 0, stream,
                 static_cast<const T*>(args.dy) + first * out_image,
                 args.argmax + first * out_image, static_cast<T*>(args.dx) + first * in_image,
                 static_cast<int32_t>(total), g);
        });
  });
}

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
                                    const ChannelTileLaunch& shape) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* dy = static_cast<const T*>(args.dy);
    T* dx = static_cast<T*>(args.dx);
    dispatch_channel_vector<T>(channel_vector_width<T>(args.c, dy, dx), [&]<int kVec>() {
      const ChannelTileGrid layout = channel_tile_grid(args.n * args.spatial, args.c / kVec, shape);
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
