// The learning check both precisions use: resnet18 (10 classes) trained with SGD (lr 0.02,
// momentum 0.9) on one fixed batch of 16 random 32x32 images with random labels, which it
// should memorize. Returns the loss of every step.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "nn/cross_entropy.h"
#include "nn/resnet.h"
#include "nn/sgd.h"

namespace engine::testing {

struct MemorizeBatch {
  DType dtype = DType::f32;
  int steps = 200;
  uint64_t model_seed = 0;
  uint32_t data_seed = 0;
  float weight_decay = 0.f;
};

inline std::vector<double> memorize_batch(const MemorizeBatch& run) {
  constexpr int64_t kImages = 16, kSize = 32, kClasses = 10;
  Stream stream;
  nn::ResNet model("resnet18", {.num_classes = kClasses, .seed = run.model_seed});
  model.allocate(Device::cpu(), stream);
  model.setup({kImages, kSize, kSize, 3}, run.dtype, stream);
  std::mt19937 rng(run.data_seed);
  std::normal_distribution<float> normal;
  std::vector<float> pixels(static_cast<size_t>(kImages * kSize * kSize * 3));
  for (float& v : pixels)
    v = normal(rng);
  std::vector<int32_t> labels(kImages);
  for (int32_t& l : labels)
    l = static_cast<int32_t>(rng() % kClasses);
  const Tensor images = Tensor::from_floats({kImages, kSize, kSize, 3}, pixels, run.dtype);
  const Tensor label_tensor = Tensor::from_ints({kImages}, labels);
  nn::CrossEntropyLoss loss;
  loss.setup(kImages, kClasses, run.dtype, Device::cpu());
  nn::SgdConfig config;
  config.lr = 0.02f;
  config.momentum = 0.9f;
  config.weight_decay = run.weight_decay;
  nn::Sgd sgd(model.params(), config, stream);
  std::vector<double> losses;
  for (int step = 0; step < run.steps; ++step) {
    nn::Pass pass{stream, true, false, {}};
    model.params().zero_grad();
    losses.push_back(
        loss.forward(model.forward(images, pass), label_tensor, stream).to_floats(stream)[0]);
    model.backward(loss.backward(stream), pass);
    sgd.step(config.lr, stream);
  }
  return losses;
}

}  // namespace engine::testing
