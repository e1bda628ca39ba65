#include "data/sample_processor.h"

namespace engine::data {

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
  resized_.resize(static_cast<size_t>(plan.resize.window_width) * plan.resize.window_height * 3);
  resampler_.resize(decoded_.view(), request, resized_.data());
  normalizer_.write(resized_.data(), plan.resize.window_width, plan.resize.window_height, plan.flip,
                    dtype, out);
  return plan;
}

}  // namespace engine::data
