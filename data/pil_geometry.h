// The geometric half of torchvision's AutoAugment ops on PIL images: the inverse affine matrix
// torchvision builds (functional._get_inverse_affine_matrix), the one Pillow's Image.rotate
// builds, and Pillow 9.4's Image.transform(AFFINE, NEAREST) that samples with them, with its
// three code paths (pure scale/translate, 16.16 fixed point, double) reproduced because they
// round differently. Pixels the matrix maps outside the source are the fill, 0 (torchvision's
// fill=None). Every double is computed in the order Python and Pillow compute it, so the
// outputs equal Pillow's bit for bit.
#pragma once

#include <array>

#include "data/image.h"

namespace engine::data {

// Output pixel (x + 0.5, y + 0.5) samples source (a0 x + a1 y + a2, a3 x + a4 y + a5).
using AffineMatrix = std::array<double, 6>;

struct AffineParams {
  double angle_degrees = 0;  // clockwise, as torchvision's F.affine
  std::array<double, 2> translate = {0, 0};
  double scale = 1;
  std::array<double, 2> shear_degrees = {0, 0};
  std::array<double, 2> center = {0, 0};  // pixel coordinates
};

// torchvision 0.14's _get_inverse_affine_matrix(center, angle, translate, scale, shear).
AffineMatrix torchvision_inverse_affine(const AffineParams& params);

// Pillow's Image.transform(size, AFFINE, matrix, NEAREST, fillcolor=0) with the output the
// size of the input: `out` gets in's size.
void pil_affine_nearest(const RgbImage& in, const AffineMatrix& matrix, RgbImage& out);

// Pillow's Image.rotate(angle, NEAREST, expand=False, fillcolor=0): counter-clockwise degrees
// about the image centre, with its exact fast paths (0: copy; 180: flip both ways; 90 and 270
// on a square image: transpose).
void pil_rotate_nearest(const RgbImage& in, double angle_degrees, RgbImage& out);

// Python's math.radians / math.degrees: one multiplication by CPython's constant.
double python_radians(double degrees);
double python_degrees(double radians);

}  // namespace engine::data
