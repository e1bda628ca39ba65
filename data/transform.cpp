#include "data/transform.h"

#include <algorithm>
#include <string>

#include "kernels/error.h"

namespace engine::data {

namespace {

// Longest side Resize may produce: stb_image's and libjpeg's own image size limit.
constexpr int64_t kMaxResizedSide = int64_t{1} << 24;

// The smallest of 1/8, 1/4, 1/2 (scaled IDCT sizes) that keeps the decoded region at least as
// large as what it is resized to, so the final resize still only shrinks; 8 (full size) when
// the region is less than twice the target, or the format cannot be decoded scaled (the
// crop box is scaled by the result, so it must match what decode_image will produce).
int choose_scale_eighths(const ImageHeader& header, double region_width, double region_height,
                         int target_width, int target_height, bool enabled) {
  if (!enabled || !decodes_scaled(header.format)) return 8;
  for (int eighths : {1, 2, 4}) {
    if (region_width * eighths / 8 >= target_width &&
        region_height * eighths / 8 >= target_height) {
      return eighths;
    }
  }
  return 8;
}

// The pixels of the whole (scaled) image that the window of `resize` reads.
DecodeRegion region_read_by(const ResizeRequest& resize, const ImageHeader& decoded) {
  const InputRange columns = resample_input_range(
      decoded.width, resize.box_left, resize.box_right, resize.resized_width,
      std::max(resize.window_left, 0),
      std::min(resize.window_left + resize.window_width, resize.resized_width));
  const InputRange rows = resample_input_range(
      decoded.height, resize.box_top, resize.box_bottom, resize.resized_height,
      std::max(resize.window_top, 0),
      std::min(resize.window_top + resize.window_height, resize.resized_height));
  return {columns.begin, rows.begin, columns.end - columns.begin, rows.end - rows.begin};
}

SamplePlan plan_train(const ImageHeader& header, const TransformConfig& config,
                      RandomSource& random) {
  SamplePlan plan;
  plan.crop = random_resized_crop_box(header.width, header.height, config.crop, random);
  plan.flip = random.uniform(0.0, 1.0) < config.flip_probability;
  plan.resized = {config.output_size, config.output_size};
  plan.scale_eighths =
      choose_scale_eighths(header, plan.crop.width, plan.crop.height, config.output_size,
                           config.output_size, config.jpeg_dct_downscale);
  ResizeRequest& resize = plan.resize;
  resize.resized_width = resize.window_width = config.output_size;
  resize.resized_height = resize.window_height = config.output_size;
  if (plan.scale_eighths == 8) {
    // torchvision: img.crop(box).resize(size); the resize sees only the cropped pixels.
    plan.source_window = plan.crop;
    plan.decode_region = {plan.crop.left, plan.crop.top, plan.crop.width, plan.crop.height};
    resize.box_right = plan.crop.width;
    resize.box_bottom = plan.crop.height;
    return plan;
  }
  // Scaled pixel k averages full-size pixels [8k / M, 8(k + 1) / M), whatever the rounded-up
  // size of the scaled image, so the box maps by exactly M / 8.
  const ImageHeader scaled = scaled_header(header, plan.scale_eighths);
  const double scale = plan.scale_eighths / 8.0;
  plan.source_window = {0, 0, scaled.height, scaled.width};
  resize.box_left = plan.crop.left * scale;
  resize.box_top = plan.crop.top * scale;
  resize.box_right = std::min<double>((plan.crop.left + plan.crop.width) * scale, scaled.width);
  resize.box_bottom = std::min<double>((plan.crop.top + plan.crop.height) * scale, scaled.height);
  plan.decode_region = region_read_by(resize, scaled);
  return plan;
}

SamplePlan plan_eval(const ImageHeader& header, const TransformConfig& config) {
  // PIL would try to allocate such a resize; refuse the image instead.
  const int64_t short_side = std::min(header.width, header.height);
  const int64_t long_side = std::max(header.width, header.height);
  if (long_side * config.resize_size / short_side > kMaxResizedSide) {
    throw BadImageError("Resize(" + std::to_string(config.resize_size) + ") of a " +
                        std::to_string(header.width) + " x " + std::to_string(header.height) +
                        " image would be more than " + std::to_string(kMaxResizedSide) +
                        " pixels long");
  }
  SamplePlan plan;
  plan.resized = resize_short_side(header.width, header.height, config.resize_size);
  plan.crop = center_crop_box(plan.resized.width, plan.resized.height, config.output_size,
                              config.output_size);
  plan.scale_eighths = choose_scale_eighths(header, header.width, header.height, plan.resized.width,
                                            plan.resized.height, config.jpeg_dct_downscale);
  const ImageHeader decoded = scaled_header(header, plan.scale_eighths);
  plan.source_window = {0, 0, decoded.height, decoded.width};
  ResizeRequest& resize = plan.resize;
  resize.box_right = decoded.width;
  resize.box_bottom = decoded.height;
  resize.resized_width = plan.resized.width;
  resize.resized_height = plan.resized.height;
  resize.window_left = plan.crop.left;
  resize.window_top = plan.crop.top;
  resize.window_width = plan.crop.width;
  resize.window_height = plan.crop.height;
  plan.decode_region = region_read_by(resize, decoded);
  return plan;
}

}  // namespace

SamplePlan plan_sample(const ImageHeader& header, const TransformConfig& config,
                       RandomSource& random) {
  ENGINE_REQUIRE(config.output_size > 0 && config.resize_size > 0,
                 "TransformConfig: output_size and resize_size must be positive");
  if (config.augmentation == Augmentation::train) return plan_train(header, config, random);
  return plan_eval(header, config);
}

}  // namespace engine::data
