// The geometry of torchvision's transforms, computed from the image size alone (before any
// pixel is decoded): RandomResizedCrop.get_params, Resize's output size for an int size, and
// CenterCrop's offsets. Same arithmetic as torchvision 0.14, including Python's round() (half
// to even) and int() (truncation).
#pragma once

#include "data/random.h"

namespace engine::data {

// torchvision's crop parameters (i, j, h, w): rows [top, top + height), columns
// [left, left + width). CenterCrop's offsets are negative where it pads.
struct CropBox {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
  friend bool operator==(const CropBox&, const CropBox&) = default;
};

struct RandomResizedCropOptions {
  double scale_min = 0.08;
  double scale_max = 1.0;
  double ratio_min = 3.0 / 4.0;
  double ratio_max = 4.0 / 3.0;
};

// Up to 10 attempts of (area scale, log-uniform aspect ratio) draws and, for the first box that
// fits, a random position; else the central crop clamped to the ratio range. Draw order:
// per attempt uniform(scale), uniform(log ratio); then randint(top), randint(left).
CropBox random_resized_crop_box(int image_width, int image_height,
                                const RandomResizedCropOptions& options, RandomSource& random);

struct ImageSize {
  int width = 0;
  int height = 0;
  friend bool operator==(const ImageSize&, const ImageSize&) = default;
};

// Resize(short_side): the short side becomes short_side, the long side int(short_side * long /
// short) (truncated).
ImageSize resize_short_side(int image_width, int image_height, int short_side);

// CenterCrop((crop_height, crop_width)): offsets round((size - crop) / 2); where the image is
// smaller than the crop it is padded by (crop - size) // 2 before, giving a negative offset.
CropBox center_crop_box(int image_width, int image_height, int crop_width, int crop_height);

}  // namespace engine::data
