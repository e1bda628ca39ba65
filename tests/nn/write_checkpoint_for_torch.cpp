// Writes what tests/nn/check_torchvision_loads.py checks in torchvision:
//   <folder>/resnet18.safetensors        a checkpoint of the trained test model
//                                        (checkpoint_test_model.h) with its optimizer
//   <folder>/resnet18.check.safetensors  "input" F32 [N, 3, H, W] and the engine's eval-mode
//                                        "logits" F32 [N, 10] of that model on it
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint_test_model.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"

namespace {

using namespace engine;

std::vector<float> nhwc_to_nchw(const std::vector<float>& nhwc, const Shape& shape) {
  const int64_t n = shape[0], h = shape[1], w = shape[2], c = shape[3];
  std::vector<float> nchw(nhwc.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t k = 0; k < c; ++k)
          nchw[static_cast<size_t>(((i * c + k) * h + y) * w + x)] =
              nhwc[static_cast<size_t>(((i * h + y) * w + x) * c + k)];
  return nchw;
}

void write(const std::string& folder) {
  std::filesystem::create_directories(folder);
  Stream stream;
  nn::ResNet model("resnet18", {.num_classes = testing::kCheckpointClasses});
  testing::prepare(model, stream);
  testing::set_golden_weights(model, stream);
  nn::Sgd optimizer(model.params(), testing::checkpoint_sgd_config(), stream);
  testing::train_step(model, optimizer, stream);
  nn::save_checkpoint(folder + "/resnet18.safetensors", model, optimizer,
                      testing::sample_checkpoint_state(), stream);

  const Tensor images = testing::checkpoint_images();
  const std::vector<float> logits = testing::eval_logits(model, images, stream);
  const std::vector<float> input = nhwc_to_nchw(images.to_floats(stream), images.shape());
  const Shape& s = images.shape();
  const std::vector<nn::SafetensorsTensor> check = {
      {"input", "F32", {s[0], s[3], s[1], s[2]}, input.data()},
      {"logits", "F32", {s[0], testing::kCheckpointClasses}, logits.data()}};
  nn::write_safetensors(folder + "/resnet18.check.safetensors", check);
  std::printf("wrote %s/resnet18.safetensors and resnet18.check.safetensors\n", folder.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FOLDER\n", argv[0]);
    return 2;
  }
  try {
    write(argv[1]);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  return 0;
}
