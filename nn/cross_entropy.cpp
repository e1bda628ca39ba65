#include "nn/cross_entropy.h"

#include <string>

#include "kernels/error.h"
#include "kernels/ops/loss.h"

namespace engine::nn {

CrossEntropyLoss::CrossEntropyLoss(float label_smoothing) : label_smoothing_(label_smoothing) {
  if (!(label_smoothing >= 0.f && label_smoothing <= 1.f)) {
    fail("CrossEntropyLoss: label_smoothing must be in [0, 1], got " +
         std::to_string(label_smoothing));
  }
}

void CrossEntropyLoss::setup(int64_t batch, int64_t classes, DType dtype, Device device) {
  if (batch < 1 || classes < 1) {
    fail("CrossEntropyLoss: batch and classes must be >= 1, got " + std::to_string(batch) +
         " and " + std::to_string(classes));
  }
  sample_loss_ = Tensor::empty({batch}, DType::f32, device);
  loss_ = Tensor::empty({1}, DType::f32, device);
  dlogits_ = Tensor::empty({batch, classes}, dtype, device);
}

const Tensor& CrossEntropyLoss::forward(const Tensor& logits, const Tensor& labels,
                                        Stream& stream) {
  logits_ = logits;
  labels_ = labels;
  targets_ = Tensor();
  cross_entropy_forward({.logits = logits,
                         .labels = labels,
                         .sample_loss = sample_loss_,
                         .loss = loss_,
                         .label_smoothing = label_smoothing_},
                        stream);
  return loss_;
}

const Tensor& CrossEntropyLoss::forward_soft(const Tensor& logits, const Tensor& targets,
                                             Stream& stream) {
  logits_ = logits;
  labels_ = Tensor();
  targets_ = targets;
  soft_cross_entropy_forward(
      {.logits = logits, .targets = targets, .sample_loss = sample_loss_, .loss = loss_}, stream);
  return loss_;
}

const Tensor& CrossEntropyLoss::backward(Stream& stream, float grad_loss) {
  if (!logits_.defined()) fail("CrossEntropyLoss: backward before forward");
  if (targets_.defined()) {
    soft_cross_entropy_backward(
        {.logits = logits_, .targets = targets_, .dlogits = dlogits_, .grad_loss = grad_loss},
        stream);
    return dlogits_;
  }
  cross_entropy_backward({.logits = logits_,
                          .labels = labels_,
                          .dlogits = dlogits_,
                          .label_smoothing = label_smoothing_,
                          .grad_loss = grad_loss},
                         stream);
  return dlogits_;
}

}  // namespace engine::nn
