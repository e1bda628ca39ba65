#include "data/sample_processor.h"

#include <algorithm>

namespace engine::data {

namespace {

// RandomHorizontalFlip on the 8-bit pixels (F.hflip: each row reversed).
void mirror_rows(RgbImage& image) {
  for (int y = 0; y < image.height; ++y) {
    uint8_t* row = image.pixels.data() + static_cast<size_t>(y) * image.width * 3;
    for (int left = 0, right = image.width - 1; left < right; ++left, --right)
      std::swap_ranges(row + left * 3, row + left * 3 + 3, row + right * 3);
  }
}

}  // namespace

SampleProcessor::SampleProcessor(const TransformConfig& config, const DecodeLimits& limits)
    : config_(config), limits_(limits), normalizer_(config.mean, config.std) {}

SamplePlan SampleProcessor::process(std::span<const uint8_t> bytes, RandomSource& random,
                                    DType dtype, void* out) {
  const ImageHeader header = read_image_header(bytes, limits_);
  const SamplePlan plan = plan_sample(header, config_, random);
  const ImageOrigin origin =
      decode_image_region(bytes, header, plan.scale_eighths, plan.decode_region, decoded_);
  // The decoded pixels are a view into the image the resize's box refers to.
  const CropBox& window = plan.source_window;
  ResizeRequest request = plan.resize;
  request.image_width = window.width;
  request.image_height = window.height;
  request.view_left = origin.left - window.left;
  request.view_top = origin.top - window.top;
  resized_.reset(plan.resize.window_width, plan.resize.window_height);
  resampler_.resize(decoded_.view(), request, resized_.pixels.data());
  bool mirror = plan.flip;
  const bool training = config_.augmentation == Augmentation::train;
  if (training && config_.auto_augment.policy != AutoAugmentPolicy::none) {
    if (mirror) mirror_rows(resized_);
    mirror = false;
    apply_auto_augment(config_.auto_augment, resized_, scratch_, random);
  }
  normalizer_.write(resized_.pixels.data(), resized_.width, resized_.height, mirror, dtype, out);
  if (training) {
    random_erasing(config_.random_erasing, resized_.width, resized_.height, dtype, out, random);
  }
  return plan;
}

}  // namespace engine::data
