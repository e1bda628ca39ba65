// Pooling (implemented in kernels/ops/pool.cpp): max pooling with argmax (the ResNet stem's
// 3x3 / stride 2 / padding 1) and global average pooling. NHWC activations, f32 or bf16.
#pragma once

#include <cstdint>

#include "kernels/args/pool.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

// MaxPool2dParams (torch.nn.MaxPool2d's kernel, stride, padding): kernels/args/pool.h.

// x [N, H, W, C] -> y [N, OH, OW, C]. Ties go to the first position in row-major window
// order; NaN propagates (the last NaN of a window wins it, as in PyTorch).
struct MaxPool2dForwardOperands {
  Tensor x;
  Tensor y;
  // u8, the shape of y: the chosen input's position in its window, row * kernel + col from the
  // window's padded corner (so kernel <= 16), not PyTorch's flat h * W + w: a byte moves a
  // quarter of an i32's traffic, and the backward, which knows each window's corner, needs no
  // more.
  Tensor argmax;
};
void maxpool2d_forward(const MaxPool2dParams& params, MaxPool2dForwardOperands operands,
                       Stream& stream);
// dx [N, H, W, C] = the sum of dy over the outputs whose argmax is that input (windows
// overlap when stride < kernel). Computed by gathering, so no atomics and no zero-fill.
struct MaxPool2dBackwardOperands {
  Tensor dy;
  Tensor argmax;  // the forward's
  Tensor dx;
};
void maxpool2d_backward(const MaxPool2dParams& params, MaxPool2dBackwardOperands operands,
                        Stream& stream);

// x [N, H, W, C] -> y [N, C] (or [N, 1, 1, C]): the mean over H * W, accumulated in fp32.
void global_avgpool_forward(const Tensor& x, Tensor& y, Stream& stream);
// dx [N, H, W, C] = dy [N, C] / (H * W) broadcast over H and W.
void global_avgpool_backward(const Tensor& dy, Tensor& dx, Stream& stream);

}  // namespace engine
