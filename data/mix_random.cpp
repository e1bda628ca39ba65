#include "data/mix_random.h"

#include <cmath>
#include <numbers>

#include "kernels/error.h"

namespace engine::data {

namespace {

// Keeps these streams apart from the per-sample ones (data/random.h) of the same seed, and
// the ranks' apart from each other (an odd multiplier: distinct ranks, distinct seeds).
constexpr uint64_t kMixStreamTag = 0x6D69787570ull;  // "mixup"
constexpr uint64_t kRankStride = 0xD1B54A32D192ED03ull;

}  // namespace

BatchMixRandom::BatchMixRandom(uint64_t seed, uint64_t rank, uint64_t epoch, uint64_t batch)
    : bits_(seed ^ kMixStreamTag ^ (rank * kRankStride), epoch, batch) {}

// 53 random bits, as numpy's random_sample.
double BatchMixRandom::uniform() {
  return static_cast<double>(bits_.next_u64() >> 11) * 0x1p-53;
}

// Box-Muller; one of the pair is dropped to keep the generator stateless between calls.
double BatchMixRandom::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// log of a Gamma(alpha, 1) variate. For alpha < 1, Gamma(alpha) = Gamma(alpha + 1) U^(1/alpha)
// (Marsaglia and Tsang's boost), whose log is a sum rather than a product that underflows.
double BatchMixRandom::log_gamma_variate(double alpha) {
  if (alpha < 1.0) {
    const double u = 1.0 - uniform();  // (0, 1]
    return log_gamma_variate(alpha + 1.0) + std::log(u) / alpha;
  }
  const double d = alpha - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x = 0, v = 0;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return std::log(d * v);
  }
}

double BatchMixRandom::beta(double alpha) {
  ENGINE_REQUIRE(alpha > 0.0, "BatchMixRandom::beta: alpha must be > 0");
  const double log_x = log_gamma_variate(alpha);
  const double log_y = log_gamma_variate(alpha);
  // X / (X + Y) = 1 / (1 + Y / X)
  return 1.0 / (1.0 + std::exp(log_y - log_x));
}

}  // namespace engine::data
