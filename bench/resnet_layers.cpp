#include "bench/resnet_layers.h"

#include <map>
#include <tuple>

#include "nn/resnet.h"

namespace engine::bench {

namespace {

// "layer2.0.conv2 3x3/2 128->128": the first layer of that geometry, and the geometry.
std::string layer_name(const nn::Conv2d& conv) {
  const Conv2dShape& s = conv.shape();
  // Appended piece by piece: g++ 12 warns falsely (-Wrestrict) on "/" + std::to_string(...).
  std::string name = conv.name();
  name.append(" ").append(std::to_string(s.kernel_h)).append("x");
  name.append(std::to_string(s.kernel_w));
  if (s.stride_h != 1) name.append("/").append(std::to_string(s.stride_h));
  name.append(" ").append(std::to_string(s.in_channels)).append("->");
  return name.append(std::to_string(s.out_channels));
}

}  // namespace

std::vector<ConvLayer> resnet_conv_layers(const std::string& arch, int64_t batch,
                                          int64_t image_size) {
  nn::ResNet model(arch, {});  // throws, naming the choices, for an unknown arch
  model.plan({batch, image_size, image_size, 3});
  std::vector<ConvLayer> layers;
  // Convolutions of the same geometry are timed once and weighed by how often they occur.
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>, size_t> seen;
  for (const nn::Conv2d* conv : model.conv_layers()) {
    const Conv2dShape& s = conv->shape();
    const auto key =
        std::make_tuple(s.in_h, s.in_channels, s.out_channels, s.kernel_h, s.stride_h, s.pad_h);
    const auto found = seen.find(key);
    if (found != seen.end()) {
      ++layers[found->second].count;
      continue;
    }
    seen.emplace(key, layers.size());
    layers.push_back({layer_name(*conv), s, 1});
  }
  return layers;
}

}  // namespace engine::bench
