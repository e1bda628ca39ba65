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
// and loss = mean(sample_loss), both computed without a host round trip.
struct CrossEntropyForwardOperands {
  Tensor logits, labels;
  // f32[N], kept for per-sample bookkeeping such as excluding padded evaluation samples
  Tensor sample_loss;
  Tensor loss;                  // f32[1]
  float label_smoothing = 0.f;  // s, in [0, 1]
};
void cross_entropy_forward(CrossEntropyForwardOperands operands, Stream& stream);

// dlogits = (softmax(logits) - q) * grad_loss / N, the gradient of the mean loss scaled by
// grad_loss.
struct CrossEntropyBackwardOperands {
  Tensor logits, labels;
  Tensor dlogits;               // the dtype and shape of logits; may alias it
  float label_smoothing = 0.f;  // the forward's
  // 1 for a plain backward; a loss scale or 1/accumulation steps otherwise
  float grad_loss = 1.f;
};
void cross_entropy_backward(CrossEntropyBackwardOperands operands, Stream& stream);

// Cross-entropy against soft targets (timm's SoftTargetCrossEntropy, torch's F.cross_entropy
// with class probabilities), what mixup and CutMix train with: sample_loss[i] = -sum_k
// targets_ik log softmax(logits_i)_k, loss = its mean; no host round trip.
struct SoftCrossEntropyForwardOperands {
  Tensor logits;
  // f32[N, K], each row the target distribution (label smoothing folded in)
  Tensor targets;
  Tensor sample_loss;  // f32[N]
  Tensor loss;         // f32[1]
};
void soft_cross_entropy_forward(SoftCrossEntropyForwardOperands operands, Stream& stream);

// dlogits = (softmax(logits) * sum_k targets_k - targets) * grad_loss / N (softmax - targets
// for rows that sum to 1): the gradient of the mean loss scaled by grad_loss.
struct SoftCrossEntropyBackwardOperands {
  Tensor logits, targets;
  Tensor dlogits;         // the dtype and shape of logits; may alias it
  float grad_loss = 1.f;  // as cross_entropy_backward's
};
void soft_cross_entropy_backward(SoftCrossEntropyBackwardOperands operands, Stream& stream);

// correct = f32[2]: how many samples have their label among the top 1 and the top 5
// logits. Ties rank the lower class index first (a tie with the label counts against it
// only from lower indices). With K < 5 every valid sample is in the top 5.
struct TopkCorrectOperands {
  Tensor logits, labels;
  Tensor correct;
};
void topk_correct(TopkCorrectOperands operands, Stream& stream);

}  // namespace engine
