// The fused SGD step over flat fp32 buffers (implemented in kernels/ops/optim.cpp).
#pragma once

#include "kernels/args/optim.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

// SgdOptions (torch.optim.SGD's hyperparameters and a gradient scale): kernels/args/optim.h.

// One step for every element of params (f32, any shape), exactly as torch.optim.SGD:
//   g = grad * grad_scale + weight_decay * param
//   buf = first_step ? g : momentum * buf + (1 - dampening) * g     (when momentum != 0)
//   g = nesterov ? g + momentum * buf : buf                          (when momentum != 0)
//   param -= lr * g
// first_step: the momentum buffer holds nothing yet (MomentumBuffer::empty, PyTorch's "buf is
// None": buf = g, no dampening). momentum_buffer is f32 like params, or undefined when
// momentum == 0.
enum class MomentumBuffer { empty, filled };
void sgd_step(const SgdOptions& options, Tensor& params, const Tensor& grads,
              Tensor& momentum_buffer, MomentumBuffer buffer_state, Stream& stream);

}  // namespace engine
