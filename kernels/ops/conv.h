// conv2d and linear (implemented in kernels/ops/conv.cpp). Tensors are NHWC / KRSC; x, w and
// y share one dtype (f32, or bf16 on tensor cores with fp32 accumulation); bias and its
// gradient are fp32; a filter gradient is fp32 (master weights) or the activation dtype.
#pragma once

#include "kernels/conv_shape.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

// y = conv(x, w) + bias. bias may be null.
void conv2d_forward(const Conv2dShape& shape, const Tensor& x, const Tensor& w, const Tensor* bias,
                    Tensor& y, Stream& stream);
// dx = gradient of the input; overwrites dx.
void conv2d_backward_data(const Conv2dShape& shape, const Tensor& dy, const Tensor& w, Tensor& dx,
                          Stream& stream);
// dw (and dbias, when not null) = gradients of the filters (and bias); with accumulate they
// are added to what dw/dbias hold (gradient accumulation over micro-batches).
void conv2d_backward_filter(const Conv2dShape& shape, const Tensor& x, const Tensor& dy, Tensor& dw,
                            Tensor* dbias, bool accumulate, Stream& stream);

// Linear layers are pointwise convolutions over rows: x [rows, in], w [out, in], y [rows, out].
void linear_forward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                    Stream& stream);
void linear_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, Stream& stream);
void linear_backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* dbias,
                            bool accumulate, Stream& stream);

}  // namespace engine
