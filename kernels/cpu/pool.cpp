#include "kernels/cpu/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vector_loops.h"

namespace engine::cpu {
namespace {

// Calls body(image, first_channel, channels) for every image and block of at most 64
// channels, in parallel when `work` (elements touched) is large: a batch of 8 images alone
// would leave threads idle, and 64 channels fit a stack accumulator.
constexpr int64_t kChannelBlock = 64;
template <typename Body>
void for_each_image_channel_block(int64_t n, int64_t c, int64_t work, Body&& body) {
  const int64_t blocks = (c + kChannelBlock - 1) / kChannelBlock;
  [[maybe_unused]] const bool parallel = work >= kParallelThreshold;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t job = 0; job < n * blocks; ++job) {
    const int64_t c0 = job % blocks * kChannelBlock;
    body(job / blocks, c0, std::min(kChannelBlock, c - c0));
  }
}

// f32 backward as a scatter: dx = 0, then each output adds its gradient at its argmax, per
// (image, block of channels) on one thread in row-major output order. That is the order
// the gather below (and the CUDA kernel) sums in, so the results are the same bits, at a
// third of the gather's time (it visits every window of every input pixel).
void maxpool2d_backward_scatter(const float* dy, const uint8_t* argmax, float* dx,
                                MaxPool2dGeometry g) {
  const int64_t n = g.n, w = g.w, c = g.c, out_w = g.out_w;
  const int64_t pixels = int64_t{g.h} * w, out_pixels = int64_t{g.out_h} * out_w;
  const int64_t kernel = g.window.kernel, stride = g.window.stride, padding = g.window.padding;
  // A window position's pixel offset from the window's padded corner, by its code.
  std::vector<int64_t> offset(static_cast<size_t>(kernel * kernel));
  for (size_t code = 0; code < offset.size(); ++code)
    offset[code] = static_cast<int64_t>(code) / kernel * w + static_cast<int64_t>(code) % kernel;
  for_each_image_channel_block(n, c, n * pixels * c, [&](int64_t image, int64_t c0, int64_t width) {
    float* image_dx = dx + image * pixels * c + c0;
    for (int64_t p = 0; p < pixels; ++p)
      std::fill(image_dx + p * c, image_dx + p * c + width, 0.f);
    const int64_t first = image * out_pixels * c + c0;
    for (int64_t op = 0; op < out_pixels; ++op) {
      const int64_t oh = op / out_w, ow = op % out_w;
      const int64_t corner = (oh * stride - padding) * w + ow * stride - padding;
      const float* grad = dy + first + op * c;
      const uint8_t* code = argmax + first + op * c;
      for (int64_t ch = 0; ch < width; ++ch)
        image_dx[(corner + offset[code[ch]]) * c + ch] += grad[ch];
    }
  });
}

template <typename T>
__attribute__((always_inline)) inline void maxpool_forward_body(const T* in, T* out,
                                                                uint8_t* argmax,
                                                                MaxPool2dGeometry g, int64_t begin,
                                                                int64_t end) {
  const int64_t h = g.h, w = g.w, c = g.c, out_h = g.out_h, out_w = g.out_w;
  const int64_t kernel = g.window.kernel, stride = g.window.stride, padding = g.window.padding;
  // One output pixel per iteration; channels innermost, so every load is contiguous, in
  // blocks of 64 channels whose running maxima stay in registers or the stack (a heap
  // vector per pixel had cost more than the pooling itself).
  constexpr int64_t kBlock = 64;
  for (int64_t pixel = begin; pixel < end; ++pixel) {
    const int64_t image = pixel / (out_h * out_w);
    const int64_t oh = pixel / out_w % out_h, ow = pixel % out_w;
    const int64_t h0 = oh * stride - padding, w0 = ow * stride - padding;
    const int64_t h_begin = std::max<int64_t>(h0, 0), h_end = std::min(h0 + kernel, h);
    const int64_t w_begin = std::max<int64_t>(w0, 0), w_end = std::min(w0 + kernel, w);
    for (int64_t c0 = 0; c0 < c; c0 += kBlock) {
      const int64_t width = std::min(kBlock, c - c0);
      float best[kBlock];
      int32_t index[kBlock];
      // As PyTorch: the index starts at the window's first valid position, and a value
      // wins when it is greater or NaN. Positions are codes within the window (kernels/
      // args/pool.h), kept in int32 lanes as wide as the floats' so the selects vectorize.
      for (int64_t ch = 0; ch < width; ++ch) {
        best[ch] = -std::numeric_limits<float>::infinity();
        index[ch] = static_cast<int32_t>((h_begin - h0) * kernel + w_begin - w0);
      }
      for (int64_t ih = h_begin; ih < h_end; ++ih) {
        for (int64_t iw = w_begin; iw < w_end; ++iw) {
          const T* row = in + ((image * h + ih) * w + iw) * c + c0;
          const auto position = static_cast<int32_t>((ih - h0) * kernel + iw - w0);
          for (int64_t ch = 0; ch < width; ++ch) {
            const float v = to_float(row[ch]);
            const bool take = v > best[ch] || v != v;  // selects, so the loop vectorizes
            best[ch] = take ? v : best[ch];
            index[ch] = take ? position : index[ch];
          }
        }
      }
      for (int64_t ch = 0; ch < width; ++ch) {
        out[pixel * c + c0 + ch] = from_float<T>(best[ch]);
        argmax[pixel * c + c0 + ch] = static_cast<uint8_t>(index[ch]);
      }
    }
  }
}

// Output pixels [begin, end) of the forward, compiled for the widest vectors vector_isa()
// allows (kernels/cpu/vector_loops.h): the same source, so the same results, 16 channels per
// compare instead of 4 at AVX-512 (docs/kernel-tuning.md: what it saved).
template <typename T>
void maxpool_forward_pixels(const T* in, T* out, uint8_t* argmax, MaxPool2dGeometry g,
                            int64_t begin, int64_t end) {
  run_loops_at(vector_isa(), [&] { maxpool_forward_body(in, out, argmax, g, begin, end); });
}

// Input pixels [begin, end) of the bf16 backward, a gather: each input pixel sums in fp32 the
// gradients of the outputs whose windows contain it and chose it, in row-major output order,
// and rounds once. Its operands are parameters, not a closure's captures, so the channel loop
// vectorizes (through the closure of a per-pixel parallel_for the compiler could not rule out
// aliasing, and the scalar loop took 4.6 ms of a 32 px batch-64 step on one Zen 4 core).
template <typename T>
__attribute__((always_inline)) inline void maxpool_backward_gather_body(
    const T* grad_out, const uint8_t* argmax, T* grad_in, MaxPool2dGeometry g, int64_t begin,
    int64_t end) {
  const int64_t h = g.h, w = g.w, c = g.c, out_h = g.out_h, out_w = g.out_w;
  const int64_t kernel = g.window.kernel, stride = g.window.stride, padding = g.window.padding;
  for (int64_t pixel = begin; pixel < end; ++pixel) {
    const int64_t image = pixel / (h * w);
    const int64_t ih = pixel / w % h, iw = pixel % w;
    const int64_t oh_begin = std::max<int64_t>(0, (ih + padding - kernel + stride) / stride);
    const int64_t oh_end = std::min(out_h, (ih + padding) / stride + 1);
    const int64_t ow_begin = std::max<int64_t>(0, (iw + padding - kernel + stride) / stride);
    const int64_t ow_end = std::min(out_w, (iw + padding) / stride + 1);
    // Channels in blocks with a stack accumulator: a heap vector per input pixel cost more
    // than the gather itself.
    for (int64_t c0 = 0; c0 < c; c0 += kChannelBlock) {
      const int64_t width = std::min(kChannelBlock, c - c0);
      float sum[kChannelBlock] = {};
      for (int64_t oh = oh_begin; oh < oh_end; ++oh) {
        for (int64_t ow = ow_begin; ow < ow_end; ++ow) {
          // This input's code in the window of output (oh, ow).
          const auto position = static_cast<uint8_t>((ih + padding - oh * stride) * kernel + iw +
                                                     padding - ow * stride);
          const int64_t at = ((image * out_h + oh) * out_w + ow) * c + c0;
          for (int64_t ch = 0; ch < width; ++ch) {
            const float grad = to_float(grad_out[at + ch]);
            sum[ch] += argmax[at + ch] == position ? grad : 0.f;
          }
        }
      }
      for (int64_t ch = 0; ch < width; ++ch)
        grad_in[pixel * c + c0 + ch] = from_float<T>(sum[ch]);
    }
  }
}

template <typename T>
void maxpool_backward_gather_pixels(const T* grad_out, const uint8_t* argmax, T* grad_in,
                                    MaxPool2dGeometry g, int64_t begin, int64_t end) {
  run_loops_at(vector_isa(),
               [&] { maxpool_backward_gather_body(grad_out, argmax, grad_in, g, begin, end); });
}

}  // namespace

void maxpool2d_forward(const MaxPool2dForwardArgs& args) {
  const MaxPool2dGeometry& g = args.geometry;
  const int64_t c = g.c;
  dispatch_dtype(args.dtype, [&]<typename T>() {
    parallel_for_ranges(g.n * g.out_image_numel(), [&](int64_t begin, int64_t end) {
      // The threads split the elements (the threshold counts work), each taking whole pixels.
      maxpool_forward_pixels(static_cast<const T*>(args.x), static_cast<T*>(args.y), args.argmax, g,
                             begin / c, end / c);
    });
  });
}

void maxpool2d_backward(const MaxPool2dBackwardArgs& args) {
  const MaxPool2dGeometry& g = args.geometry;
  const int64_t c = g.c;
  const uint8_t* argmax = args.argmax;
  if (args.dtype == DType::f32) {
    maxpool2d_backward_scatter(static_cast<const float*>(args.dy), argmax,
                               static_cast<float*>(args.dx), g);
    return;
  }
  dispatch_dtype(args.dtype, [&]<typename T>() {
    parallel_for_ranges(g.n * g.image_numel(), [&](int64_t begin, int64_t end) {
      // The threads split the elements (the threshold counts work), each taking whole pixels.
      maxpool_backward_gather_pixels(static_cast<const T*>(args.dy), argmax,
                                     static_cast<T*>(args.dx), g, begin / c, end / c);
    });
  });
}

void global_avgpool_forward(const GlobalAvgPoolForwardArgs& args) {
  const int64_t n = args.n, spatial = args.spatial, c = args.c;
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* in = static_cast<const T*>(args.x);
    T* out = static_cast<T*>(args.y);
    // Per (image, block of channels): over images alone a batch smaller than the thread
    // count would leave threads idle.
    for_each_image_channel_block(
        n, c, n * spatial * c, [&](int64_t image, int64_t c0, int64_t width) {
          float sum[kChannelBlock] = {};
          for (int64_t s = 0; s < spatial; ++s) {
            const T* row = in + (image * spatial + s) * c + c0;
            for (int64_t ch = 0; ch < width; ++ch)
              sum[ch] += to_float(row[ch]);
          }
          for (int64_t ch = 0; ch < width; ++ch)
            out[image * c + c0 + ch] = from_float<T>(sum[ch] / static_cast<float>(spatial));
        });
  });
}

void global_avgpool_backward(const GlobalAvgPoolBackwardArgs& args) {
  const int64_t n = args.n, spatial = args.spatial, c = args.c;
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* grad_out = static_cast<const T*>(args.dy);
    T* grad_in = static_cast<T*>(args.dx);
    // Per image, dy / spatial once, then copied to every position (no division per element).
    std::vector<T> scaled(static_cast<size_t>(n * c));
    for (int64_t i = 0; i < n * c; ++i)
      scaled[i] = from_float<T>(to_float(grad_out[i]) / static_cast<float>(spatial));
    parallel_for(n * spatial, [&](int64_t row) {
      const T* source = scaled.data() + row / spatial * c;
      std::copy(source, source + c, grad_in + row * c);
    });
  });
}

}  // namespace engine::cpu
