// CrossEntropyLoss with soft targets (what mixup and CutMix train with) against its hard-label
// self: a smoothed one-hot target is label smoothing, and a mixed target's loss is the same mix
// of the two labels' losses (cross-entropy is linear in the target).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nn/cross_entropy.h"

namespace engine::nn {
namespace {

constexpr int64_t kBatch = 4, kClasses = 5;

Tensor test_logits() {
  std::vector<float> values(kBatch * kClasses);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(1.3f * static_cast<float>(i)) * 3.f;
  return Tensor::from_floats({kBatch, kClasses}, values);
}

std::vector<float> one_hot(const std::vector<int32_t>& labels, float smoothing) {
  std::vector<float> targets(kBatch * kClasses, smoothing / kClasses);
  for (int64_t i = 0; i < kBatch; ++i)
    targets[i * kClasses + labels[i]] += 1.f - smoothing;
  return targets;
}

TEST(CrossEntropySoft, SmoothedOneHotTargetsAreLabelSmoothing) {
  Stream stream;
  const std::vector<int32_t> labels = {0, 3, 4, 1};
  CrossEntropyLoss hard(0.1f), soft;
  hard.setup(kBatch, kClasses, DType::f32, Device::cpu());
  soft.setup(kBatch, kClasses, DType::f32, Device::cpu());
  const Tensor logits = test_logits();
  const float hard_loss =
      hard.forward(logits, Tensor::from_ints({kBatch}, labels), stream).to_floats(stream)[0];
  const Tensor targets = Tensor::from_floats({kBatch, kClasses}, one_hot(labels, 0.1f));
  const float soft_loss = soft.forward_soft(logits, targets, stream).to_floats(stream)[0];
  EXPECT_NEAR(soft_loss, hard_loss, 1e-5f * hard_loss);
  const std::vector<float> hard_grad = hard.backward(stream, 0.5f).to_floats(stream);
  const std::vector<float> soft_grad = soft.backward(stream, 0.5f).to_floats(stream);
  for (size_t i = 0; i < hard_grad.size(); ++i)
    EXPECT_NEAR(soft_grad[i], hard_grad[i], 1e-6f) << i;
}

TEST(CrossEntropySoft, AMixedTargetGivesTheMixOfTheTwoLosses) {
  Stream stream;
  const std::vector<int32_t> own = {0, 3, 4, 1}, partner = {1, 4, 3, 0};
  const float lambda = 0.3f;
  const Tensor logits = test_logits();
  CrossEntropyLoss loss;
  loss.setup(kBatch, kClasses, DType::f32, Device::cpu());
  const auto hard = [&](const std::vector<int32_t>& labels) {
    return loss.forward(logits, Tensor::from_ints({kBatch}, labels), stream).to_floats(stream)[0];
  };
  const float expected = lambda * hard(own) + (1 - lambda) * hard(partner);
  std::vector<float> targets = one_hot(own, 0);
  const std::vector<float> other = one_hot(partner, 0);
  for (size_t i = 0; i < targets.size(); ++i)
    targets[i] = lambda * targets[i] + (1 - lambda) * other[i];
  const float mixed =
      loss.forward_soft(logits, Tensor::from_floats({kBatch, kClasses}, targets), stream)
          .to_floats(stream)[0];
  EXPECT_NEAR(mixed, expected, 1e-5f * expected);
}

}  // namespace
}  // namespace engine::nn
