// Softmax cross-entropy and top-k accuracy (implemented in kernels/ops/loss.cpp).
// logits [N, K] are f32 or bf16 (math in fp32); labels are i32[N] class indices. A label
// outside [0, K) makes that sample's loss and gradient NaN and never counts as correct, on
// the CPU and the GPU alike (the GPU cannot raise an error without a synchronization).
#pragma once

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

// torch.nn.CrossEntropyLoss(label_smoothing=s), reduction 'mean': with the target
// q = (1 - s) * onehot(label) + s / K, sample_loss[i] = -sum_k q_k log softmax(logits_i)_k
// (f32[N], kept for per-sample bookkeeping such as excluding padded evaluation samples) and
// loss = mean(sample_loss) (f32[1]), both computed without a host round trip.
void cross_entropy_forward(const Tensor& logits, const Tensor& labels, float label_smoothing,
                           Tensor& sample_loss, Tensor& loss, Stream& stream);

// dlogits = (softmax(logits) - q) * grad_loss / N, the gradient of the mean loss scaled by
// grad_loss (1 for a plain backward; a loss scale or 1/accumulation steps otherwise).
// dlogits has the dtype and shape of logits and may alias it.
void cross_entropy_backward(const Tensor& logits, const Tensor& labels, float label_smoothing,
                            float grad_loss, Tensor& dlogits, Stream& stream);

// Cross-entropy against soft targets (timm's SoftTargetCrossEntropy, torch's F.cross_entropy
// with class probabilities), what mixup and CutMix train with: targets f32[N, K], each row the
// target distribution (label smoothing folded in). sample_loss[i] = -sum_k targets_ik log
// softmax(logits_i)_k, loss = its mean; no host round trip.
void soft_cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& sample_loss,
                                Tensor& loss, Stream& stream);

// dlogits = (softmax(logits) * sum_k targets_k - targets) * grad_loss / N (softmax - targets
// for rows that sum to 1): the gradient of the mean loss scaled by grad_loss. dlogits has the
// dtype and shape of logits and may alias it.
void soft_cross_entropy_backward(const Tensor& logits, const Tensor& targets, float grad_loss,
                                 Tensor& dlogits, Stream& stream);

// correct = f32[2]: how many samples have their label among the top 1 and the top 5
// logits. Ties rank the lower class index first (a tie with the label counts against it
// only from lower indices). With K < 5 every valid sample is in the top 5.
void topk_correct(const Tensor& logits, const Tensor& labels, Tensor& correct, Stream& stream);

}  // namespace engine
