// torch.nn.CrossEntropyLoss(label_smoothing=s), reduction 'mean', over logits [N, K], with
// class indices or, as torch also takes, class probabilities (soft targets: mixup and CutMix,
// whose targets carry their own label smoothing, so s does not apply to them).
#pragma once

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::nn {

class CrossEntropyLoss {
 public:
  explicit CrossEntropyLoss(float label_smoothing = 0.f);

  void setup(int64_t batch, int64_t classes, DType dtype, Device device);
  // loss = f32[1], the mean over the batch; labels i32[N] class indices on the logits' device.
  const Tensor& forward(const Tensor& logits, const Tensor& labels, Stream& stream);
  // The same against soft targets f32[N, K] on the logits' device (rows summing to 1).
  const Tensor& forward_soft(const Tensor& logits, const Tensor& targets, Stream& stream);
  // The per-sample losses of the last forward (f32[N]).
  const Tensor& sample_loss() const { return sample_loss_; }
  // dlogits of the last forward's mean loss (hard or soft) times grad_loss (1, or 1/k for k
  // accumulated micro-batches).
  const Tensor& backward(Stream& stream, float grad_loss = 1.f);

  float label_smoothing() const { return label_smoothing_; }

 private:
  float label_smoothing_;
  Tensor logits_, labels_, targets_, sample_loss_, loss_, dlogits_;
};

}  // namespace engine::nn
