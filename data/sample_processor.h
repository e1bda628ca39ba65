// One sample from file bytes to its slot in a batch: header -> plan -> decode (maybe scaled)
// -> resize the planned window -> ToTensor + Normalize (+ flip) into NHWC. With an
// AutoAugment policy the flip happens on the 8-bit pixels first and the policy after it (a
// shear or rotation does not commute with a mirror); RandomErasing comes last, on the values. Each
// loader worker owns one, so its scratch buffers are reused from sample to sample.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "data/decode.h"
#include "data/transform.h"
#include "kernels/dtype.h"

namespace engine::data {

class SampleProcessor {
 public:
  SampleProcessor(const TransformConfig& config, const DecodeLimits& limits);

  // Writes output_size x output_size x 3 values of `dtype` to `out` and returns the plan it
  // followed. Throws BadImageError for an unusable file.
  SamplePlan process(std::span<const uint8_t> bytes, RandomSource& random, DType dtype, void* out);

  // The 8-bit RGB pixels of the last processed sample, before normalization: without an
  // AutoAugment policy before the flip, with one after the flip and the policy.
  const std::vector<uint8_t>& last_pixels() const { return resized_.pixels; }

  int values_per_sample() const { return config_.output_size * config_.output_size * 3; }

 private:
  TransformConfig config_;
  DecodeLimits limits_;
  Normalizer normalizer_;
  RgbImage decoded_;
  Resampler resampler_;
  RgbImage resized_;
  RgbImage scratch_;  // the augmentation ops' second buffer
};

}  // namespace engine::data
