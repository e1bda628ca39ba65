// ReLU, the fused residual add + ReLU, and add (implemented in kernels/ops/activation.cpp).
#pragma once

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

// y = max(x, 0); NaN stays NaN. y may alias x (in place).
void relu_forward(const Tensor& x, Tensor& y, Stream& stream);
// dx = dy where y > 0, else 0.
struct ReluBackwardOperands {
  Tensor y;  // the forward output
  Tensor dy;
  Tensor dx;  // may alias dy
};
void relu_backward(ReluBackwardOperands operands, Stream& stream);

// The residual join: y = max(a + b, 0), computed in fp32 and rounded once. Its backward is
// relu_backward({.y = y, .dy = dy, .dx = d_sum}): the same gradient reaches a and b.
struct AddReluForwardOperands {
  Tensor a, b;
  Tensor y;  // may alias a or b
};
void add_relu_forward(AddReluForwardOperands operands, Stream& stream);

// y = a + b in fp32, rounded once. Sums of gradients: a residual block's two input-gradient
// paths, and gradient accumulation into a parameter's gradient.
struct AddOperands {
  Tensor a, b;
  Tensor y;  // may alias a or b
};
void add(AddOperands operands, Stream& stream);

}  // namespace engine
