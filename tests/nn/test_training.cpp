// The engine learns: 200 single-process SGD steps of resnet18 on a fixed random batch of 16
// images (32x32, 10 classes) drive the training loss from chance (ln 10 = 2.3) to near zero,
// as memorizing a batch should; a model that cannot learn (a wrong gradient sign or a
// gradient that never reaches the weights) stays near 2.3.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "nn/cross_entropy.h"
#include "nn/resnet.h"
#include "nn/sgd.h"

namespace engine::nn {
namespace {

TEST(Training, Resnet18MemorizesAFixedBatchIn200Steps) {
  constexpr int64_t kBatch = 16, kSize = 32, kClasses = 10;
  constexpr int kSteps = 200;
  Stream stream;
  ResNet model("resnet18", {.num_classes = kClasses, .seed = 3});
  model.allocate(Device::cpu(), stream);
  model.setup({kBatch, kSize, kSize, 3}, DType::f32, stream);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> pixels(static_cast<size_t>(kBatch * kSize * kSize * 3));
  for (float& v : pixels)
    v = normal(rng);
  std::vector<int32_t> labels(kBatch);
  for (int32_t& l : labels)
    l = static_cast<int32_t>(rng() % kClasses);
  const Tensor images = Tensor::from_floats({kBatch, kSize, kSize, 3}, pixels);
  const Tensor label_tensor = Tensor::from_ints({kBatch}, labels);
  CrossEntropyLoss loss;
  loss.setup(kBatch, kClasses, DType::f32, Device::cpu());
  SgdConfig config;
  config.lr = 0.02f;
  config.momentum = 0.9f;
  config.weight_decay = 1e-4f;
  Sgd sgd(model.params(), config, stream);

  std::vector<double> losses;
  for (int step = 0; step < kSteps; ++step) {
    Pass pass{stream, true, false, {}};
    model.params().zero_grad();
    losses.push_back(
        loss.forward(model.forward(images, pass), label_tensor, stream).to_floats(stream)[0]);
    model.backward(loss.backward(stream), pass);
    sgd.step(config.lr, stream);
    ASSERT_TRUE(std::isfinite(losses.back())) << "step " << step;
  }
  const auto mean = [&](size_t first, size_t count) {
    return std::accumulate(losses.begin() + first, losses.begin() + first + count, 0.0) / count;
  };
  const double end = mean(kSteps - 10, 10);
  std::printf("  loss: step 0 %.4f, steps 1-10 %.4f, last 10 steps %.6f\n", losses[0],
              mean(1, 10), end);
  EXPECT_GT(losses[0], 1.5);  // chance is ln 10
  EXPECT_LT(mean(1, 10), losses[0]);
  EXPECT_LT(end, 0.05);
}

}  // namespace
}  // namespace engine::nn
