#include "data/random.h"

#include <cmath>
#include <cstdint>
#include <numbers>

#include "kernels/error.h"

namespace engine::data {

namespace {

constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

// 1 - u is in (0, 1], so the logarithm is finite.
float RandomSource::normal() {
  const double u1 = 1.0 - static_cast<double>(uniform(0.0, 1.0));
  const double u2 = static_cast<double>(uniform(0.0, 1.0));
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

SampleRandom::SampleRandom(uint64_t seed, uint64_t epoch, uint64_t index)
    : state_(mix64(mix64(mix64(seed + kGoldenGamma) ^ epoch) + index)) {}

uint64_t SampleRandom::next_u64() {
  state_ += kGoldenGamma;
  return mix64(state_);
}

// torch's uniform_real for float: 24 random bits scaled to [0, 1), then from + x * (to - from)
// with the bounds as floats, stored as a float.
float SampleRandom::uniform(double low, double high) {
  const auto from = static_cast<float>(low);
  const auto to = static_cast<float>(high);
  const double unit = static_cast<double>(next_u64() >> 40) * (1.0 / (1 << 24));
  return static_cast<float>(unit * (to - from) + from);
}

// Rejection of the top partial block keeps the modulo unbiased for any range.
int64_t SampleRandom::randint(int64_t low, int64_t high) {
  ENGINE_REQUIRE(low < high, "SampleRandom::randint: empty range");
  const auto range = static_cast<uint64_t>(high - low);
  const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t value = next_u64();
  while (value >= limit)
    value = next_u64();
  return low + static_cast<int64_t>(value % range);
}

}  // namespace engine::data
