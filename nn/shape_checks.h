// Setup-time checks of the input shapes layers are given, naming the layer.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"
#include "nn/layer.h"

namespace engine::nn {

// input is [N, H, W, channels] with every extent >= 1 (channels < 0: any channel count).
void require_nhwc(const Layer& layer, const Shape& input, int64_t channels);
// "layer1.0.conv1 (Conv2d): <what>"
[[noreturn]] void fail_in(const Layer& layer, const std::string& what);

}  // namespace engine::nn
