// ToTensor + Normalize as one table lookup per byte: (level / 255 - mean) / std, computed in
// float32 in torchvision's order (div, sub, div), so f32 outputs equal torchvision's bit for bit
// and bf16 outputs are those values rounded to nearest even.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/bfloat16.h"
#include "kernels/dtype.h"

namespace engine::data {

using ChannelValues = std::array<float, 3>;
inline constexpr ChannelValues kImageNetMean = {0.485f, 0.456f, 0.406f};
inline constexpr ChannelValues kImageNetStd = {0.229f, 0.224f, 0.225f};

class Normalizer {
 public:
  explicit Normalizer(const ChannelValues& mean = kImageNetMean,
                      const ChannelValues& std = kImageNetStd);

  float value(int channel, uint8_t level) const { return f32_[channel][level]; }

  // Writes width x height packed RGB8 pixels as NHWC values of `dtype` to `out`; `mirror`
  // reverses each row (RandomHorizontalFlip).
  void write(const uint8_t* rgb, int width, int height, bool mirror, DType dtype, void* out) const;

 private:
  template <typename T>
  void write_as(const std::array<std::array<T, 256>, 3>& table, const uint8_t* rgb, int width,
                int height, bool mirror, T* out) const;

  std::array<std::array<float, 256>, 3> f32_{};
  std::array<std::array<bf16, 256>, 3> bf16_{};
};

}  // namespace engine::data
