// The fused SGD step over flat fp32 buffers (implemented in kernels/ops/optim.cpp).
#pragma once

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

// torch.optim.SGD's hyperparameters (maximize=False), plus a factor applied to the
// gradients first (1/world size for averaging, or unscaling).
struct SgdOptions {
  float lr = 0.1f;
  float momentum = 0.f;
  float dampening = 0.f;
  float weight_decay = 0.f;
  bool nesterov = false;  // needs momentum > 0 and dampening = 0, as PyTorch
  float grad_scale = 1.f;
};

// One step for every element of params (f32, any shape), exactly as torch.optim.SGD:
//   g = grad * grad_scale + weight_decay * param
//   buf = first_step ? g : momentum * buf + (1 - dampening) * g     (when momentum != 0)
//   g = nesterov ? g + momentum * buf : buf                          (when momentum != 0)
//   param -= lr * g
// first_step: the momentum buffer holds nothing yet (PyTorch's "buf is None": buf = g, no
// dampening). momentum_buffer is f32 like params, or undefined when momentum == 0.
void sgd_step(const SgdOptions& options, Tensor& params, const Tensor& grads,
              Tensor& momentum_buffer, bool first_step, Stream& stream);

}  // namespace engine
