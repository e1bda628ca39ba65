// The geometry of a 2-D convolution in the engine's layouts: input NHWC [batch, in_h, in_w,
// in_channels], filters KRSC [out_channels, kernel_h, kernel_w, in_channels], output NHWC
// [batch, out_h, out_w, out_channels]. As a GEMM (M x N output, K the reduction length), the
// forward pass is
//   Y[M x N] = im2col(X)[M x K] * W^T[K x N],
//   M = batch * out_h * out_w (gemm_m()), N = out_channels,
//   K = kernel_h * kernel_w * in_channels (gemm_k()),
// and the output rows are exactly NHWC, so no layout change is ever needed. (The K of the
// layout name KRSC is cuDNN's letter for the output channels, the GEMM's N; here K is always
// the reduction.)
#pragma once

#include <cstdint>
#include <string>

#include "kernels/host_device.h"
#include "kernels/tensor.h"

namespace engine {

struct Conv2dShape {
  int64_t batch = 1;
  int64_t in_h = 1;
  int64_t in_w = 1;
  int64_t in_channels = 1;
  int64_t out_channels = 1;
  int64_t kernel_h = 1;
  int64_t kernel_w = 1;
  int64_t stride_h = 1;
  int64_t stride_w = 1;
  int64_t pad_h = 0;
  int64_t pad_w = 0;
  int64_t dilation_h = 1;
  int64_t dilation_w = 1;

  ENGINE_HOST_DEVICE int64_t out_h() const {
    return (in_h + 2 * pad_h - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
  }
  ENGINE_HOST_DEVICE int64_t out_w() const {
    return (in_w + 2 * pad_w - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;
  }
  // GEMM extents of the forward pass: M (output pixels) and K (the reduction: one filter's
  // taps times input channels); N is out_channels.
  ENGINE_HOST_DEVICE int64_t gemm_m() const { return batch * out_h() * out_w(); }
  ENGINE_HOST_DEVICE int64_t gemm_k() const { return kernel_h * kernel_w * in_channels; }
  ENGINE_HOST_DEVICE bool is_pointwise() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 &&
           pad_w == 0;
  }

  Shape input_shape() const { return {batch, in_h, in_w, in_channels}; }
  Shape filter_shape() const { return {out_channels, kernel_h, kernel_w, in_channels}; }
  Shape output_shape() const { return {batch, out_h(), out_w(), out_channels}; }
  // e.g. "n8 56x56x64 -> 64 3x3 s1 p1"
  std::string str() const;
  // Throws engine::Error when an extent is not positive or the output would be empty.
  void validate() const;
};

// A square convolution as torchvision's ResNets use them.
Conv2dShape make_conv2d_shape(int64_t batch, int64_t size, int64_t in_channels,
                              int64_t out_channels, int64_t kernel, int64_t stride, int64_t pad);

}  // namespace engine
