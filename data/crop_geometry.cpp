#include "data/crop_geometry.h"

#include <cmath>
#include <string>

#include "kernels/error.h"

namespace engine::data {

namespace {

// Python's round() to an int: nearest, ties to even (std::nearbyint in the default mode).
int python_round(double value) {
  return static_cast<int>(std::nearbyint(value));
}

int center_offset(int size, int crop) {
  if (crop > size) return -((crop - size) / 2);
  return python_round((size - crop) / 2.0);
}

}  // namespace

CropBox random_resized_crop_box(int image_width, int image_height,
                                const RandomResizedCropOptions& options, RandomSource& random) {
  ENGINE_REQUIRE(image_width > 0 && image_height > 0, "random_resized_crop_box: empty image " +
                                                          std::to_string(image_width) + " x " +
                                                          std::to_string(image_height));
  const double area = static_cast<double>(image_height) * image_width;
  // torch.log(torch.tensor(ratio)) is float32, and the draws are float32 tensors.
  const float log_ratio_min = std::log(static_cast<float>(options.ratio_min));
  const float log_ratio_max = std::log(static_cast<float>(options.ratio_max));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * random.uniform(options.scale_min, options.scale_max);
    const double aspect_ratio = std::exp(random.uniform(log_ratio_min, log_ratio_max));
    const int width = python_round(std::sqrt(target_area * aspect_ratio));
    const int height = python_round(std::sqrt(target_area / aspect_ratio));
    if (0 < width && width <= image_width && 0 < height && height <= image_height) {
      const auto top = static_cast<int>(random.randint(0, image_height - height + 1));
      const auto left = static_cast<int>(random.randint(0, image_width - width + 1));
      return {top, left, height, width};
    }
  }
  const double in_ratio = static_cast<double>(image_width) / image_height;
  int width = image_width;
  int height = image_height;
  if (in_ratio < options.ratio_min) {
    height = python_round(width / options.ratio_min);
  } else if (in_ratio > options.ratio_max) {
    width = python_round(height * options.ratio_max);
  }
  return {(image_height - height) / 2, (image_width - width) / 2, height, width};
}

ImageSize resize_short_side(int image_width, int image_height, int short_side) {
  ENGINE_REQUIRE(image_width > 0 && image_height > 0 && short_side > 0,
                 "resize_short_side: sizes must be positive");
  const bool width_is_short = image_width <= image_height;
  const int short_edge = width_is_short ? image_width : image_height;
  const int long_edge = width_is_short ? image_height : image_width;
  const double new_long = static_cast<double>(int64_t{short_side} * long_edge) / short_edge;
  ENGINE_REQUIRE(new_long < 2147483647.0, "resize_short_side: the long side overflows an int");
  const auto truncated = static_cast<int>(new_long);  // Python's int(): toward zero
  return width_is_short ? ImageSize{short_side, truncated} : ImageSize{truncated, short_side};
}

CropBox center_crop_box(int image_width, int image_height, int crop_width, int crop_height) {
  return {center_offset(image_height, crop_height), center_offset(image_width, crop_width),
          crop_height, crop_width};
}

}  // namespace engine::data
