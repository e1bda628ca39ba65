#include "kernels/ops/loss.h"

#include <cmath>
#include <string>

#include "kernels/cpu/loss.h"
#include "kernels/cuda/loss.h"
#include "kernels/ops/checks.h"
#include "kernels/ops/dispatch.h"

namespace engine {
namespace {

struct Classes {
  int64_t n = 0;
  int64_t k = 0;
};

// logits [N, K] (N, K >= 1) of a float dtype, on the stream's device.
Classes require_logits_matrix(ops::OpName op, const Tensor& logits, const Stream& stream) {
  ops::require_float(op, "logits", logits);
  if (logits.dim() != 2 || logits.numel() == 0) {
    fail(std::string(op) + ": logits is " + logits.describe() + ", expected a non-empty [N, K]");
  }
  ops::require_on_stream(op, "logits", logits, stream);
  return {logits.size(0), logits.size(1)};
}

// logits as above and labels i32[N] on the same device.
Classes require_logits(ops::OpName op, const Tensor& logits, const Tensor& labels,
                       const Stream& stream) {
  const Classes shape = require_logits_matrix(op, logits, stream);
  ops::require_defined(op, "labels", labels);
  if (labels.dtype() != DType::i32 || labels.numel() != shape.n ||
      labels.device() != logits.device()) {
    fail(std::string(op) + ": labels is " + labels.describe() + ", expected i32[" +
         std::to_string(shape.n) + "] (class indices) on " + logits.device().str());
  }
  return shape;
}

// logits as above and targets f32[N, K] on the same device.
Classes require_soft_targets(ops::OpName op, const Tensor& logits, const Tensor& targets,
                             const Stream& stream) {
  const Classes shape = require_logits_matrix(op, logits, stream);
  ops::require_defined(op, "targets", targets);
  if (targets.dtype() != DType::f32 || targets.shape() != logits.shape() ||
      targets.device() != logits.device()) {
    fail(std::string(op) + ": targets is " + targets.describe() + ", expected f32" +
         shape_str(logits.shape()) + " (class probabilities) on " + logits.device().str());
  }
  return shape;
}

void require_smoothing(ops::OpName op, float label_smoothing) {
  if (!(label_smoothing >= 0.f && label_smoothing <= 1.f)) {
    fail(std::string(op) + ": label_smoothing must be in [0, 1], got " +
         std::to_string(label_smoothing));
  }
}

}  // namespace

void cross_entropy_forward(CrossEntropyForwardOperands operands, Stream& stream) {
  constexpr ops::OpName op{"cross_entropy_forward"};
  const Classes shape = require_logits(op, operands.logits, operands.labels, stream);
  require_smoothing(op, operands.label_smoothing);
  ops::require_f32(op, "sample_loss", operands.sample_loss, shape.n, operands.logits.device());
  ops::require_f32(op, "loss", operands.loss, 1, operands.logits.device());
  const CrossEntropyForwardArgs args{.dtype = operands.logits.dtype(),
                                     .logits = operands.logits.raw_data(),
                                     .labels = operands.labels.data<int32_t>(),
                                     .n = shape.n,
                                     .k = shape.k,
                                     .label_smoothing = operands.label_smoothing,
                                     .sample_loss = operands.sample_loss.data<float>(),
                                     .loss = operands.loss.data<float>()};
  ops::on_device(
      op, stream, [&] { cpu::cross_entropy_forward(args); },
      [&](auto cuda_stream) { cuda::cross_entropy_forward(args, cuda_stream); });
}

void cross_entropy_backward(CrossEntropyBackwardOperands operands, Stream& stream) {
  constexpr ops::OpName op{"cross_entropy_backward"};
  const Classes shape = require_logits(op, operands.logits, operands.labels, stream);
  require_smoothing(op, operands.label_smoothing);
  ops::require_like(op, "logits", operands.logits, "dlogits", operands.dlogits);
  ENGINE_REQUIRE(
      std::isfinite(operands.grad_loss),
      std::string(op) + ": grad_loss must be finite, got " + std::to_string(operands.grad_loss));
  const CrossEntropyBackwardArgs args{.dtype = operands.logits.dtype(),
                                      .logits = operands.logits.raw_data(),
                                      .labels = operands.labels.data<int32_t>(),
                                      .n = shape.n,
                                      .k = shape.k,
                                      .label_smoothing = operands.label_smoothing,
                                      .grad_loss = operands.grad_loss,
                                      .dlogits = operands.dlogits.raw_data()};
  ops::on_device(
      op, stream, [&] { cpu::cross_entropy_backward(args); },
      [&](auto cuda_stream) { cuda::cross_entropy_backward(args, cuda_stream); });
}

void soft_cross_entropy_forward(SoftCrossEntropyForwardOperands operands, Stream& stream) {
  constexpr ops::OpName op{"soft_cross_entropy_forward"};
  const Classes shape = require_soft_targets(op, operands.logits, operands.targets, stream);
  ops::require_f32(op, "sample_loss", operands.sample_loss, shape.n, operands.logits.device());
  ops::require_f32(op, "loss", operands.loss, 1, operands.logits.device());
  const SoftCrossEntropyForwardArgs args{.dtype = operands.logits.dtype(),
                                         .logits = operands.logits.raw_data(),
                                         .targets = operands.targets.data<float>(),
                                         .n = shape.n,
                                         .k = shape.k,
                                         .sample_loss = operands.sample_loss.data<float>(),
                                         .loss = operands.loss.data<float>()};
  ops::on_device(
      op, stream, [&] { cpu::soft_cross_entropy_forward(args); },
      [&](auto cuda_stream) { cuda::soft_cross_entropy_forward(args, cuda_stream); });
}

void soft_cross_entropy_backward(SoftCrossEntropyBackwardOperands operands, Stream& stream) {
  constexpr ops::OpName op{"soft_cross_entropy_backward"};
  const Classes shape = require_soft_targets(op, operands.logits, operands.targets, stream);
  ops::require_like(op, "logits", operands.logits, "dlogits", operands.dlogits);
  ENGINE_REQUIRE(
      std::isfinite(operands.grad_loss),
      std::string(op) + ": grad_loss must be finite, got " + std::to_string(operands.grad_loss));
  const SoftCrossEntropyBackwardArgs args{.dtype = operands.logits.dtype(),
                                          .logits = operands.logits.raw_data(),
                                          .targets = operands.targets.data<float>(),
                                          .n = shape.n,
                                          .k = shape.k,
                                          .grad_loss = operands.grad_loss,
                                          .dlogits = operands.dlogits.raw_data()};
  ops::on_device(
      op, stream, [&] { cpu::soft_cross_entropy_backward(args); },
      [&](auto cuda_stream) { cuda::soft_cross_entropy_backward(args, cuda_stream); });
}

void topk_correct(TopkCorrectOperands operands, Stream& stream) {
  constexpr ops::OpName op{"topk_correct"};
  const Classes shape = require_logits(op, operands.logits, operands.labels, stream);
  ops::require_f32(op, "correct", operands.correct, 2, operands.logits.device());
  const TopkCorrectArgs args{.dtype = operands.logits.dtype(),
                             .logits = operands.logits.raw_data(),
                             .labels = operands.labels.data<int32_t>(),
                             .n = shape.n,
                             .k = shape.k,
                             .correct = operands.correct.data<float>()};
  ops::on_device(
      op, stream, [&] { cpu::topk_correct(args); },
      [&](auto cuda_stream) { cuda::topk_correct(args, cuda_stream); });
}

}  // namespace engine
