#include "bench/ops/model_shapes.h"

#include "kernels/error.h"
#include "kernels/ops/pool.h"

namespace engine::op_registry {

namespace {

constexpr int64_t kClasses = 1000;  // ImageNet

// What differs between the two networks outside their convolutions.
struct Arch {
  int64_t stage_widths[4];  // channels of each stage's output (the residual sums)
  int64_t parameters;       // torchvision's parameter count
};

Arch arch_info(const std::string& arch) {
  if (arch == "resnet18") return {{64, 128, 256, 512}, 11'689'512};
  if (arch == "resnet50") return {{256, 512, 1024, 2048}, 25'557'032};
  fail("bench: unknown --arch '" + arch + "' (use resnet18 or resnet50)");
}

}  // namespace

std::string ModelShapes::prefix(const Activation& a) const {
  return arch + " " + a.name + " " + shape_str(a.nhwc);
}

ModelShapes model_shapes(const std::string& arch, int64_t batch, int64_t image_size) {
  const Arch info = arch_info(arch);
  ModelShapes model;
  model.arch = arch;
  model.batch = batch;
  model.image_size = image_size;
  // The stem's 7x7/2 conv (pad 3) and each later stage's stride 2 halve the size rounding up,
  // as does the stem's max-pool (3, 2, 1) before layer1.
  auto halved = [](int64_t size) { return (size + 1) / 2; };
  const int64_t stem = halved(image_size);
  int64_t size = MaxPool2dParams{}.output_size(stem);
  model.activations.push_back({"stem out", {batch, stem, stem, 64}});
  for (int stage = 0; stage < 4; ++stage) {
    if (stage > 0) size = halved(size);
    model.activations.push_back(
        {"layer" + std::to_string(stage + 1), {batch, size, size, info.stage_widths[stage]}});
  }
  model.features = info.stage_widths[3];
  model.classes = kClasses;
  model.parameters = info.parameters;
  model.conv_layers = bench::resnet_conv_layers(arch, batch, image_size);
  return model;
}

}  // namespace engine::op_registry
