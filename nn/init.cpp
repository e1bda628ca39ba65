#include "nn/init.h"

#include <cmath>
#include <numbers>
#include <vector>

#include "kernels/error.h"
#include "kernels/ops/copy.h"

namespace engine::nn {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Host values -> t (f32, any device).
void assign(Tensor& t, const std::vector<float>& values, Stream& stream) {
  if (t.dtype() != DType::f32) fail("nn init: expected an f32 parameter, got " + t.describe());
  Tensor host = Tensor::from_floats(t.shape(), values);
  copy(host, t, stream);
  if (t.device().is_cuda()) stream.synchronize();  // host is freed on return
}

}  // namespace

InitRandom::InitRandom(uint64_t seed, uint64_t stream_id) {
  uint64_t mix = seed;
  state_ = splitmix64(mix) ^ (stream_id * 0xD1B54A32D192ED03ull);
}

double InitRandom::uniform() {
  return static_cast<double>(splitmix64(state_) >> 11) * 0x1.0p-53;
}

double InitRandom::normal() {
  // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
  const double u = 1.0 - uniform(), v = uniform();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
}

void kaiming_normal_fan_out(Tensor& filter, uint64_t seed, uint64_t stream_id, Stream& stream) {
  if (filter.dim() != 4)
    fail("kaiming_normal_fan_out: expected a KRSC filter, got " + filter.describe());
  const double fan_out = static_cast<double>(filter.size(0) * filter.size(1) * filter.size(2));
  const double std_dev = std::sqrt(2.0 / fan_out);
  InitRandom random(seed, stream_id);
  std::vector<float> values(static_cast<size_t>(filter.numel()));
  for (float& v : values)
    v = static_cast<float>(random.normal() * std_dev);
  assign(filter, values, stream);
}

void uniform_fill(Tensor& t, double bound, uint64_t seed, uint64_t stream_id, Stream& stream) {
  InitRandom random(seed, stream_id);
  std::vector<float> values(static_cast<size_t>(t.numel()));
  for (float& v : values)
    v = static_cast<float>((2.0 * random.uniform() - 1.0) * bound);
  assign(t, values, stream);
}

}  // namespace engine::nn
