// The C++ twin of tools/make_nn_goldens.py's weights and inputs: a splitmix64 stream seeded
// by FNV-1a of a name, uniform in [-1, 1) from its top 53 bits, scaled in double and rounded
// to float once, in PyTorch's flat order. Integer arithmetic and one multiply-add in double,
// so both sides produce the same bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/ops/copy.h"
#include "nn/resnet.h"

namespace engine::testing {

inline uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : text)
    h = (h ^ c) * 0x100000001B3ull;
  return h;
}

class GoldenGenerator {
 public:
  explicit GoldenGenerator(std::string_view name) : state_(fnv1a64(name)) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double symmetric() { return static_cast<double>(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0; }

 private:
  uint64_t state_;
};

// shift + scale * u for `count` values, in PyTorch's flat order.
inline std::vector<float> golden_values(std::string_view name, int64_t count, double scale,
                                        double shift = 0.0) {
  GoldenGenerator g(name);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values)
    v = static_cast<float>(shift + scale * g.symmetric());
  return values;
}

// Index of element (o, i, h, w) of an OIHW filter in the engine's KRSC [o, h, w, i] layout.
inline int64_t krsc_index_of_oihw(const Shape& krsc, int64_t oihw_flat) {
  const int64_t in = krsc[3], kh = krsc[1], kw = krsc[2];
  const int64_t w = oihw_flat % kw, h = (oihw_flat / kw) % kh, i = (oihw_flat / (kw * kh)) % in,
                o = oihw_flat / (kw * kh * in);
  return ((o * kh + h) * kw + w) * in + i;
}

// PyTorch-order values -> the engine's layout (KRSC for 4-D filters, unchanged otherwise).
inline std::vector<float> to_engine_layout(const Shape& shape, const std::vector<float>& torch) {
  if (shape.size() != 4) return torch;
  std::vector<float> engine(torch.size());
  for (int64_t j = 0; j < static_cast<int64_t>(torch.size()); ++j)
    engine[static_cast<size_t>(krsc_index_of_oihw(shape, j))] = torch[static_cast<size_t>(j)];
  return engine;
}

// The script's set_golden_weights: conv U(+-sqrt(6 / fan_out)); BN weight 1 +- 0.25, bias
// +- 0.25; fc U(+-1 / sqrt(in_features)).
inline void set_golden_weights(nn::ResNet& model, Stream& stream) {
  nn::ParameterSet& params = model.params();
  for (size_t id = 0; id < params.parameters().size(); ++id) {
    const nn::ParameterInfo& p = params.parameters()[id];
    double scale = 0.25, shift = 0.0;
    if (p.shape.size() == 4) {
      scale = std::sqrt(6.0 / static_cast<double>(p.shape[0] * p.shape[1] * p.shape[2]));
    } else if (p.name.starts_with("fc.")) {
      scale = 1.0 / std::sqrt(static_cast<double>(params.find("fc.weight")->shape[1]));
    } else if (p.name.ends_with(".weight")) {
      shift = 1.0;
    }
    const std::vector<float> values =
        to_engine_layout(p.shape, golden_values(p.name, p.numel(), scale, shift));
    Tensor view = params.value(static_cast<nn::ParameterId>(id));
    copy(Tensor::from_floats(p.shape, values), view, stream);
  }
}

// The script's input images, NCHW values -> an NHWC tensor.
inline Tensor golden_images(int64_t batch, int64_t size) {
  const std::vector<float> nchw = golden_values("input", batch * 3 * size * size, 1.0);
  std::vector<float> nhwc(nchw.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t y = 0; y < size; ++y)
        for (int64_t x = 0; x < size; ++x)
          nhwc[static_cast<size_t>(((n * size + y) * size + x) * 3 + c)] =
              nchw[static_cast<size_t>(((n * 3 + c) * size + y) * size + x)];
  return Tensor::from_floats({batch, size, size, 3}, nhwc);
}

}  // namespace engine::testing
