// Max pooling with argmax (forward) and its gathering backward, one thread per output or
// input element with channels fastest (coalesced NHWC); global average pooling as a
// per-image channel-tile reduction and a broadcast.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cuda/channel_tile.cuh"
#include "kernels/cuda/pool.h"
#include "kernels/error.h"

namespace engine::cuda {

struct PoolWindow {
  int64_t n, h, w, c, out_h, out_w;
  int kernel, stride, padding;
};

// As PyTorch: the index starts at the window's first valid position; a value wins when it is
// greater than the best so far or NaN (v != v), so NaN propagates.
template <typename T>
__global__ void maxpool2d_forward_kernel(const T* x, T* y, int32_t* argmax, PoolWindow g) {
  const int64_t total = g.n * g.out_h * g.out_w * g.c;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ch = i % g.c, pixel = i / g.c;
    const int64_t ow = pixel % g.out_w, oh = pixel / g.out_w % g.out_h;
    const int64_t image = pixel / (g.out_w * g.out_h);
    const int64_t h0 = oh * g.stride - g.padding, w0 = ow * g.stride - g.padding;
    const int64_t h_begin = h0 < 0 ? 0 : h0, h_end = h0 + g.kernel < g.h ? h0 + g.kernel : g.h;
    const int64_t w_begin = w0 < 0 ? 0 : w0, w_end = w0 + g.kernel < g.w ? w0 + g.kernel : g.w;
    float best = -INFINITY;
    auto index = static_cast<int32_t>(h_begin * g.w + w_begin);
    for (int64_t ih = h_begin; ih < h_end; ++ih) {
      for (int64_t iw = w_begin; iw < w_end; ++iw) {
        const float v = to_f32(x[((image * g.h + ih) * g.w + iw) * g.c + ch]);
        if (v > best || v != v) {
          best = v;
          index = static_cast<int32_t>(ih * g.w + iw);
        }
      }
    }
    y[i] = from_f32<T>(best);
    argmax[i] = index;
  }
}

// Each input element sums dy over the outputs whose window holds it and chose it, in
// row-major output order: deterministic, no atomics, and dx needs no zero fill.
template <typename T>
__global__ void maxpool2d_backward_kernel(const T* dy, const int32_t* argmax, T* dx, PoolWindow g) {
  const int64_t total = g.n * g.h * g.w * g.c;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ch = i % g.c, pixel = i / g.c;
    const int64_t iw = pixel % g.w, ih = pixel / g.w % g.h, image = pixel / (g.w * g.h);
    // Outputs oh with oh * stride - padding <= ih <= oh * stride - padding + kernel - 1.
    const int64_t oh_first = (ih + g.padding - g.kernel + g.stride) / g.stride;
    const int64_t ow_first = (iw + g.padding - g.kernel + g.stride) / g.stride;
    const int64_t oh_begin = oh_first < 0 ? 0 : oh_first;
    const int64_t ow_begin = ow_first < 0 ? 0 : ow_first;
    const int64_t oh_last = (ih + g.padding) / g.stride + 1;
    const int64_t ow_last = (iw + g.padding) / g.stride + 1;
    const int64_t oh_end = oh_last < g.out_h ? oh_last : g.out_h;
    const int64_t ow_end = ow_last < g.out_w ? ow_last : g.out_w;
    const auto position = static_cast<int32_t>(ih * g.w + iw);
    float sum = 0.f;
    for (int64_t oh = oh_begin; oh < oh_end; ++oh) {
      for (int64_t ow = ow_begin; ow < ow_end; ++ow) {
        const int64_t at = ((image * g.out_h + oh) * g.out_w + ow) * g.c + ch;
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

inline PoolWindow pool_window(const MaxPool2dWindow& window) {
  return {window.n,
          window.h,
          window.w,
          window.c,
          window.out_h(),
          window.out_w(),
          window.params.kernel,
          window.params.stride,
          window.params.padding};
}

// The entry points (declared in pool.h) with their launch geometry: the SIMT tests force
// grids through it.
inline void maxpool2d_forward(const MaxPool2dForwardArgs& args, cudaStream_t stream,
                              const ElementwiseLaunch& shape) {
  const PoolWindow g = pool_window(args.window);
  const int64_t total = g.n * g.out_h * g.out_w * g.c;
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    if (total == 0) return;
    launch(maxpool2d_forward_kernel<T>, elementwise_grid(total, shape), dim3(shape.threads), 0,
           stream, static_cast<const T*>(args.x), static_cast<T*>(args.y), args.argmax, g);
  });
}

inline void maxpool2d_backward(const MaxPool2dBackwardArgs& args, cudaStream_t stream,
                               const ElementwiseLaunch& shape) {
  const PoolWindow g = pool_window(args.window);
  const int64_t total = g.n * g.h * g.w * g.c;
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    if (total == 0) return;
    launch(maxpool2d_backward_kernel<T>, elementwise_grid(total, shape), dim3(shape.threads), 0,
           stream, static_cast<const T*>(args.dy), args.argmax, static_cast<T*>(args.dx), g);
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
  maxpool2d_forward(args, stream, ElementwiseLaunch{});
}
void maxpool2d_backward(const MaxPool2dBackwardArgs& args, cudaStream_t stream) {
  maxpool2d_backward(args, stream, ElementwiseLaunch{});
}
void global_avgpool_forward(const GlobalAvgPoolForwardArgs& args, cudaStream_t stream) {
  global_avgpool_forward(args, stream, 256);
}
void global_avgpool_backward(const GlobalAvgPoolBackwardArgs& args, cudaStream_t stream) {
  global_avgpool_backward(args, stream, ChannelTileLaunch{});
}

}  // namespace engine::cuda
