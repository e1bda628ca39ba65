// Max pooling's kernels and launchers (part of the pool family, included by pool.cuh): the
// forward writes y and a one-byte argmax, the window position of each maximum; the backward
// gathers, each input element summing dy over the windows that chose it (no atomics, so the
// sums are bit-reproducible). A thread takes 8 adjacent channels of one pixel (16-byte
// accesses) where every row allows it, else one channel; it keeps its column (pixel within a
// row, channel group) and what follows from it in registers, and walks rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/args/pool.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/error.h"
#include "kernels/fast_divmod.h"

namespace engine::cuda {

// Channels per thread on the vector path. 8 for f32 too (two float4s a tap rather than one):
// the argmax then moves 8 bytes per access, each thread's index arithmetic serves twice the
// channels with two independent loads in flight, and both dtypes share one condition.
constexpr int kMaxPoolVec = 8;

// The kernels take the geometry (kernels/args/pool.h) by value, n being the images of one
// launch: whole images whose input and output each hold under 2^31 elements, so every index is
// 32-bit and split into coordinates by FastDivmod (a 64-bit `/` is a ~70-instruction
// subroutine on the GPU; six of them per element held the backward to a twelfth of a copy's
// bandwidth on an H200: bench/results/gpu-check-h200-2026-12-04-op-harness). The divisors,
// derived from the geometry on the host, in NHWC order: a row (n, h) splits into image and
// row by out_h (forward) or h (backward); a column (w, c) into pixel and channel group by the
// groups of a pixel, c / kVec, and in the backward a slot into phase and step by stride phases
// of ceil(w / stride) slots (see there).
struct MaxPoolDivisors {
  FastDivmod by_out_h, by_h, by_stride, by_phase_slots, by_groups;
};

// kVec channels of T as floats: 16-byte loads when kVec > 1 (one for 8 bf16, two for 8 f32),
// the source then 16-byte aligned.
template <int kVec, typename T>
__device__ __forceinline__ void load_group(const T* source, float (&values)[kVec]) {
  constexpr int kPerLoad = kVec == 1 ? 1 : static_cast<int>(16 / sizeof(T));
  static_assert(kVec % kPerLoad == 0, "a group is whole 16-byte loads");
#pragma unroll
  for (int part = 0; part < kVec / kPerLoad; ++part) {
    const Pack<T, kPerLoad> pack = reinterpret_cast<const Pack<T, kPerLoad>*>(source)[part];
#pragma unroll
    for (int k = 0; k < kPerLoad; ++k)
      values[part * kPerLoad + k] = to_f32(pack.v[k]);
  }
}

template <int kVec, typename T>
__device__ __forceinline__ void store_group(T* target, const float (&values)[kVec]) {
  constexpr int kPerLoad = kVec == 1 ? 1 : static_cast<int>(16 / sizeof(T));
#pragma unroll
  for (int part = 0; part < kVec / kPerLoad; ++part) {
    Pack<T, kPerLoad> pack;
#pragma unroll
    for (int k = 0; k < kPerLoad; ++k)
      pack.v[k] = from_f32<T>(values[part * kPerLoad + k]);
    reinterpret_cast<Pack<T, kPerLoad>*>(target)[part] = pack;
  }
}

// kVec argmax codes as 32-bit words, code k in byte k % 4 of word k / 4 (little-endian, as
// the GPU and the CPUs the emulator runs on): one 8-byte load for 8 codes.
template <int kVec>
struct CodeWords {
  uint32_t word[(kVec + 3) / 4];
};
template <int kVec>
__device__ __forceinline__ CodeWords<kVec> load_codes(const uint8_t* source) {
  CodeWords<kVec> codes;
  if constexpr (kVec == 1) {
    codes.word[0] = *source;
  } else {
    static_assert(kVec % 4 == 0, "codes are whole words");
    const auto pack = *reinterpret_cast<const Pack<uint32_t, kVec / 4>*>(source);
#pragma unroll
    for (int i = 0; i < kVec / 4; ++i)
      codes.word[i] = pack.v[i];
  }
  return codes;
}

// Grid: blockIdx.x walks the launch's rows of output (g.n * out_h, strided by
// gridDim.x), blockIdx.y * blockDim.x + threadIdx.x is the column: output pixel ow and channel
// group, group fastest (coalesced NHWC). As PyTorch: the argmax starts at the window's first
// valid position; a value wins when it is greater than the best so far or NaN (v != v), so
// NaN propagates. Positions are codes from the window's padded corner, row * kernel + col
// (kernels/args/pool.h).
template <typename T, int kVec>
__global__ void maxpool2d_forward_kernel(const T* x, T* y, uint8_t* argmax, MaxPool2dGeometry g,
                                         MaxPoolDivisors d) {
  const int32_t kernel = g.window.kernel, stride = g.window.stride, padding = g.window.padding;
  const int32_t rows = static_cast<int32_t>(g.n) * g.out_h;
  int32_t ow, group;
  d.by_groups.divmod(static_cast<int32_t>(blockIdx.y * blockDim.x + threadIdx.x), ow, group);
  if (ow >= g.out_w) return;
  const int32_t w0 = ow * stride - padding;
  const int32_t w_begin = w0 < 0 ? 0 : w0, w_end = w0 + kernel < g.w ? w0 + kernel : g.w;
  for (int32_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int32_t image, oh;
    d.by_out_h.divmod(row, image, oh);
    const int32_t h0 = oh * stride - padding;
    const int32_t h_begin = h0 < 0 ? 0 : h0, h_end = h0 + kernel < g.h ? h0 + kernel : g.h;
    const T* plane = x + image * g.h * g.w * g.c + group * kVec;
    float best[kVec];
    int32_t code[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      best[k] = -INFINITY;
      code[k] = (h_begin - h0) * kernel + w_begin - w0;
    }
    for (int32_t ih = h_begin; ih < h_end; ++ih) {
      const int32_t row_code = (ih - h0) * kernel - w0;  // + iw: the position's code
      for (int32_t iw = w_begin; iw < w_end; ++iw) {
        float v[kVec];
        load_group<kVec>(plane + (ih * g.w + iw) * g.c, v);
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          if (v[k] > best[k] || v[k] != v[k]) {
            best[k] = v[k];
            code[k] = row_code + iw;
          }
        }
      }
    }
    const int32_t at = (row * g.out_w + ow) * g.c + group * kVec;
    store_group<kVec>(y + at, best);
    Pack<uint8_t, kVec> codes;
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      codes.v[k] = static_cast<uint8_t>(code[k]);
    *reinterpret_cast<Pack<uint8_t, kVec>*>(argmax + at) = codes;
  }
}

// Grid: blockIdx.x walks the launch's rows of input (g.n * h, strided by gridDim.x),
// blockIdx.y * blockDim.x + threadIdx.x is the column: a slot and a channel group. Each input
// sums dy over the outputs whose window holds it and chose it, in row-major output order:
// deterministic, no atomics, and dx needs no zero fill. Columns take a row's inputs phase by
// phase (iw % stride): a row has stride phases of ceil(w / stride) slots, slot s of phase r
// being iw = s * stride + r (none past w). The lanes of a warp then share a phase, and with it
// how many windows hold their inputs (1 or 2 a direction for 3x3/2): in pixel order every warp
// ran the larger count, 3 windows for 2.25.
template <typename T, int kVec>
__global__ void maxpool2d_backward_kernel(const T* dy, const uint8_t* argmax, T* dx,
                                          MaxPool2dGeometry g, MaxPoolDivisors d) {
  const int32_t kernel = g.window.kernel, stride = g.window.stride, padding = g.window.padding;
  const int32_t rows = static_cast<int32_t>(g.n) * g.h;
  int32_t slot, group, phase, step;
  d.by_groups.divmod(static_cast<int32_t>(blockIdx.y * blockDim.x + threadIdx.x), slot, group);
  d.by_phase_slots.divmod(slot, phase, step);
  const int32_t iw = step * stride + phase;
  if (phase >= stride || iw >= g.w) return;
  // Outputs ow with ow * stride - padding <= iw <= ow * stride - padding + kernel - 1 (a
  // negative lower bound is 0: FastDivmod takes no negative dividend); rows alike.
  const int32_t ow_from = iw + padding - kernel + stride;
  const int32_t ow_begin = ow_from > 0 ? d.by_stride.divide(ow_from) : 0;
  const int32_t ow_last = d.by_stride.divide(iw + padding) + 1;
  const int32_t ow_end = ow_last < g.out_w ? ow_last : g.out_w;
  for (int32_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int32_t image, ih;
    d.by_h.divmod(row, image, ih);
    const int32_t oh_from = ih + padding - kernel + stride;
    const int32_t oh_begin = oh_from > 0 ? d.by_stride.divide(oh_from) : 0;
    const int32_t oh_last = d.by_stride.divide(ih + padding) + 1;
    const int32_t oh_end = oh_last < g.out_h ? oh_last : g.out_h;
    const int32_t plane = image * g.out_h * g.out_w * g.c + group * kVec;
    float sum[kVec] = {};
    for (int32_t oh = oh_begin; oh < oh_end; ++oh) {
      // This input's code in the window of (oh, ow): (ih - h0) * kernel + iw - w0.
      const int32_t row_code = (ih + padding - oh * stride) * kernel + iw + padding;
      for (int32_t ow = ow_begin; ow < ow_end; ++ow) {
        const int32_t at = plane + (oh * g.out_w + ow) * g.c;
        const int32_t position = row_code - ow * stride;
        // XOR with the position in every byte leaves a zero byte where the window chose this
        // input: one test a channel (extracting each byte to compare it took three).
        const CodeWords<kVec> codes = load_codes<kVec>(argmax + at);
        const uint32_t pattern = static_cast<uint32_t>(position) * 0x01010101u;
        float grad[kVec];
        load_group<kVec>(dy + at, grad);
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          if (((codes.word[k / 4] ^ pattern) & (0xffu << (8 * (k % 4)))) == 0) sum[k] += grad[k];
        }
      }
    }
    store_group<kVec>(dx + (row * g.w + iw) * g.c + group * kVec, sum);
  }
}

// ---------------------------------------------------------------------------------------
// Launchers

// The launch geometry of max pooling: grid.threads a block, a grid of at most grid.max_blocks
// rows (the kernels stride over the rest) by the tiles a row's columns take; and the most
// elements a launch indexes (whole images; 32-bit indices need under 2^31). The SIMT tests
// force all three. 128 threads: the stem's input row (112 pixels x 8 groups) is 7 tiles.
struct PoolLaunch {
  ElementwiseLaunch grid{128, 2048};
  int64_t max_launch_elements = INT32_MAX;
};

// An input row's slots in the backward: ceil(w / stride) for each of the stride phases.
inline int64_t maxpool_row_slots(const MaxPool2dGeometry& g) {
  const int64_t stride = g.window.stride;
  return (g.w + stride - 1) / stride * stride;
}

// The elements one image takes in a launch: its input's or its output's, the larger, the
// input's rows counted in the backward's slots (a multiple of the stride).
inline int64_t maxpool_image_elements(const MaxPool2dGeometry& g) {
  return std::max(g.h * maxpool_row_slots(g), int64_t{g.out_h} * g.out_w) * g.c;
}

// The kernels' divisors for kVec channels a thread (see MaxPoolDivisors).
inline MaxPoolDivisors maxpool_divisors(const MaxPool2dGeometry& g, int kVec) {
  return {
      .by_out_h = FastDivmod(g.out_h),
      .by_h = FastDivmod(g.h),
      .by_stride = FastDivmod(g.window.stride),
      .by_phase_slots = FastDivmod(static_cast<int32_t>(maxpool_row_slots(g) / g.window.stride)),
      .by_groups = FastDivmod(g.c / kVec)};
}

// Channels per thread: kMaxPoolVec when the channels are a multiple of it and the activations
// start 16-byte aligned and the argmax 8-byte aligned (then every group's accesses are: a
// pixel's channels, and an image's, are whole groups), else 1 (odd channel counts, views).
inline int maxpool_channels_per_thread(int64_t c, const void* activation, const void* other,
                                       const uint8_t* argmax) {
  auto at = [](const void* p, uintptr_t bytes) {
    return reinterpret_cast<uintptr_t>(p) % bytes == 0;
  };
  return c % kMaxPoolVec == 0 && at(activation, 16) && at(other, 16) && at(argmax, kMaxPoolVec)
             ? kMaxPoolVec
             : 1;
}

// The grid over `rows` rows of `columns` threads each.
inline dim3 maxpool_grid(int64_t rows, int64_t columns, const ElementwiseLaunch& geometry) {
  const int64_t tiles = (columns + geometry.threads - 1) / geometry.threads;
  ENGINE_REQUIRE(tiles <= 65535, "maxpool2d: a row of " + std::to_string(columns) +
                                     " threads is over 65535 blocks of " +
                                     std::to_string(geometry.threads));
  return dim3(static_cast<unsigned>(std::clamp<int64_t>(rows, 1, geometry.max_blocks)),
              static_cast<unsigned>(tiles));
}

// Calls run(first_image, images) for runs of whole images that each fit a launch: `images` is
// the geometry of the run (n = its images).
template <typename Launch>
void for_each_image_run(const MaxPool2dGeometry& g, int64_t max_launch_elements, Launch&& run) {
  const int64_t per_image = maxpool_image_elements(g);
  if (g.n == 0 || per_image == 0) return;
  ENGINE_REQUIRE(per_image <= max_launch_elements,
                 "maxpool2d: one image of " + std::to_string(g.h) + "x" + std::to_string(g.w) +
                     "x" + std::to_string(g.c) + " holds " + std::to_string(per_image) +
                     " elements, over the " + std::to_string(max_launch_elements) +
                     " a launch indexes");
  const int64_t images_per_launch = std::min(g.n, max_launch_elements / per_image);
  for (int64_t first = 0; first < g.n; first += images_per_launch) {
    MaxPool2dGeometry images = g;
    images.n = std::min(images_per_launch, g.n - first);
    run(first, images);
  }
}

// Calls fn.template operator()<kVec>() with the channels per thread as a constant.
template <typename Fn>
void dispatch_maxpool_vector(int width, Fn&& fn) {
  if (width == kMaxPoolVec) {
    fn.template operator()<kMaxPoolVec>();
  } else {
    fn.template operator()<1>();
  }
}

// The entry points (declared in pool.h) with their launch geometry: the SIMT tests force
// grids and launch sizes through it.
inline void maxpool2d_forward(const MaxPool2dForwardArgs& args, cudaStream_t stream,
                              const PoolLaunch& geometry) {
  const MaxPool2dGeometry& g = args.geometry;
  const int64_t in_image = g.image_numel(), out_image = g.out_image_numel();
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const int width = maxpool_channels_per_thread(g.c, args.x, args.y, args.argmax);
    dispatch_maxpool_vector(width, [&]<int kVec>() {
      for_each_image_run(
          g, geometry.max_launch_elements, [&](int64_t first, const MaxPool2dGeometry& run) {
            launch(
                maxpool2d_forward_kernel<T, kVec>,
                maxpool_grid(run.n * run.out_h, int64_t{run.out_w} * run.c / kVec, geometry.grid),
                dim3(geometry.grid.threads), 0, stream,
                static_cast<const T*>(args.x) + first * in_image,
                static_cast<T*>(args.y) + first * out_image, args.argmax + first * out_image, run,
                maxpool_divisors(run, kVec));
          });
    });
  });
}

inline void maxpool2d_backward(const MaxPool2dBackwardArgs& args, cudaStream_t stream,
                               const PoolLaunch& geometry) {
  const MaxPool2dGeometry& g = args.geometry;
  const int64_t in_image = g.image_numel(), out_image = g.out_image_numel();
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const int width = maxpool_channels_per_thread(g.c, args.dy, args.dx, args.argmax);
    dispatch_maxpool_vector(width, [&]<int kVec>() {
      for_each_image_run(
          g, geometry.max_launch_elements, [&](int64_t first, const MaxPool2dGeometry& run) {
            launch(
                maxpool2d_backward_kernel<T, kVec>,
                maxpool_grid(run.n * run.h, maxpool_row_slots(run) * run.c / kVec, geometry.grid),
                dim3(geometry.grid.threads), 0, stream,
                static_cast<const T*>(args.dy) + first * out_image, args.argmax + first * out_image,
                static_cast<T*>(args.dx) + first * in_image, run, maxpool_divisors(run, kVec));
          });
    });
  });
}

}  // namespace engine::cuda
