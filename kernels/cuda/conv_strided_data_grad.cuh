// The input gradient of a strided convolution without multiplying the zeros the stride puts
// between dy's pixels. The general gather (ConvDataGradOutput) runs over every input pixel
// and every tap, and at stride 2 three quarters of those (pixel, tap) pairs read no output
// pixel: products of zeros, and two divisions by the stride per element loaded.
//   1x1, no padding: only pixels on the stride's grid get a gradient, so one GEMM over dy's
//     pixels whose store fills each stride cell (StoreToStrideCells).
//   kernel >= stride (3x3/2): the input pixels split into stride_h x stride_w phases by
//     (h + pad) mod stride; the pixels of one phase are read by the same taps, every
//     stride-th one, so each phase is a dense convolution of dy with those taps, one GEMM
//     (at 3x3/2 the phases have 1, 2, 2 and 4 taps: 9/4 taps a pixel instead of 9).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/conv_shape.h"
#include "kernels/cuda/conv_operands.cuh"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/gemm_epilogue.cuh"
#include "kernels/fast_divmod.h"

namespace engine::cuda {

// ---------------------------------------------------------------------------------------
// 1x1 with a stride

inline bool is_strided_pointwise(const Conv2dShape& s) {
  return s.kernel_h == 1 && s.kernel_w == 1 && s.pad_h == 0 && s.pad_w == 0 &&
         (s.stride_h > 1 || s.stride_w > 1);
}

// Row m of the GEMM over dy's pixels (p, q) goes to input pixel (p * stride, q * stride), and
// zeros to the rest of its stride cell inside the image: the cells tile the input, so every
// element of dx is written once.
template <typename TOut>
struct StoreToStrideCells {
  static constexpr int kVectorWidth = vector_width<TOut>();
  TOut* dx;
  ConvGeometry g;
  // put(pixel, is the corner) for each pixel of row m's cell, at channel n.
  template <typename Put>
  __device__ __forceinline__ void each_pixel(int64_t m, int64_t n, Put put) const {
    int32_t rest, q, image, p;
    g.by_out_w.divmod(static_cast<int32_t>(m), rest, q);
    g.by_out_h.divmod(rest, image, p);
    const int32_t h0 = p * g.stride_h, w0 = q * g.stride_w;
    TOut* cell =
        dx + ((static_cast<int64_t>(image) * g.in_h + h0) * g.in_w + w0) * g.in_channels + n;
    for (int32_t dh = 0; dh < g.stride_h && h0 + dh < g.in_h; ++dh) {
      for (int32_t dw = 0; dw < g.stride_w && w0 + dw < g.in_w; ++dw)
        put(cell + (static_cast<int64_t>(dh) * g.in_w + dw) * g.in_channels, dh == 0 && dw == 0);
    }
  }
  __device__ __forceinline__ void operator()(int /*split*/, int64_t m, int64_t n, float acc) const {
    each_pixel(m, n, [&](TOut* at, bool corner) { *at = from_f32<TOut>(corner ? acc : 0.f); });
  }
  bool vector_fits() const {
    return all_aligned<kVectorWidth>(dx) && g.in_channels % kVectorWidth == 0;
  }
  __device__ __forceinline__ void store_vector(int /*split*/, int64_t m, int64_t n,
                                               const float (&acc)[kVectorWidth]) const {
    Vector16<TOut> value, zero;
#pragma unroll
    for (int i = 0; i < kVectorWidth; ++i) {
      value.v[i] = from_f32<TOut>(acc[i]);
      zero.v[i] = from_f32<TOut>(0.f);
    }
    each_pixel(m, n, [&](TOut* at, bool corner) {
      *reinterpret_cast<Vector16<TOut>*>(at) = corner ? value : zero;
    });
  }
};

// ---------------------------------------------------------------------------------------
// Stride phases

// Every phase has a tap (kernel >= stride in both directions) and taps are adjacent (no
// dilation); 1x1 strided layers take the cells above.
inline bool splits_into_stride_phases(const Conv2dShape& s) {
  return (s.stride_h > 1 || s.stride_w > 1) && s.dilation_h == 1 && s.dilation_w == 1 &&
         s.kernel_h >= s.stride_h && s.kernel_w >= s.stride_w && !is_strided_pointwise(s);
}

// One direction (rows or columns) of a phase: input positions first + i * stride for i in
// [0, count), read by taps tap0 + t * stride for t in [0, taps), from dy position
// top + i - t.
struct PhaseAxis {
  int32_t first, count, tap0, taps, top;
};

inline PhaseAxis phase_axis(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                            int64_t residue) {
  // The input positions with (x + pad) % stride == residue.
  const int64_t first = ((residue - pad) % stride + stride) % stride;
  const int64_t count = first < in ? (in - first + stride - 1) / stride : 0;
  return {static_cast<int32_t>(first), static_cast<int32_t>(count), static_cast<int32_t>(residue),
          static_cast<int32_t>((kernel - residue + stride - 1) / stride),
          static_cast<int32_t>((first + pad - residue) / stride)};
}

// A phase: its rows and columns, and the divisors its operands split indices by.
struct StridePhase {
  PhaseAxis rows, cols;
  int32_t out_h, out_w, out_channels, in_h, in_w, in_channels, kernel_h, kernel_w;
  int32_t stride_h, stride_w;
  FastDivmod by_cols, by_rows, by_out_channels, by_taps_w;
  int64_t pixels(int64_t batch) const { return batch * rows.count * cols.count; }
  int64_t taps() const { return static_cast<int64_t>(rows.taps) * cols.taps; }
};

inline std::vector<StridePhase> stride_phases(const Conv2dShape& s) {
  std::vector<StridePhase> phases;
  for (int64_t a = 0; a < s.stride_h; ++a) {
    for (int64_t b = 0; b < s.stride_w; ++b) {
      StridePhase p;
      p.rows = phase_axis(s.in_h, s.kernel_h, s.stride_h, s.pad_h, a);
      p.cols = phase_axis(s.in_w, s.kernel_w, s.stride_w, s.pad_w, b);
      p.out_h = static_cast<int32_t>(s.out_h());
      p.out_w = static_cast<int32_t>(s.out_w());
      p.out_channels = static_cast<int32_t>(s.out_channels);
      p.in_h = static_cast<int32_t>(s.in_h);
      p.in_w = static_cast<int32_t>(s.in_w);
      p.in_channels = static_cast<int32_t>(s.in_channels);
      p.kernel_h = static_cast<int32_t>(s.kernel_h);
      p.kernel_w = static_cast<int32_t>(s.kernel_w);
      p.stride_h = static_cast<int32_t>(s.stride_h);
      p.stride_w = static_cast<int32_t>(s.stride_w);
      p.by_cols = FastDivmod(p.cols.count > 0 ? p.cols.count : 1);
      p.by_rows = FastDivmod(p.rows.count > 0 ? p.rows.count : 1);
      p.by_out_channels = FastDivmod(p.out_channels);
      p.by_taps_w = FastDivmod(p.cols.taps);
      phases.push_back(p);
    }
  }
  return phases;
}

// A phase's A: (phase pixel, (t, u, k_out)) = dy at (top_row + i - t, top_col + j - u), k_out;
// 0 outside dy. Contiguous along k (channels innermost), as ConvDataGradOutput, with no
// division by the stride.
template <typename T>
struct PhaseDataGradOutput {
  static constexpr bool kContiguousAlongK = true;
  struct Row {
    int64_t image_offset;
    int32_t p, q;  // dy position read by the phase's first tap
  };
  struct K {
    int32_t t, u, k_out;
  };
  const T* dy;
  StridePhase phase;
  __device__ __forceinline__ Row row(int32_t pixel) const {
    int32_t rest, j, image, i;
    phase.by_cols.divmod(pixel, rest, j);
    phase.by_rows.divmod(rest, image, i);
    return {static_cast<int64_t>(image) * phase.out_h * phase.out_w * phase.out_channels,
            phase.rows.top + i, phase.cols.top + j};
  }
  __device__ __forceinline__ K k(int32_t k_index) const {
    int32_t tap, k_out, t, u;
    phase.by_out_channels.divmod(k_index, tap, k_out);
    phase.by_taps_w.divmod(tap, t, u);
    return {t, u, k_out};
  }
  __device__ __forceinline__ int64_t offset(const Row& pixel, const K& tap) const {
    const int32_t p = pixel.p - tap.t, q = pixel.q - tap.u;
    if (static_cast<uint32_t>(p) >= static_cast<uint32_t>(phase.out_h) ||
        static_cast<uint32_t>(q) >= static_cast<uint32_t>(phase.out_w)) {
      return -1;
    }
    return pixel.image_offset + (static_cast<int64_t>(p) * phase.out_w + q) * phase.out_channels +
           tap.k_out;
  }
  __device__ __forceinline__ T load(const Row& pixel, const K& tap) const {
    return load_at(dy, offset(pixel, tap));
  }
  __device__ __forceinline__ const T* vector_source(const Row& pixel, const K& tap) const {
    return source_at(dy, offset(pixel, tap));
  }
  __device__ __forceinline__ const T* origin() const { return dy; }
  bool vectorizable(int width) const { return vector_loads_fit(dy, width, phase.out_channels); }
};

// A phase's B: (c, (t, u, k_out)) = w[k_out][tap0_h + t * stride_h][tap0_w + u * stride_w][c];
// contiguous along c.
template <typename T>
struct PhaseDataGradFilter {
  static constexpr bool kContiguousAlongK = false;
  using Row = int32_t;  // c
  using K = int64_t;    // offset of the filter's (k_out, r, s, 0)
  const T* w;
  StridePhase phase;
  __device__ __forceinline__ Row row(int32_t c) const { return c; }
  __device__ __forceinline__ K k(int32_t k_index) const {
    int32_t tap, k_out, t, u;
    phase.by_out_channels.divmod(k_index, tap, k_out);
    phase.by_taps_w.divmod(tap, t, u);
    const int32_t r = phase.rows.tap0 + t * phase.stride_h;
    const int32_t s = phase.cols.tap0 + u * phase.stride_w;
    return ((static_cast<int64_t>(k_out) * phase.kernel_h + r) * phase.kernel_w + s) *
           phase.in_channels;
  }
  __device__ __forceinline__ T load(Row c, K offset) const { return w[offset + c]; }
  __device__ __forceinline__ const T* vector_source(Row c, K offset) const {
    return w + offset + c;
  }
  __device__ __forceinline__ const T* origin() const { return w; }
  bool vectorizable(int width) const { return vector_loads_fit(w, width, phase.in_channels); }
};

// Row m of a phase's GEMM (image, i, j) is input pixel (first_row + i * stride_h,
// first_col + j * stride_w).
template <typename TOut>
struct StoreToPhasePixels {
  static constexpr int kVectorWidth = vector_width<TOut>();
  TOut* dx;
  StridePhase phase;
  __device__ __forceinline__ TOut* at(int64_t m, int64_t n) const {
    int32_t rest, j, image, i;
    phase.by_cols.divmod(static_cast<int32_t>(m), rest, j);
    phase.by_rows.divmod(rest, image, i);
    const int32_t h = phase.rows.first + i * phase.stride_h;
    const int32_t w = phase.cols.first + j * phase.stride_w;
    return dx +
           ((static_cast<int64_t>(image) * phase.in_h + h) * phase.in_w + w) * phase.in_channels +
           n;
  }
  __device__ __forceinline__ void operator()(int /*split*/, int64_t m, int64_t n, float acc) const {
    *at(m, n) = from_f32<TOut>(acc);
  }
  bool vector_fits() const {
    return all_aligned<kVectorWidth>(dx) && phase.in_channels % kVectorWidth == 0;
  }
  __device__ __forceinline__ void store_vector(int /*split*/, int64_t m, int64_t n,
                                               const float (&acc)[kVectorWidth]) const {
    Vector16<TOut> value;
#pragma unroll
    for (int i = 0; i < kVectorWidth; ++i)
      value.v[i] = from_f32<TOut>(acc[i]);
    *reinterpret_cast<Vector16<TOut>*>(at(m, n)) = value;
  }
};

}  // namespace engine::cuda
