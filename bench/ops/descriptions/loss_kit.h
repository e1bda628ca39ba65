// What the loss descriptions share: a loss over logits [n, classes] against a target operand
// (class labels, or class probabilities), run as forward then backward at grad_loss 1, its
// outputs, and (f32) the finite-difference check of the mean loss over the logits.
#pragma once

#include <functional>

#include "bench/ops/case_kit.h"

namespace engine::op_registry {

struct LossCalls {
  // sample_loss f32[n] and loss f32[1] from the logits and the target.
  std::function<void(const Tensor& logits, const Tensor& target, Tensor& sample_loss, Tensor& loss,
                     Stream& stream)>
      forward;
  // dlogits (the logits' dtype and shape) of the mean loss.
  std::function<void(const Tensor& logits, const Tensor& target, Tensor& dlogits, Stream& stream)>
      backward;
};

// Fills c.prepare, and for f32 cases c.differentiables; c.dtype must be set.
void set_loss_calls(OpCase& c, const Operand& logits, const Operand& target, int64_t n,
                    int64_t classes, const LossCalls& calls);

}  // namespace engine::op_registry
