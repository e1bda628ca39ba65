// The 14 AutoAugment ops against torchvision 0.14 on PIL images (Pillow 9.4), bit for bit: each
// op at RandAugment's default magnitude and TrivialAugmentWide's bins 1, 15, 20 and 30 with
// both signs, on a noisy gradient and an image of hard edges; Equalize and AutoContrast with a
// constant channel and a constant image; and the magnitude tables torch computes.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>

#include "data/augment_ops.h"
#include "data/auto_augment.h"
#include "tests/data/augment_golden.h"

namespace engine::data {
namespace {

using testing::augment_goldens;
using testing::augment_source;
using testing::golden_records;
using testing::GoldenRecord;

AugmentOp op_named(const std::string& name) {
  for (int i = 0; i < kAugmentOpCount; ++i) {
    if (augment_op_name(static_cast<AugmentOp>(i)) == name) return static_cast<AugmentOp>(i);
  }
  throw std::runtime_error("unknown op " + name);
}

TEST(AugmentOpsGolden, EveryOpAtEveryRecordedMagnitudeEqualsTorchvisionOnPil) {
  std::map<std::string, RgbImage> sources;
  std::set<std::string> ops_seen;
  int negative = 0;
  for (const GoldenRecord& r : golden_records(augment_goldens(), "op")) {
    const std::string& source = r.fields.at(0);
    if (!sources.contains(source)) sources[source] = augment_source(source);
    const AugmentOp op = op_named(r.fields.at(1));
    const double magnitude = std::stod(r.fields.at(2));
    RgbImage image = sources[source];
    RgbImage scratch;
    apply_augment_op(op, magnitude, image, scratch);
    const RgbImage expected = testing::golden_png(r.fields.at(3));
    ASSERT_EQ(image.width, expected.width);
    ASSERT_EQ(image.height, expected.height);
    EXPECT_EQ(testing::differing_bytes(image, expected), 0)
        << r.fields[1] << "(" << r.fields[2] << ") on " << source;
    ops_seen.insert(r.fields[1]);
    negative += magnitude < 0;
  }
  EXPECT_EQ(ops_seen.size(), static_cast<size_t>(kAugmentOpCount));
  EXPECT_GE(negative, 50) << "both signs of every signed op";
}

TEST(AugmentOpsGolden, ConstantChannelsAndImagesAreLeftAloneByEqualizeAndAutoContrast) {
  // The golden records cover them ("edges": a constant blue channel, "flat": every channel);
  // here the property itself, so a regenerated golden cannot lose it.
  for (const std::string name : {"edges", "flat"}) {
    const RgbImage source = augment_source(name);
    for (AugmentOp op : {AugmentOp::equalize, AugmentOp::auto_contrast}) {
      RgbImage image = source;
      RgbImage scratch;
      apply_augment_op(op, 0.0, image, scratch);
      for (size_t i = 2; i < image.pixels.size(); i += 3) {
        ASSERT_EQ(image.pixels[i], source.pixels[i]) << augment_op_name(op) << " on " << name;
      }
      if (name == "flat") {
        EXPECT_EQ(image.pixels, source.pixels);
      }
    }
  }
}

TEST(AugmentOpsGolden, MagnitudeTablesEqualTorchBitForBit) {
  int tables = 0;
  for (const GoldenRecord& r : golden_records(augment_goldens(), "table")) {
    const auto policy = r.fields.at(0) == "ra" ? AutoAugmentPolicy::rand_augment
                                               : AutoAugmentPolicy::trivial_augment_wide;
    const int width = std::stoi(r.fields.at(2));
    const int height = std::stoi(r.fields.at(3));
    const std::vector<float> expected = testing::decode_float_hex(r.fields.at(5));
    const std::vector<float> table =
        magnitude_bins(policy, op_named(r.fields.at(1)), 31, width, height);
    ASSERT_EQ(table.size(), expected.size());
    EXPECT_EQ(std::memcmp(table.data(), expected.data(), table.size() * 4), 0)
        << r.fields[0] << " " << r.fields[1] << " " << width << "x" << height;
    ++tables;
  }
  EXPECT_EQ(tables, 4 * 2 * 11);
}

TEST(AugmentOps, BlendFollowsPillowsShortcutsAndClipping) {
  RgbImage degenerate;
  degenerate.reset(2, 1);
  degenerate.pixels = {0, 100, 200, 10, 20, 30};
  RgbImage image = degenerate;
  image.pixels = {255, 50, 100, 10, 250, 0};
  RgbImage copy = image;
  pil_blend(degenerate, 1.0f, copy);
  EXPECT_EQ(copy.pixels, image.pixels);
  copy = image;
  pil_blend(degenerate, 0.0f, copy);
  EXPECT_EQ(copy.pixels, degenerate.pixels);
  copy = image;
  pil_blend(degenerate, 1.5f, copy);  // extrapolation clips
  EXPECT_EQ(copy.pixels, (std::vector<uint8_t>{255, 25, 50, 10, 255, 0}));
}

}  // namespace
}  // namespace engine::data
