// The distinct convolution layers of a ResNet of the zoo (nn/resnet.h) at image_size, walked
// from the model itself, with how many times each occurs (so totals weigh layers as training
// does). Each is named after its first occurrence, e.g. "layer2.0.conv2 3x3/2 128->128".
#pragma once

#include <string>
#include <vector>

#include "kernels/conv_shape.h"

namespace engine::bench {

struct ConvLayer {
  std::string name;
  Conv2dShape shape;
  int count = 1;
};

std::vector<ConvLayer> resnet_conv_layers(const std::string& arch, int64_t batch,
                                          int64_t image_size = 224);

}  // namespace engine::bench
