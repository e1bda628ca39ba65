// The implicit-GEMM gathers of a convolution (NHWC input, KRSC filters): GEMM operands that
// read the tensors in place, so no im2col matrix is ever materialized on the GPU.
//   forward          C[pixel][k_out]  = sum_{rsc} im2col(x)[pixel][rsc] * w[k_out][rsc]
//   backward data    C[in_px][c]      = sum_{rs,k} dy[out_px(in_px, rs)][k] * w[k][rs][c]
//   backward filter  C[k_out][rsc]    = sum_{pixel} dy[pixel][k_out] * im2col(x)[pixel][rsc]
// Each splits its row and k indices into coordinates once (gemm_operands.cuh: Row, K), with
// divisors prepared on the host (FastDivmod), so a loaded element costs an add, two bounds
// checks and the load.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/conv_shape.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/gemm_operands.cuh"
#include "kernels/fast_divmod.h"

namespace engine::cuda {

// The shape as 32-bit sizes and the divisors the gathers need.
struct ConvGeometry {
  int32_t in_h, in_w, in_channels, out_h, out_w, out_channels;
  int32_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, taps;
  FastDivmod by_in_h, by_in_w, by_in_channels, by_out_h, by_out_w, by_out_channels, by_kernel_w,
      by_stride_h, by_stride_w;

  ConvGeometry() = default;
  explicit ConvGeometry(const Conv2dShape& s)
      : in_h(static_cast<int32_t>(s.in_h)),
        in_w(static_cast<int32_t>(s.in_w)),
        in_channels(static_cast<int32_t>(s.in_channels)),
        out_h(static_cast<int32_t>(s.out_h())),
        out_w(static_cast<int32_t>(s.out_w())),
        out_channels(static_cast<int32_t>(s.out_channels)),
        stride_h(static_cast<int32_t>(s.stride_h)),
        stride_w(static_cast<int32_t>(s.stride_w)),
        pad_h(static_cast<int32_t>(s.pad_h)),
        pad_w(static_cast<int32_t>(s.pad_w)),
        dilation_h(static_cast<int32_t>(s.dilation_h)),
        dilation_w(static_cast<int32_t>(s.dilation_w)),
        taps(static_cast<int32_t>(s.kernel_h * s.kernel_w)),
        by_in_h(in_h),
        by_in_w(in_w),
        by_in_channels(in_channels),
        by_out_h(out_h),
        by_out_w(out_w),
        by_out_channels(out_channels),
        by_kernel_w(static_cast<int32_t>(s.kernel_w)),
        by_stride_h(stride_h),
        by_stride_w(stride_w) {}
};

// An output pixel's input window: its top-left corner (h0, w0), maybe in the padding, and
// the offset of that corner in x (64-bit, maybe negative: it is only used inside the image).
struct WindowCursor {
  int64_t offset;
  int32_t h0, w0;
};

// One (tap, channel) of im2col's columns: the tap's displacement and its offset from the
// window's corner.
struct TapCursor {
  int64_t offset;
  int32_t dh, dw;
};

__device__ __forceinline__ WindowCursor window_cursor(const ConvGeometry& g, int32_t pixel) {
  int32_t rest, q, n, p;
  g.by_out_w.divmod(pixel, rest, q);
  g.by_out_h.divmod(rest, n, p);
  const int32_t h0 = p * g.stride_h - g.pad_h, w0 = q * g.stride_w - g.pad_w;
  return {((static_cast<int64_t>(n) * g.in_h + h0) * g.in_w + w0) * g.in_channels, h0, w0};
}

__device__ __forceinline__ TapCursor tap_cursor(const ConvGeometry& g, int32_t tap_channel) {
  int32_t tap, c, r, s;
  g.by_in_channels.divmod(tap_channel, tap, c);
  g.by_kernel_w.divmod(tap, r, s);
  const int32_t dh = r * g.dilation_h, dw = s * g.dilation_w;
  return {(static_cast<int64_t>(dh) * g.in_w + dw) * g.in_channels + c, dh, dw};
}

__device__ __forceinline__ bool inside_image(const ConvGeometry& g, const WindowCursor& window,
                                             const TapCursor& tap) {
  const int32_t h = window.h0 + tap.dh, w = window.w0 + tap.dw;
  return static_cast<uint32_t>(h) < static_cast<uint32_t>(g.in_h) &&
         static_cast<uint32_t>(w) < static_cast<uint32_t>(g.in_w);
}

// A gather's element at offset `at` of data, or 0 (no vector source) where at < 0: the offset
// of a (row, k) that reads zero (a stride gap, a border).
template <typename T>
__device__ __forceinline__ T load_at(const T* data, int64_t at) {
  return at < 0 ? from_f32<T>(0.f) : data[at];
}
template <typename T>
__device__ __forceinline__ const T* source_at(const T* data, int64_t at) {
  return at < 0 ? nullptr : data + at;
}

// im2col(x)[pixel][tap_channel], 0 in the padding; the vector source: where that and the
// next channels of the same tap are (in_channels a multiple of the width), nullptr in the
// padding.
template <typename T>
__device__ __forceinline__ T im2col_load(const T* x, const ConvGeometry& g,
                                         const WindowCursor& window, const TapCursor& tap) {
  return inside_image(g, window, tap) ? x[window.offset + tap.offset] : from_f32<T>(0.f);
}
template <typename T>
__device__ __forceinline__ const T* im2col_vector_source(const T* x, const ConvGeometry& g,
                                                         const WindowCursor& window,
                                                         const TapCursor& tap) {
  return inside_image(g, window, tap) ? x + window.offset + tap.offset : nullptr;
}

// im2col(x) as a GEMM operand: rows are output pixels and k the (tap, channel) columns, the
// forward's A (kPixelRows; channels are innermost, so contiguous along K), or the transpose,
// the backward filter's B (rows are (tap, channel): consecutive rows consecutive channels).
template <typename T, bool kPixelRows>
struct Im2colOperand {
  static constexpr bool kContiguousAlongK = kPixelRows;
  using Row = std::conditional_t<kPixelRows, WindowCursor, TapCursor>;
  using K = std::conditional_t<kPixelRows, TapCursor, WindowCursor>;
  const T* x;
  ConvGeometry g;
  Im2colOperand(const T* x_, const Conv2dShape& shape) : x(x_), g(shape) {}
  __device__ __forceinline__ Row row(int32_t r) const {
    if constexpr (kPixelRows) {
      return window_cursor(g, r);
    } else {
      return tap_cursor(g, r);
    }
  }
  __device__ __forceinline__ K k(int32_t k_index) const {
    if constexpr (kPixelRows) {
      return tap_cursor(g, k_index);
    } else {
      return window_cursor(g, k_index);
    }
  }
  __device__ __forceinline__ T load(const Row& r, const K& k_cursor) const {
    if constexpr (kPixelRows) {
      return im2col_load(x, g, r, k_cursor);
    } else {
      return im2col_load(x, g, k_cursor, r);
    }
  }
  __device__ __forceinline__ const T* vector_source(const Row& r, const K& k_cursor) const {
    if constexpr (kPixelRows) {
      return im2col_vector_source(x, g, r, k_cursor);
    } else {
      return im2col_vector_source(x, g, k_cursor, r);
    }
  }
  __device__ __forceinline__ const T* origin() const { return x; }
  bool vectorizable(int width) const { return vector_loads_fit(x, width, g.in_channels); }
};

template <typename T>
using ConvForwardInput = Im2colOperand<T, true>;
template <typename T>
using ConvFilterGradInput = Im2colOperand<T, false>;

// Backward-data A: (input pixel, (r, s, k_out)) = dy at the output pixel whose tap (r, s)
// reads the input pixel, 0 when no output pixel does (stride gaps, borders).
template <typename T>
struct ConvDataGradOutput {
  static constexpr bool kContiguousAlongK = true;
  // The input pixel shifted by the padding, and its image's offset in dy.
  struct Row {
    int64_t image_offset;
    int32_t h, w;
  };
  struct K {
    int32_t dh, dw, k_out;
  };
  const T* dy;
  ConvGeometry g;
  ConvDataGradOutput(const T* dy_, const Conv2dShape& shape) : dy(dy_), g(shape) {}
  __device__ __forceinline__ Row row(int32_t in_pixel) const {
    int32_t rest, w, n, h;
    g.by_in_w.divmod(in_pixel, rest, w);
    g.by_in_h.divmod(rest, n, h);
    return {static_cast<int64_t>(n) * g.out_h * g.out_w * g.out_channels, h + g.pad_h, w + g.pad_w};
  }
  __device__ __forceinline__ K k(int32_t k_index) const {
    int32_t tap, k_out, r, s;
    g.by_out_channels.divmod(k_index, tap, k_out);
    g.by_kernel_w.divmod(tap, r, s);
    return {r * g.dilation_h, s * g.dilation_w, k_out};
  }
  // The offset in dy of (pixel, tap), or -1 where no output pixel's tap reads the pixel.
  __device__ __forceinline__ int64_t offset(const Row& pixel, const K& tap) const {
    const int32_t p_offset = pixel.h - tap.dh, q_offset = pixel.w - tap.dw;
    if (p_offset < 0 || q_offset < 0) return -1;
    int32_t p, p_rest, q, q_rest;
    g.by_stride_h.divmod(p_offset, p, p_rest);
    g.by_stride_w.divmod(q_offset, q, q_rest);
    if (p_rest != 0 || q_rest != 0 || p >= g.out_h || q >= g.out_w) return -1;
    return pixel.image_offset + (static_cast<int64_t>(p) * g.out_w + q) * g.out_channels +
           tap.k_out;
  }
  __device__ __forceinline__ T load(const Row& pixel, const K& tap) const {
    return load_at(dy, offset(pixel, tap));
  }
  __device__ __forceinline__ const T* vector_source(const Row& pixel, const K& tap) const {
    return source_at(dy, offset(pixel, tap));
  }
  __device__ __forceinline__ const T* origin() const { return dy; }
  bool vectorizable(int width) const { return vector_loads_fit(dy, width, g.out_channels); }
};

// Backward-data B: (c, (r, s, k_out)) = w[k_out][r][s][c]; contiguous along c.
template <typename T>
struct ConvDataGradFilter {
  static constexpr bool kContiguousAlongK = false;
  using Row = int32_t;  // c
  using K = int64_t;    // offset of w[k_out][r][s][0]
  const T* w;
  ConvGeometry g;
  ConvDataGradFilter(const T* w_, const Conv2dShape& shape) : w(w_), g(shape) {}
  __device__ __forceinline__ Row row(int32_t c) const { return c; }
  __device__ __forceinline__ K k(int32_t k_index) const {
    int32_t tap, k_out;
    g.by_out_channels.divmod(k_index, tap, k_out);
    return (static_cast<int64_t>(k_out) * g.taps + tap) * g.in_channels;
  }
  __device__ __forceinline__ T load(Row c, K offset) const { return w[offset + c]; }
  __device__ __forceinline__ const T* vector_source(Row c, K offset) const {
    return w + offset + c;
  }
  __device__ __forceinline__ const T* origin() const { return w; }
  bool vectorizable(int width) const { return vector_loads_fit(w, width, g.in_channels); }
};

}  // namespace engine::cuda
