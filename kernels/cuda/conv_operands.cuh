// The implicit-GEMM gathers of a convolution (NHWC input, KRSC filters): GEMM operands that
// read the tensors in place, so no im2col matrix is ever materialized on the GPU.
//   forward          C[pixel][k_out]  = sum_{rsc} im2col(x)[pixel][rsc] * w[k_out][rsc]
//   backward data    C[in_px][c]      = sum_{rs,k} dy[out_px(in_px, rs)][k] * w[k][rs][c]
//   backward filter  C[k_out][rsc]    = sum_{pixel} dy[pixel][k_out] * im2col(x)[pixel][rsc]
#pragma once

#include <cstdint>

#include "kernels/conv_shape.h"
#include "kernels/cuda/device_types.cuh"

namespace engine::cuda {

// im2col(x)[pixel][(r * kernel_w + s) * in_channels + c], 0 in the padding.
template <typename T>
__device__ __forceinline__ T im2col_element(const T* x, const Conv2dShape& shape, int64_t pixel,
                                            int64_t tap_channel) {
  const int64_t c = tap_channel % shape.in_channels;
  const int64_t tap = tap_channel / shape.in_channels;
  const int64_t s = tap % shape.kernel_w, r = tap / shape.kernel_w;
  const int64_t out_w = shape.out_w(), out_h = shape.out_h();
  const int64_t q = pixel % out_w, p = (pixel / out_w) % out_h, n = pixel / (out_w * out_h);
  const int64_t h = p * shape.stride_h - shape.pad_h + r * shape.dilation_h;
  const int64_t w = q * shape.stride_w - shape.pad_w + s * shape.dilation_w;
  if (h < 0 || h >= shape.in_h || w < 0 || w >= shape.in_w) return from_f32<T>(0.f);
  return x[((n * shape.in_h + h) * shape.in_w + w) * shape.in_channels + c];
}

// Forward A: (pixel, rsc) of im2col(x); channels are innermost, so contiguous along K.
template <typename T>
struct ConvForwardInput {
  static constexpr bool kContiguousAlongK = true;
  const T* x;
  Conv2dShape shape;
  __device__ __forceinline__ T operator()(int64_t pixel, int64_t k) const {
    return im2col_element(x, shape, pixel, k);
  }
};

// Backward-filter B: (rsc, pixel) of im2col(x); consecutive rsc are consecutive channels.
template <typename T>
struct ConvFilterGradInput {
  static constexpr bool kContiguousAlongK = false;
  const T* x;
  Conv2dShape shape;
  __device__ __forceinline__ T operator()(int64_t tap_channel, int64_t pixel) const {
    return im2col_element(x, shape, pixel, tap_channel);
  }
};

// Backward-data A: (input pixel, (r, s, k_out)) = dy at the output pixel whose tap (r, s)
// reads the input pixel, 0 when no output pixel does (stride gaps, borders).
template <typename T>
struct ConvDataGradOutput {
  static constexpr bool kContiguousAlongK = true;
  const T* dy;
  Conv2dShape shape;
  __device__ __forceinline__ T operator()(int64_t in_pixel, int64_t k) const {
    const int64_t k_out = k % shape.out_channels;
    const int64_t tap = k / shape.out_channels;
    const int64_t s = tap % shape.kernel_w, r = tap / shape.kernel_w;
    const int64_t w = in_pixel % shape.in_w, h = (in_pixel / shape.in_w) % shape.in_h;
    const int64_t n = in_pixel / (shape.in_w * shape.in_h);
    const int64_t p_offset = h + shape.pad_h - r * shape.dilation_h;
    const int64_t q_offset = w + shape.pad_w - s * shape.dilation_w;
    if (p_offset < 0 || q_offset < 0 || p_offset % shape.stride_h != 0 ||
        q_offset % shape.stride_w != 0) {
      return from_f32<T>(0.f);
    }
    const int64_t p = p_offset / shape.stride_h, q = q_offset / shape.stride_w;
    const int64_t out_h = shape.out_h(), out_w = shape.out_w();
    if (p >= out_h || q >= out_w) return from_f32<T>(0.f);
    return dy[((n * out_h + p) * out_w + q) * shape.out_channels + k_out];
  }
};

// Backward-data B: (c, (r, s, k_out)) = w[k_out][r][s][c]; contiguous along c.
template <typename T>
struct ConvDataGradFilter {
  static constexpr bool kContiguousAlongK = false;
  const T* w;
  Conv2dShape shape;
  __device__ __forceinline__ T operator()(int64_t c, int64_t k) const {
    const int64_t k_out = k % shape.out_channels;
    const int64_t tap = k / shape.out_channels;
    return w[(k_out * shape.kernel_h * shape.kernel_w + tap) * shape.in_channels + c];
  }
};

}  // namespace engine::cuda
