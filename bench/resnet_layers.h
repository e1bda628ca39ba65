// The distinct convolution layers of torchvision's ResNet-18 and ResNet-50 at 224x224, with
// how many times each occurs in the network (so totals weigh layers as training does).
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
