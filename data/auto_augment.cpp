#include "data/auto_augment.h"

#include <cmath>

#include "kernels/error.h"

namespace engine::data {

namespace {

// The op with its magnitude drawn or picked, sign applied (autoaugment.py's forward).
double signed_magnitude(AugmentOp op, const std::vector<float>& bins, int64_t bin,
                        RandomSource& random) {
  double magnitude = bins.empty() ? 0.0 : static_cast<double>(bins[static_cast<size_t>(bin)]);
  if (is_signed_op(op) && random.randint(0, 2) != 0) magnitude = -magnitude;
  return magnitude;
}

}  // namespace

// torch 1.13's linspace kernel (RangeFactoriesKernel.cpp) as the x86-64 build dispatches it
// (AVX2): step = (end - start) / (steps - 1) in float32; blocks of 16 values are two 8-lane
// Vectorized::arange(base, step) (base + i * step, rounded twice) whose base is start + step *
// idx; the rest is the scalar end - step * (steps - 1 - idx) for the second half, which the
// compiler fused into one FMA (start + step * idx for the first half). Checked against torch
// by the golden tables (tests/data/test_augment_ops.cpp); a torch built another way may differ
// in the last bit of a few bins.
std::vector<float> torch_linspace(double start_in, double end_in, int steps) {
  ENGINE_REQUIRE(steps >= 1, "torch_linspace: steps must be >= 1");
  const auto start = static_cast<float>(start_in);
  const auto end = static_cast<float>(end_in);
  std::vector<float> values(static_cast<size_t>(steps));
  if (steps == 1) {
    values[0] = start;
    return values;
  }
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  constexpr int kLanes = 8;
  int idx = 0;
  for (; idx + 2 * kLanes <= steps; idx += kLanes) {
    const float base = idx < halfway ? start + step * static_cast<float>(idx)
                                     : end - step * static_cast<float>(steps - idx - 1);
    for (int lane = 0; lane < kLanes; ++lane)
      values[static_cast<size_t>(idx + lane)] = base + static_cast<float>(lane) * step;
  }
  for (; idx < steps; ++idx) {
    values[static_cast<size_t>(idx)] =
        idx < halfway ? std::fma(step, static_cast<float>(idx), start)
                      : std::fma(-step, static_cast<float>(steps - idx - 1), end);
  }
  return values;
}

bool is_signed_op(AugmentOp op) {
  switch (op) {
    case AugmentOp::shear_x:
    case AugmentOp::shear_y:
    case AugmentOp::translate_x:
    case AugmentOp::translate_y:
    case AugmentOp::rotate:
    case AugmentOp::brightness:
    case AugmentOp::color:
    case AugmentOp::contrast:
    case AugmentOp::sharpness:
      return true;
    default:
      return false;
  }
}

std::vector<float> magnitude_bins(AutoAugmentPolicy policy, AugmentOp op, int bins, int width,
                                  int height) {
  const bool wide = policy == AutoAugmentPolicy::trivial_augment_wide;
  const double enhance = wide ? 0.99 : 0.9;
  switch (op) {
    case AugmentOp::shear_x:
    case AugmentOp::shear_y:
      return torch_linspace(0.0, wide ? 0.99 : 0.3, bins);
    case AugmentOp::translate_x:
      return torch_linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * width, bins);
    case AugmentOp::translate_y:
      return torch_linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * height, bins);
    case AugmentOp::rotate:
      return torch_linspace(0.0, wide ? 135.0 : 30.0, bins);
    case AugmentOp::brightness:
    case AugmentOp::color:
    case AugmentOp::contrast:
    case AugmentOp::sharpness:
      return torch_linspace(0.0, enhance, bins);
    case AugmentOp::posterize: {
      // 8 - (arange(bins) / ((bins - 1) / k)).round().int(), the division in float32.
      const auto divisor = static_cast<float>((bins - 1) / (wide ? 6.0 : 4.0));
      std::vector<float> values(static_cast<size_t>(bins));
      for (int i = 0; i < bins; ++i) {
        values[static_cast<size_t>(i)] =
            8.0f - std::nearbyint(static_cast<float>(i) / divisor);  // round half to even
      }
      return values;
    }
    case AugmentOp::solarize:
      return torch_linspace(255.0, 0.0, bins);
    default:
      return {};
  }
}

void apply_auto_augment(const AutoAugmentOptions& options, RgbImage& image, RgbImage& scratch,
                        RandomSource& random) {
  if (options.policy == AutoAugmentPolicy::none) return;
  const int bins = options.num_magnitude_bins;
  if (options.policy == AutoAugmentPolicy::rand_augment) {
    ENGINE_REQUIRE(options.magnitude >= 0 && options.magnitude < bins,
                   "RandAugment: magnitude must be in 0.." + std::to_string(bins - 1));
    for (int i = 0; i < options.num_ops; ++i) {
      const auto op = static_cast<AugmentOp>(random.randint(0, kAugmentOpCount));
      const std::vector<float> table =
          magnitude_bins(options.policy, op, bins, image.width, image.height);
      const double magnitude = signed_magnitude(op, table, options.magnitude, random);
      apply_augment_op(op, magnitude, image, scratch);
    }
    return;
  }
  const auto op = static_cast<AugmentOp>(random.randint(0, kAugmentOpCount));
  const std::vector<float> table =
      magnitude_bins(options.policy, op, bins, image.width, image.height);
  const int64_t bin = table.empty() ? 0 : random.randint(0, static_cast<int64_t>(table.size()));
  apply_augment_op(op, signed_magnitude(op, table, bin, random), image, scratch);
}

}  // namespace engine::data
