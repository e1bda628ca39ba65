// The 14 image operations of torchvision 0.14's RandAugment and TrivialAugmentWide
// (autoaugment._apply_op), on PIL images as the training recipes run them (Pillow 9.4): every
// op here equals torchvision + Pillow bit for bit on 8-bit RGB.
//   geometry (data/pil_geometry.h): ShearX/Y, TranslateX/Y, Rotate, NEAREST, fill 0;
//   ImageEnhance blends: Brightness, Color, Contrast, Sharpness (Image.blend in float32);
//   ImageOps lookup tables: Posterize, Solarize, AutoContrast, Equalize (per channel).
#pragma once

#include <string_view>

#include "data/image.h"

namespace engine::data {

// In torchvision's _augmentation_space order: the op index torch.randint draws is this value.
enum class AugmentOp {
  identity,
  shear_x,
  shear_y,
  translate_x,
  translate_y,
  rotate,
  brightness,
  color,
  contrast,
  sharpness,
  posterize,
  solarize,
  auto_contrast,
  equalize,
};
inline constexpr int kAugmentOpCount = 14;

// torchvision's name of the op ("ShearX", ...).
std::string_view augment_op_name(AugmentOp op);

// _apply_op(img, op, magnitude): `magnitude` is torchvision's, sign included (a shear's
// tangent, pixels of translation, degrees, an enhance factor minus 1, posterize's bits,
// solarize's threshold). `image` is replaced by the result; `scratch` is reused memory.
void apply_augment_op(AugmentOp op, double magnitude, RgbImage& image, RgbImage& scratch);

// Pillow's Image.blend(degenerate, image, factor) into `image`: (uint8)(d + f (i - d)) in
// float32, clipped to 0..255 when f is outside [0, 1]. Exposed for the tests.
void pil_blend(const RgbImage& degenerate, float factor, RgbImage& image);

}  // namespace engine::data
