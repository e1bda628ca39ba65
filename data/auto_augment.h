// torchvision 0.14's RandAugment and TrivialAugmentWide (transforms/autoaugment.py) with their
// defaults: 31 magnitude bins, NEAREST, fill None; on the 8-bit image after the crop and flip,
// as torchvision's classification reference orders them. The ops are data/augment_ops.h.
//
// Draws, in torchvision's order, all through RandomSource::randint:
//   RandAugment, num_ops times: the op (0..13), then for a signed op one sign (1: negative);
//   TrivialAugmentWide: the op, then for an op with magnitudes the bin, then the sign if signed.
#pragma once

#include <string_view>
#include <vector>

#include "data/augment_ops.h"
#include "data/image.h"
#include "data/random.h"

namespace engine::data {

enum class AutoAugmentPolicy { none, rand_augment, trivial_augment_wide };

struct AutoAugmentOptions {
  AutoAugmentPolicy policy = AutoAugmentPolicy::none;
  int num_ops = 2;              // RandAugment's
  int magnitude = 9;            // RandAugment's bin, 0..num_magnitude_bins - 1
  int num_magnitude_bins = 31;  // both
};

// torch.linspace(start, end, steps) in float32, as torch 1.13's CPU kernel computes it.
std::vector<float> torch_linspace(double start, double end, int steps);

// The op's magnitudes by bin (torchvision's _augmentation_space; Posterize's integers as
// floats); empty for Identity, AutoContrast and Equalize, which take none. RandAugment's
// translations scale with the image (150/331 of its width or height); TrivialAugmentWide's
// are up to 32 px.
std::vector<float> magnitude_bins(AutoAugmentPolicy policy, AugmentOp op, int bins, int width,
                                  int height);

// Whether torchvision draws a sign for the op.
bool is_signed_op(AugmentOp op);

// The policy's draws and ops on `image` (scratch: reused memory). Nothing for policy none.
void apply_auto_augment(const AutoAugmentOptions& options, RgbImage& image, RgbImage& scratch,
                        RandomSource& random);

}  // namespace engine::data
