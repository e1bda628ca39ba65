// Values that tests and the op registry's cases draw from seeds, and the roundings that the
// tensor cores apply, on the host. Header-only and light: the SIMT emulator's tests include it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/bfloat16.h"
#include "kernels/dtype.h"

namespace engine::op_registry {

// One bf16 unit in the last place, relative: the 8-bit mantissa (7 stored bits) rounds to
// within half of it; a fp32 result rounded to bf16 by two implementations may differ by one.
inline constexpr double kBf16Ulp = 1.0 / 128.0;

// Normal(mean, std) values from a seed, already representable in dtype.
inline std::vector<float> normal_values(int64_t n, uint32_t seed, DType dtype, double mean = 0,
                                        double std = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(mean, std);
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) {
    v = static_cast<float>(normal(rng));
    if (dtype == DType::bf16) v = static_cast<float>(bf16(v));
  }
  return values;
}

// x rounded to TF32 (10 fraction bits), to nearest with ties away from zero, as
// cvt.rna.tf32.f32 does; worked out from x's two neighbours rather than by bit tricks, as the
// reference of the tf32 engine's operands.
inline float round_to_tf32(float x) {
  if (!std::isfinite(x) || x == 0) return x;
  int exponent;
  std::frexp(x, &exponent);  // |x| in [2^(exponent - 1), 2^exponent)
  // One unit of the 10th fraction bit; below the normal range, fp32's fixed subnormal scale.
  const double unit = std::max(std::ldexp(1.0, exponent - 11), std::ldexp(1.0, -136));
  const double toward_zero = std::trunc(static_cast<double>(x) / unit) * unit;
  const double rest = std::abs(static_cast<double>(x) - toward_zero);
  return static_cast<float>(rest * 2 >= unit ? toward_zero + std::copysign(unit, x) : toward_zero);
}

}  // namespace engine::op_registry
