// libFuzzer target: arbitrary bytes through the decode + transform path, as a training sample
// (RandomResizedCrop + flip, f32), as one with TrivialAugmentWide and RandomErasing (bf16) and
// as an evaluation sample (Resize + CenterCrop, bf16).
// A crash, a sanitizer report or any exception other than BadImageError is a bug.
//
//   data_fuzz_decode_transform -max_total_time=30 <work corpus dir> <seed dir>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "data/sample_processor.h"

namespace {

using engine::data::Augmentation;
using engine::data::BadImageError;
using engine::data::DecodeLimits;
using engine::data::SampleProcessor;
using engine::data::SampleRandom;
using engine::data::TransformConfig;

// Small outputs and a 4-megapixel limit keep each input fast; the limit logic itself is tested
// by the unit tests.
constexpr DecodeLimits kLimits{.max_pixels = 4'000'000};

TransformConfig make_config(Augmentation augmentation) {
  TransformConfig config;
  config.augmentation = augmentation;
  config.output_size = 24;
  config.resize_size = 28;
  return config;
}

TransformConfig make_augmented_config() {
  TransformConfig config = make_config(Augmentation::train);
  config.auto_augment.policy = engine::data::AutoAugmentPolicy::trivial_augment_wide;
  config.random_erasing.probability = 0.5;
  config.random_erasing.random_values = true;
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static SampleProcessor train(make_config(Augmentation::train), kLimits);
  static SampleProcessor augmented(make_augmented_config(), kLimits);
  static SampleProcessor eval(make_config(Augmentation::eval), kLimits);
  static std::vector<float> out(static_cast<size_t>(train.values_per_sample()));
  const std::span<const uint8_t> bytes(data, size);
  SampleRandom random(1, 2, size);
  try {
    train.process(bytes, random, engine::DType::f32, out.data());
  } catch (const BadImageError&) {
  }
  try {
    augmented.process(bytes, random, engine::DType::bf16, out.data());
  } catch (const BadImageError&) {
  }
  try {
    eval.process(bytes, random, engine::DType::bf16, out.data());
  } catch (const BadImageError&) {
  }
  return 0;
}
