#include "kernels/cpu/im2col.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/parallel.h"

namespace engine::cpu {

template <typename T>
void im2col(const Conv2dShape& shape, const T* x, int64_t first_row, int64_t end_row, T* col) {
  const int64_t out_h = shape.out_h(), out_w = shape.out_w();
  const int64_t channels = shape.in_channels, row_length = shape.gemm_k();
  const size_t channel_bytes = static_cast<size_t>(channels) * sizeof(T);
#pragma omp parallel for schedule(static) if ((end_row - first_row) * row_length >= \
                                              kParallelThreshold)
  for (int64_t m = first_row; m < end_row; ++m) {
    const int64_t n = m / (out_h * out_w);
    const int64_t p = (m / out_w) % out_h;
    const int64_t q = m % out_w;
    T* dst = col + (m - first_row) * row_length;
    const int64_t w_first = q * shape.stride_w - shape.pad_w;
    // With dilation 1 the taps of a filter row read kernel_w neighbouring pixels: one copy
    // of kernel_w * channels values when they are all inside the image.
    const bool row_contiguous =
        shape.dilation_w == 1 && w_first >= 0 && w_first + shape.kernel_w <= shape.in_w;
    for (int64_t r = 0; r < shape.kernel_h; ++r) {
      const int64_t h = p * shape.stride_h - shape.pad_h + r * shape.dilation_h;
      const bool row_inside = h >= 0 && h < shape.in_h;
      if (row_inside && row_contiguous) {
        std::memcpy(dst, x + ((n * shape.in_h + h) * shape.in_w + w_first) * channels,
                    channel_bytes * shape.kernel_w);
        dst += channels * shape.kernel_w;
        continue;
      }
      for (int64_t s = 0; s < shape.kernel_w; ++s, dst += channels) {
        const int64_t w = w_first + s * shape.dilation_w;
        const bool padding = !row_inside || w < 0 || w >= shape.in_w;
        if (padding) {
          std::fill_n(dst, channels, T{});
        } else {
          std::memcpy(dst, x + ((n * shape.in_h + h) * shape.in_w + w) * channels, channel_bytes);
        }
      }
    }
  }
}

template <typename T>
void im2col_inside(const Conv2dShape& shape, const TapClass& taps, const T* x, const int64_t* rows,
                   int64_t count, T* col) {
  const int64_t out_h = shape.out_h(), out_w = shape.out_w();
  const int64_t channels = shape.in_channels, row_length = taps.depth(shape);
  const int64_t tap_cols = taps.cols.count();
  const size_t run_bytes = static_cast<size_t>((shape.dilation_w == 1 ? tap_cols : 1) * channels *
                                               static_cast<int64_t>(sizeof(T)));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t m = rows[i];
    const int64_t n = m / (out_h * out_w), p = (m / out_w) % out_h, q = m % out_w;
    T* dst = col + i * row_length;
    const int64_t w_first = q * shape.stride_w - shape.pad_w + taps.cols.begin * shape.dilation_w;
    for (int64_t r = taps.rows.begin; r < taps.rows.end; ++r) {
      const int64_t h = p * shape.stride_h - shape.pad_h + r * shape.dilation_h;
      const T* row = x + ((n * shape.in_h + h) * shape.in_w + w_first) * channels;
      if (shape.dilation_w == 1) {
        // The taps of a filter row inside the input read neighbouring pixels: one copy.
        std::memcpy(dst, row, run_bytes);
        dst += tap_cols * channels;
        continue;
      }
      for (int64_t s = 0; s < tap_cols; ++s, dst += channels)
        std::memcpy(dst, row + s * shape.dilation_w * channels, run_bytes);
    }
  }
}

template void im2col(const Conv2dShape&, const float*, int64_t, int64_t, float*);
template void im2col(const Conv2dShape&, const bf16*, int64_t, int64_t, bf16*);
template void im2col_inside(const Conv2dShape&, const TapClass&, const float*, const int64_t*,
                            int64_t, float*);
template void im2col_inside(const Conv2dShape&, const TapClass&, const bf16*, const int64_t*,
                            int64_t, bf16*);

namespace {
// The output coordinate whose tap `tap` reads input coordinate `in`, or -1.
int64_t reading_output(int64_t in, int64_t tap, int64_t stride, int64_t pad, int64_t dilation,
                       int64_t out_extent) {
  const int64_t offset = in + pad - tap * dilation;
  if (offset < 0 || offset % stride != 0) return -1;
  const int64_t out = offset / stride;
  return out < out_extent ? out : -1;
}
}  // namespace

void col2im(const Conv2dShape& shape, const float* col, int64_t first_image, int64_t end_image,
            float* dx) {
  const int64_t out_h = shape.out_h(), out_w = shape.out_w();
  const int64_t channels = shape.in_channels, row_length = shape.gemm_k();
  const int64_t pixels = (end_image - first_image) * shape.in_h * shape.in_w;
  const float* col_base = col;  // row 0 of col is output pixel (first_image, 0, 0)
#pragma omp parallel for schedule(static) if (pixels * channels >= kParallelThreshold)
  for (int64_t pixel = 0; pixel < pixels; ++pixel) {
    const int64_t local_image = pixel / (shape.in_h * shape.in_w);
    const int64_t h = (pixel / shape.in_w) % shape.in_h;
    const int64_t w = pixel % shape.in_w;
    float* out = dx + (first_image * shape.in_h * shape.in_w + pixel) * channels;
    std::fill(out, out + channels, 0.f);
    for (int64_t r = 0; r < shape.kernel_h; ++r) {
      const int64_t p = reading_output(h, r, shape.stride_h, shape.pad_h, shape.dilation_h, out_h);
      if (p < 0) continue;
      for (int64_t s = 0; s < shape.kernel_w; ++s) {
        const int64_t q =
            reading_output(w, s, shape.stride_w, shape.pad_w, shape.dilation_w, out_w);
        if (q < 0) continue;
        const int64_t row = (local_image * out_h + p) * out_w + q;
        const float* src = col_base + row * row_length + (r * shape.kernel_w + s) * channels;
        for (int64_t c = 0; c < channels; ++c)
          out[c] += src[c];
      }
    }
  }
}

}  // namespace engine::cpu
