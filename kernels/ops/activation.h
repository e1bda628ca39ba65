// ReLU, the fused residual add + ReLU, and add (implemented in kernels/ops/activation.cpp).
#pragma once

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

// y = max(x, 0); NaN stays NaN. y may alias x (in place).
void relu_forward(const Tensor& x, Tensor& y, Stream& stream);
// dx = dy where y > 0, else 0; y is the forward output. dx may alias dy.
void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx, Stream& stream);
// The residual join: y = max(a + b, 0), computed in fp32 and rounded once. y may alias a or
// b. Its backward is relu_backward(y, dy, d_sum): the same gradient reaches a and b.
void add_relu_forward(const Tensor& a, const Tensor& b, Tensor& y, Stream& stream);
// y = a + b in fp32, rounded once; y may alias a or b. Sums of gradients: a residual
// block's two input-gradient paths, and gradient accumulation into a parameter's gradient.
void add(const Tensor& a, const Tensor& b, Tensor& y, Stream& stream);

}  // namespace engine
