// The forward's BatchNorm statistics from the convolutions' epilogues (nn::Conv2d::
// feed_batchnorm_stats, on by default on CUDA) against each BatchNorm's own statistics pass
// (ResNet::set_fusion(false), resnet_train --no-fusion): one resnet18 training step on the
// same weights and images, compared as far as each precision lets it be (below).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/conv_shape.h"
#include "kernels/ops/conv.h"
#include "kernels/runtime.h"
#include "nn/cross_entropy.h"
#include "nn/resnet.h"

namespace engine::nn {
namespace {

constexpr int64_t kBatch = 2, kSize = 32, kClasses = 10;

struct StepResult {
  std::vector<float> logits;
  std::vector<std::vector<float>> grads;    // per parameter, registration order
  std::vector<std::vector<float>> buffers;  // the running statistics
};

StepResult one_step(bool fusion, DType dtype, Fp32Math math) {
  const Device gpu = Device::cuda(0);
  Stream stream(gpu);
  stream.set_fp32_math(math);
  ResNet model("resnet18", {.num_classes = kClasses, .seed = 5});
  model.allocate(gpu, stream);
  model.set_fusion(fusion);
  model.setup({kBatch, kSize, kSize, 3}, dtype, stream);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> pixels(static_cast<size_t>(kBatch * kSize * kSize * 3));
  for (float& v : pixels)
    v = normal(rng);
  const Tensor images =
      Tensor::from_floats({kBatch, kSize, kSize, 3}, pixels, dtype).to(gpu, stream);
  const Tensor labels = Tensor::from_ints({kBatch}, {1, 4}).to(gpu, stream);
  CrossEntropyLoss loss;
  loss.setup(kBatch, kClasses, dtype, gpu);
  Pass pass{stream, true, false, {}};
  model.params().zero_grad();
  const Tensor& logits = model.forward(images, pass);
  loss.forward(logits, labels, stream);
  model.backward(loss.backward(stream), pass);
  StepResult run{logits.to_floats(stream), {}, {}};
  for (size_t id = 0; id < model.params().parameters().size(); ++id)
    run.grads.push_back(model.params().grad(static_cast<ParameterId>(id)).to_floats(stream));
  for (size_t id = 0; id < model.params().buffers().size(); ++id)
    run.buffers.push_back(model.params().buffer(static_cast<BufferId>(id)).to_floats(stream));
  return run;
}

double relative_l2(const std::vector<float>& actual, const std::vector<float>& expected) {
  double diff = 0, norm = 1e-30;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff += (double{actual[i]} - expected[i]) * (double{actual[i]} - expected[i]);
    norm += double{expected[i]} * expected[i];
  }
  return actual.size() == expected.size() ? std::sqrt(diff / norm) : INFINITY;
}

// The two steps differ only in how each BatchNorm's statistics are summed where a convolution
// takes the epilogue (its tiles of 64 or 128 rows and Chan merges against batchnorm_stats'
// slices): fp32 sums ~1e-7 apart. What the step makes of that depends on the precision:
//   bf16: the BatchNorms' outputs round to 8 bits, which absorbs the difference but where an
//     element sits at a rounding boundary; measured 7.4e-3 at most (early layers' gradients),
//     logits and most tensors identical: 2e-2 of each tensor's norm.
//   tf32: outputs stay fp32, and each convolution rounds its input to tf32, a step function:
//     the 1e-7 moves some inputs across a rounding boundary, and the step carries that on, up
//     to 10% at batch 2 (layer4's BatchNorms over 2 values per channel cancel in backward).
//     The first BatchNorm sees the same stem output in both steps: its running statistics
//     (buffers 0, 1) agree within 1e-5 of their norm (measured 4.7e-7).
//   fp32: every convolution falls back to the separate pass (the SIMT engine has no staged
//     epilogue), so the steps are the same bit for bit: the plumbing changes nothing else.
void expect_fused_path(DType dtype, Fp32Math math, ConvStatsPath path) {
  // The stem's convolution (7x7/2, 3 -> 64 channels) takes `path`.
  const Device gpu = Device::cuda(0);
  Stream stream(gpu);
  stream.set_fp32_math(math);
  const Conv2dShape stem = make_conv2d_shape(kBatch, kSize, 3, 64, 7, 2, 3);
  const Tensor y = Tensor::empty(stem.output_shape(), dtype, gpu);
  EXPECT_EQ(conv2d_forward_stats_path(stem, y, Tensor(), stream), path);
}

TEST(ResNetCuda, FusedBatchNormStatsStepMatchesBf16) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  expect_fused_path(DType::bf16, Fp32Math::exact, ConvStatsPath::epilogue);
  const StepResult fused = one_step(true, DType::bf16, Fp32Math::exact);
  const StepResult plain = one_step(false, DType::bf16, Fp32Math::exact);
  constexpr double kTolerance = 2e-2;
  EXPECT_LE(relative_l2(fused.logits, plain.logits), kTolerance) << "logits";
  ASSERT_EQ(fused.grads.size(), plain.grads.size());
  for (size_t id = 0; id < plain.grads.size(); ++id)
    EXPECT_LE(relative_l2(fused.grads[id], plain.grads[id]), kTolerance) << "gradient " << id;
  for (size_t id = 0; id < plain.buffers.size(); ++id)
    EXPECT_LE(relative_l2(fused.buffers[id], plain.buffers[id]), kTolerance) << "buffer " << id;
}

TEST(ResNetCuda, FusedBatchNormStatsStemMatchesTf32) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  expect_fused_path(DType::f32, Fp32Math::tf32, ConvStatsPath::epilogue);
  const StepResult fused = one_step(true, DType::f32, Fp32Math::tf32);
  const StepResult plain = one_step(false, DType::f32, Fp32Math::tf32);
  for (size_t id : {0, 1})
    EXPECT_LE(relative_l2(fused.buffers[id], plain.buffers[id]), 1e-5) << "buffer " << id;
}

TEST(ResNetCuda, FusedBatchNormStatsFallBackBitForBitInFp32) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  expect_fused_path(DType::f32, Fp32Math::exact, ConvStatsPath::separate_pass);
  const StepResult fused = one_step(true, DType::f32, Fp32Math::exact);
  const StepResult plain = one_step(false, DType::f32, Fp32Math::exact);
  EXPECT_EQ(fused.logits, plain.logits);
  EXPECT_EQ(fused.grads, plain.grads);
  EXPECT_EQ(fused.buffers, plain.buffers);
}

}  // namespace
}  // namespace engine::nn
