// The model the checkpoint tests save and load: resnet18 (10 classes) with the golden weights
// (golden_weights.h) after one SGD step with momentum, so that the BN statistics, the batch
// counters and the momentum buffer all hold something other than their initial values; and a
// temporary folder for the files.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "golden_weights.h"
#include "nn/checkpoint.h"
#include "nn/cross_entropy.h"
#include "nn/resnet.h"
#include "nn/sgd.h"

namespace engine::testing {

inline constexpr int64_t kCheckpointClasses = 10;
inline constexpr int64_t kCheckpointBatch = 4;
inline constexpr int64_t kCheckpointImageSize = 32;

// A fresh folder under the system's temporary directory, removed with everything in it.
class TempFolder {
 public:
  TempFolder() {
    std::string templ =
        (std::filesystem::temp_directory_path() / "checkpoint_test_XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
  }
  ~TempFolder() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline nn::SgdConfig checkpoint_sgd_config() {
  nn::SgdConfig config;
  config.lr = 0.05f;
  config.momentum = 0.9f;
  config.weight_decay = 1e-4f;
  config.decay_norm_and_bias = false;
  return config;
}

inline Tensor checkpoint_images() {
  return golden_images(kCheckpointBatch, kCheckpointImageSize);
}

// One forward (train mode), cross-entropy loss, backward and optimizer step at rate lr
// (checkpoint_sgd_config's by default).
inline void train_step(nn::ResNet& model, nn::Optimizer& optimizer, Stream& stream,
                       float lr = 0.05f) {
  const Tensor images = checkpoint_images();
  const Tensor labels = Tensor::from_ints({kCheckpointBatch}, {3, 7, 0, 9});
  nn::CrossEntropyLoss loss;
  loss.setup(kCheckpointBatch, model.options().num_classes, DType::f32, Device::cpu());
  nn::Pass pass{stream, true, false, {}};
  model.params().zero_grad();
  const Tensor& logits = model.forward(images, pass);
  loss.forward(logits, labels, stream);
  model.backward(loss.backward(stream), pass);
  optimizer.step(lr, stream);
}

// Allocates `model` on the CPU (initialized from its options' seed) and sets it up for the
// checkpoint batch.
inline void prepare(nn::ResNet& model, Stream& stream) {
  model.allocate(Device::cpu(), stream);
  model.setup({kCheckpointBatch, kCheckpointImageSize, kCheckpointImageSize, 3}, DType::f32,
              stream);
}

inline std::vector<float> eval_logits(nn::ResNet& model, const Tensor& images, Stream& stream) {
  nn::Pass pass{stream, false, false, {}};
  return model.forward(images, pass).to_floats(stream);
}

inline nn::CheckpointState sample_checkpoint_state() {
  nn::CheckpointState state;
  state.epoch = 3;
  state.step = 1234;
  state.sampler = {4, 1280};
  state.classes = {"T-shirt/top", "Trouser", "a, b", "quote \" and \\ backslash",
                   "naïve",       "日本",    "",     "7",
                   "8",           "9"};
  state.image_size = 224;
  state.normalize_mean = {0.485f, 0.456f, 0.406f};
  state.normalize_std = {0.229f, 0.224f, 0.225f};
  state.seed = 18446744073709551557ull;
  state.extra = {{"lr_schedule", "cosine(warmup=5)"}, {"note", "{\"json\": [1, 2]}"}};
  return state;
}

}  // namespace engine::testing
