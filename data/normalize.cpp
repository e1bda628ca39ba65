#include "data/normalize.h"

#include <cstddef>

#include "kernels/error.h"

namespace engine::data {

Normalizer::Normalizer(const ChannelValues& mean, const ChannelValues& std) {
  for (int c = 0; c < 3; ++c) {
    ENGINE_REQUIRE(std[c] != 0.0f, "Normalizer: std of channel " + std::to_string(c) + " is 0");
    for (int level = 0; level < 256; ++level) {
      const float unit = static_cast<float>(level) / 255.0f;
      f32_[c][level] = (unit - mean[c]) / std[c];
      bf16_[c][level] = bf16(f32_[c][level]);
    }
  }
}

template <typename T>
void Normalizer::write_as(const std::array<std::array<T, 256>, 3>& table, const uint8_t* rgb,
                          int width, int height, bool mirror, T* out) const {
  for (int y = 0; y < height; ++y) {
    const uint8_t* in = rgb + static_cast<size_t>(y) * width * 3;
    T* row = out + static_cast<size_t>(y) * width * 3;
    for (int x = 0; x < width; ++x) {
      const uint8_t* pixel = in + static_cast<size_t>(mirror ? width - 1 - x : x) * 3;
      row[x * 3 + 0] = table[0][pixel[0]];
      row[x * 3 + 1] = table[1][pixel[1]];
      row[x * 3 + 2] = table[2][pixel[2]];
    }
  }
}

void Normalizer::write(const uint8_t* rgb, int width, int height, bool mirror, DType dtype,
                       void* out) const {
  if (dtype == DType::f32) {
    write_as(f32_, rgb, width, height, mirror, static_cast<float*>(out));
  } else if (dtype == DType::bf16) {
    write_as(bf16_, rgb, width, height, mirror, static_cast<bf16*>(out));
  } else {
    // Not fail_not_float_dtype: the decode fuzzer links this file without kernels/dtype.cpp.
    fail("Normalizer::write: images are f32 or bf16, not an integer dtype");
  }
}

}  // namespace engine::data
