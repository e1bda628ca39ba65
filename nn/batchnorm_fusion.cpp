#include "nn/batchnorm_fusion.h"

namespace engine::nn {

namespace {
constexpr std::string_view kNames[] = {"none", "stats", "apply", "block", "full"};
}

std::optional<BatchNormFusion> batchnorm_fusion_from_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (name == kNames[i]) return static_cast<BatchNormFusion>(i);
  }
  return std::nullopt;
}

std::string_view batchnorm_fusion_name(BatchNormFusion fusion) {
  return kNames[static_cast<size_t>(fusion)];
}

}  // namespace engine::nn
