// The shapes a ResNet training step runs its ops on, from which each op's description picks
// its cases: the activations (the stem's output and each stage's), the fc layer, the logits,
// the parameter count and the distinct convolutions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/resnet_layers.h"
#include "kernels/tensor.h"

namespace engine::op_registry {

struct Activation {
  std::string name;  // "stem out", "layer1", ...
  Shape nhwc;
};

struct ModelShapes {
  std::string arch;  // resnet18 or resnet50
  int64_t batch = 0;
  int64_t image_size = 0;
  // The stem's output (before the max-pool) and each stage's output (the residual sums).
  std::vector<Activation> activations;
  int64_t features = 0;    // the fc layer's inputs
  int64_t classes = 0;     // its outputs, the logits' width
  int64_t parameters = 0;  // torchvision's parameter count: the SGD step's length
  std::vector<bench::ConvLayer> conv_layers;

  // "resnet18 layer1 [8, 56, 56, 64]": the prefix of an activation's case names.
  std::string prefix(const Activation& a) const;
};

// resnet18 or resnet50 at image_size (224: activations of 112, 56, 28, 14 and 7 px).
ModelShapes model_shapes(const std::string& arch, int64_t batch, int64_t image_size);

}  // namespace engine::op_registry
