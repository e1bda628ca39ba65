// RandAugment and TrivialAugmentWide with torchvision's draws replayed: the same ops, the same
// magnitudes and signs, the same pixels; and the whole training transform (crop, flip, policy,
// ToTensor + Normalize, RandomErasing) through SampleProcessor, equal to torchvision's Compose
// down to the float bits, which fixes the order of the draws and of the steps.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "data/auto_augment.h"
#include "data/sample_processor.h"
#include "tests/data/augment_golden.h"
#include "tests/data/replay_random.h"
#include "tests/data/test_images.h"

namespace engine::data {
namespace {

using testing::augment_goldens;
using testing::augment_source;
using testing::golden_records;
using testing::GoldenRecord;
using testing::ReplayRandom;

std::vector<std::string> draws_of(const GoldenRecord& r, size_t count_field) {
  const size_t count = std::stoul(r.fields.at(count_field));
  const auto first = r.fields.begin() + static_cast<std::ptrdiff_t>(count_field + 1);
  return {first, first + static_cast<std::ptrdiff_t>(count)};
}

TEST(AutoAugmentGolden, PoliciesWithTorchvisionsDrawsGiveItsPixels) {
  std::set<int64_t> ops_drawn[2];
  for (const GoldenRecord& r : golden_records(augment_goldens(), "policy")) {
    const bool rand_augment = r.fields.at(1) == "ra";
    AutoAugmentOptions options;
    options.policy =
        rand_augment ? AutoAugmentPolicy::rand_augment : AutoAugmentPolicy::trivial_augment_wide;
    options.num_ops = std::stoi(r.fields.at(2));
    options.magnitude = std::stoi(r.fields.at(3));
    const std::vector<std::string> draws = draws_of(r, 4);
    ops_drawn[rand_augment].insert(std::stoll(draws.at(0).substr(2)));
    RgbImage image = augment_source(r.fields.at(0));
    RgbImage scratch;
    ReplayRandom random(draws);
    apply_auto_augment(options, image, scratch, random);
    EXPECT_TRUE(random.exhausted()) << "torch made more draws than we consumed";
    const RgbImage expected = testing::golden_png(r.fields.at(5 + draws.size()));
    EXPECT_EQ(testing::differing_bytes(image, expected), 0)
        << r.fields[1] << " with draws starting " << draws.at(0);
  }
  EXPECT_GE(ops_drawn[0].size(), 10u) << "TrivialAugmentWide records must cover most ops";
  EXPECT_GE(ops_drawn[1].size(), 10u) << "RandAugment records must cover most ops";
}

TEST(AutoAugmentGolden, TrainingTransformEqualsTorchvisionComposeBitForBit) {
  const std::vector<uint8_t> png = testing::encode_png(augment_source("pipeline"));
  int erased_random = 0;
  for (const GoldenRecord& r : golden_records(augment_goldens(), "pipeline")) {
    TransformConfig config;
    config.output_size = std::stoi(r.fields.at(0));
    config.auto_augment.policy = r.fields.at(1) == "ra" ? AutoAugmentPolicy::rand_augment
                                                        : AutoAugmentPolicy::trivial_augment_wide;
    config.random_erasing.probability = std::stod(r.fields.at(2));
    config.random_erasing.random_values = r.fields.at(3) == "random";
    erased_random += config.random_erasing.random_values;
    const std::vector<std::string> draws = draws_of(r, 4);
    const std::vector<float> expected = testing::decode_float_hex(r.fields.at(5 + draws.size()));
    SampleProcessor processor(config, {});
    ASSERT_EQ(expected.size(), static_cast<size_t>(processor.values_per_sample()));
    std::vector<float> out(expected.size());
    ReplayRandom random(draws);
    processor.process(png, random, DType::f32, out.data());
    EXPECT_TRUE(random.exhausted()) << "torch made more draws than we consumed";
    EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size() * 4), 0)
        << r.fields[1] << " erase p " << r.fields[2] << " " << r.fields[3];
  }
  EXPECT_GE(erased_random, 2);
}

TEST(AutoAugment, PolicyNoneDrawsNothingAndLeavesThePixels) {
  RgbImage image = testing::make_test_picture(12, 12);
  const RgbImage before = image;
  RgbImage scratch;
  ReplayRandom no_draws({});
  apply_auto_augment({}, image, scratch, no_draws);
  EXPECT_EQ(image.pixels, before.pixels);
}

TEST(AutoAugment, RandAugmentRefusesAMagnitudeOutsideItsBins) {
  RgbImage image = testing::make_test_picture(8, 8);
  RgbImage scratch;
  SampleRandom random(0, 0, 0);
  AutoAugmentOptions options;
  options.policy = AutoAugmentPolicy::rand_augment;
  options.magnitude = 31;
  EXPECT_ANY_THROW(apply_auto_augment(options, image, scratch, random));
}

// With a policy and erasing, a sample still depends only on its (seed, epoch, index) stream,
// not on what its processor handled before (the loader's determinism across workers).
TEST(AutoAugment, AugmentedSamplesAreAFunctionOfTheirStreamOnly) {
  const std::vector<uint8_t> png = testing::encode_png(testing::make_test_picture(64, 48, 3));
  TransformConfig config;
  config.output_size = 24;
  config.auto_augment.policy = AutoAugmentPolicy::trivial_augment_wide;
  config.random_erasing.probability = 0.5;
  config.random_erasing.random_values = true;
  SampleProcessor a(config, {});
  SampleProcessor b(config, {});
  std::vector<float> out_a(static_cast<size_t>(a.values_per_sample()));
  std::vector<float> out_b(out_a.size());
  for (uint64_t index = 0; index < 30; ++index) {
    SampleRandom random_a(3, 1, index);
    a.process(png, random_a, DType::f32, out_a.data());
    // b has processed other samples in between: its scratch buffers must not leak into this one.
    SampleRandom other(3, 1, index + 1000);
    b.process(png, other, DType::f32, out_b.data());
    SampleRandom random_b(3, 1, index);
    b.process(png, random_b, DType::f32, out_b.data());
    ASSERT_EQ(std::memcmp(out_a.data(), out_b.data(), out_a.size() * 4), 0) << index;
  }
}

}  // namespace
}  // namespace engine::data
