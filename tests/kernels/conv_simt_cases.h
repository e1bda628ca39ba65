// The shapes and operands the conv SIMT suites share (test_conv_simt.cpp: forward and input
// gradients; test_conv_simt_split_k.cpp: K split, filter gradients): small shapes that cross
// every tile edge, and guarded buffers with what the CPU twin reads of them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "conv_engines.h"
#include "conv_reference.h"
#include "simt_buffer.h"

namespace engine::testing {

inline std::vector<ConvCase> simt_cases() {
  return {
      {"3x3 s1 p1 odd sizes", conv_shape(2, 5, 7, 3, 5, 3, 3, 1, 1)},
      // The block tiles are 128 x 128 (K tiles 8 fp32, 32 bf16): M and N over two in each
      // pass, K over several, the scalar loads and (channel counts multiples of 8) the bf16
      // engine's 16-byte ones. 1x1 stride-2 filters keep backward data's K short.
      {"3x3 s1 p1, M over two tiles", conv_shape(2, 9, 9, 6, 40, 3, 3, 1, 1)},
      // Channels a multiple of 4, not of 8: tf32's 16-byte loads, bf16's element loads.
      {"3x3 s1 p1, vector loads of 4", conv_shape(1, 9, 9, 12, 20, 3, 3, 1, 1)},
      {"1x1 s2, M and N over two tiles", conv_shape(2, 17, 17, 6, 136, 1, 1, 2, 0)},
      {"1x1 s2, M and N over two tiles, vector loads", conv_shape(2, 17, 17, 16, 136, 1, 1, 2, 0)},
      {"1x1 s2, wide input", conv_shape(1, 12, 12, 130, 6, 1, 1, 2, 0)},
      {"1x1 s2, wide input, vector loads", conv_shape(1, 12, 12, 136, 16, 1, 1, 2, 0)},
      {"3x3 s2 p1, vector loads", conv_shape(1, 7, 7, 16, 16, 3, 3, 2, 1)},
      {"3x3 dilation 2 p2, vector loads", conv_shape(2, 9, 9, 16, 24, 3, 3, 1, 2, 2)},
      {"3x3 s2 p1 odd", conv_shape(1, 7, 6, 5, 3, 3, 3, 2, 1)},
      {"3x3 dilation 2", conv_shape(1, 9, 9, 3, 4, 3, 3, 1, 2, 2)},
      {"7x7 s2 p3 stem", conv_shape(1, 12, 12, 3, 16, 7, 7, 2, 3)},
      {"pointwise, odd N", conv_shape(2, 5, 5, 19, 70, 1, 1, 1, 0)},
      {"pointwise, M and N over two tiles", conv_shape(2, 9, 9, 19, 140, 1, 1, 1, 0)},
      {"pointwise, vector loads", conv_shape(2, 9, 9, 24, 136, 1, 1, 1, 0)},
      {"1x1 s2 downsample", conv_shape(1, 6, 6, 8, 9, 1, 1, 2, 0)},
      {"3x3 long K", conv_shape(1, 4, 4, 40, 8, 3, 3, 1, 1)},
  };
}

// The cases of simt_cases() with these names, in this order: the suites that run a few of them
// take the table's shapes rather than a copy.
inline std::vector<ConvCase> simt_cases_named(std::initializer_list<std::string_view> names) {
  const std::vector<ConvCase> all = simt_cases();
  std::vector<ConvCase> chosen;
  for (const std::string_view name : names) {
    const auto found =
        std::find_if(all.begin(), all.end(), [&](const ConvCase& c) { return c.name == name; });
    if (found == all.end()) {
      throw std::invalid_argument("simt_cases has no case '" + std::string(name) + "'");
    }
    chosen.push_back(*found);
  }
  return chosen;
}

// What the CPU twin multiplies: the buffer's bytes, or for tf32 its values rounded to tf32.
inline std::vector<std::byte> twin_bytes(const SimtBuffer& buffer, const ConvEngine& engine) {
  std::vector<float> values = buffer.values();
  if (engine.math == Fp32Math::tf32) {
    for (float& v : values)
      v = round_to_tf32(v);
  }
  return encode(engine.dtype, values);
}

// Guarded buffers standing in for device memory (simt_buffer.h), in the dtype of the test,
// and what the CPU twin reads of them. tf32 gets values with more bits than tf32 keeps, so
// that its rounding shows; the others bf16-exact ones.
struct Operands {
  Operands(const Conv2dShape& shape, const ConvEngine& engine)
      : x(engine.dtype, values(shape_numel(shape.input_shape()), 1, engine)),
        w(engine.dtype, values(shape_numel(shape.filter_shape()), 2, engine)),
        dy(engine.dtype, values(shape_numel(shape.output_shape()), 3, engine)),
        bias(DType::f32, random_values(shape.out_channels, 4)),
        cpu_x(twin_bytes(x, engine)),
        cpu_w(twin_bytes(w, engine)),
        cpu_dy(twin_bytes(dy, engine)) {}
  static std::vector<float> values(int64_t n, uint32_t seed, const ConvEngine& engine) {
    return random_values(n, seed, engine.math != Fp32Math::tf32);
  }
  SimtBuffer x, w, dy, bias;
  std::vector<std::byte> cpu_x, cpu_w, cpu_dy;
};

}  // namespace engine::testing
