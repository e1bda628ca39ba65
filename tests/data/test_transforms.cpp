// Transforms against torchvision: RandomResizedCrop boxes for recorded random draws, Resize
// sizes, CenterCrop offsets, resized pixels and whole pipelines down to the float bits; plus the
// per-sample random streams and the DCT-downscaling shortcut.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>

#include "data/crop_geometry.h"
#include "data/normalize.h"
#include "data/random.h"
#include "data/resample.h"
#include "data/sample_processor.h"
#include "kernels/error.h"
#include "tests/data/golden.h"
#include "tests/data/replay_random.h"
#include "tests/data/test_images.h"

namespace engine::data {
namespace {

using testing::golden_records;
using testing::GoldenRecord;
using testing::ReplayRandom;

const std::vector<GoldenRecord>& transform_goldens() {
  static const auto records = testing::read_golden("transforms");
  return records;
}

int field(const GoldenRecord& record, size_t i) {
  return std::stoi(record.fields.at(i));
}

// The PNG all transform goldens start from, and its pixels.
std::vector<uint8_t> golden_source_png() {
  const auto record = golden_records(transform_goldens(), "source_png").at(0);
  return testing::decode_base64(record.fields.at(2));
}

RgbImage golden_source() {
  return decode_image(golden_source_png());
}

// The crop of the golden source resized to out_width x out_height (the whole resized image),
// as RandomResizedCrop's last step does.
std::vector<uint8_t> resized_crop(const RgbImage& source, const CropBox& crop, int out_width,
                                  int out_height) {
  ResizeRequest request;
  request.box_right = crop.width;
  request.box_bottom = crop.height;
  request.resized_width = request.window_width = out_width;
  request.resized_height = request.window_height = out_height;
  std::vector<uint8_t> out(static_cast<size_t>(out_width) * out_height * 3);
  Resampler().resize(source.view().crop(crop.left, crop.top, crop.width, crop.height), request,
                     out.data());
  return out;
}

TEST(RandomResizedCropGolden, BoxesEqualTorchvisionForTheSameDraws) {
  const auto records = golden_records(transform_goldens(), "rrc");
  int fallbacks = 0;
  for (const GoldenRecord& r : records) {
    const int width = field(r, 0);
    const int height = field(r, 1);
    const RandomResizedCropOptions options{std::stod(r.fields[2]), std::stod(r.fields[3]),
                                           std::stod(r.fields[4]), std::stod(r.fields[5])};
    const CropBox expected{field(r, 6), field(r, 7), field(r, 8), field(r, 9)};
    const int draw_count = field(r, 10);
    ReplayRandom random({r.fields.begin() + 11, r.fields.begin() + 11 + draw_count});
    SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height) + " scale " + r.fields[2]);
    const CropBox box = random_resized_crop_box(width, height, options, random);
    EXPECT_EQ(box, expected) << "got " << box.top << " " << box.left << " " << box.height << " "
                             << box.width;
    EXPECT_TRUE(random.exhausted()) << "torch made more draws than we consumed";
    if (draw_count == 20) ++fallbacks;
  }
  EXPECT_GE(records.size(), 40u);
  EXPECT_GE(fallbacks, 8) << "the golden file must exercise the center-crop fallback";
}

TEST(ResizeGolden, ShortSideSizesEqualTorchvision) {
  for (const GoldenRecord& r : golden_records(transform_goldens(), "resize_short")) {
    EXPECT_EQ(resize_short_side(field(r, 0), field(r, 1), field(r, 2)),
              (ImageSize{field(r, 3), field(r, 4)}))
        << r.fields[0] << "x" << r.fields[1] << " -> " << r.fields[2];
  }
}

TEST(CenterCropGolden, OffsetsEqualTorchvisionIncludingPaddingAndHalfToEven) {
  for (const GoldenRecord& r : golden_records(transform_goldens(), "center_crop")) {
    const CropBox box = center_crop_box(field(r, 0), field(r, 1), field(r, 2), field(r, 3));
    EXPECT_EQ(box.top, field(r, 4)) << r.fields[0] << "x" << r.fields[1];
    EXPECT_EQ(box.left, field(r, 5)) << r.fields[0] << "x" << r.fields[1];
  }
}

TEST(ResampleGolden, ResizedCropPixelsEqualPil) {
  const RgbImage source = golden_source();
  for (const GoldenRecord& r : golden_records(transform_goldens(), "resized_crop")) {
    const CropBox crop{field(r, 0), field(r, 1), field(r, 2), field(r, 3)};
    const int out_width = field(r, 4);
    const int out_height = field(r, 5);
    const std::vector<uint8_t> out = resized_crop(source, crop, out_width, out_height);
    EXPECT_EQ(testing::max_abs_difference(out, testing::decode_hex(r.fields.at(6))), 0)
        << "crop " << crop.width << "x" << crop.height << " -> " << out_width << "x" << out_height;
  }
}

TEST(ResampleGolden, ResizeThenCenterCropEqualsPilThroughTheEvalPipeline) {
  const std::vector<uint8_t> png = golden_source_png();
  for (const GoldenRecord& r : golden_records(transform_goldens(), "resize_center_crop")) {
    TransformConfig config;
    config.augmentation = Augmentation::eval;
    config.resize_size = field(r, 0);
    config.output_size = field(r, 1);
    SampleProcessor processor(config, {});
    SampleRandom unused(0, 0, 0);
    std::vector<float> out(static_cast<size_t>(processor.values_per_sample()));
    processor.process(png, unused, DType::f32, out.data());
    EXPECT_EQ(
        testing::max_abs_difference(processor.last_pixels(), testing::decode_hex(r.fields.at(2))),
        0)
        << "Resize(" << config.resize_size << ") CenterCrop(" << config.output_size << ")";
  }
}

TEST(PipelineGolden, EvalPipelineFloatsEqualTorchvisionBitForBit) {
  const std::vector<uint8_t> png = golden_source_png();
  const GoldenRecord r = golden_records(transform_goldens(), "eval_pipeline").at(0);
  const std::vector<float> expected = testing::decode_float_hex(r.fields.at(2));
  TransformConfig config;
  config.augmentation = Augmentation::eval;
  config.resize_size = field(r, 0);
  config.output_size = field(r, 1);
  SampleProcessor processor(config, {});
  SampleRandom unused(0, 0, 0);
  std::vector<float> f32(expected.size());
  processor.process(png, unused, DType::f32, f32.data());
  EXPECT_EQ(std::memcmp(f32.data(), expected.data(), expected.size() * 4), 0);
  std::vector<bf16> half(expected.size());
  processor.process(png, unused, DType::bf16, half.data());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(half[i].bits, bf16(expected[i]).bits) << "value " << i;
  }
}

TEST(PipelineGolden, CropFlipNormalizeEqualsTorchvisionBitForBit) {
  const RgbImage source = golden_source();
  const GoldenRecord r = golden_records(transform_goldens(), "crop_flip_pipeline").at(0);
  const CropBox crop{field(r, 0), field(r, 1), field(r, 2), field(r, 3)};
  const int out_width = field(r, 4);
  const int out_height = field(r, 5);
  const std::vector<uint8_t> pixels = resized_crop(source, crop, out_width, out_height);
  const std::vector<float> expected = testing::decode_float_hex(r.fields.at(6));
  std::vector<float> out(expected.size());
  Normalizer().write(pixels.data(), out_width, out_height, /*mirror=*/true, DType::f32, out.data());
  EXPECT_EQ(std::memcmp(out.data(), expected.data(), expected.size() * 4), 0);
}

TEST(Normalizer, RefusesIntegerOutputs) {
  // Images are f32 or bf16; an i32 destination is an error, not bf16 values in 4-byte slots.
  const std::vector<uint8_t> pixels(2 * 2 * 3, 128);
  std::vector<int32_t> out(2 * 2 * 3, 7);
  EXPECT_THROW(Normalizer().write(pixels.data(), 2, 2, false, DType::i32, out.data()), Error);
  EXPECT_EQ(out, std::vector<int32_t>(out.size(), 7));
}

TEST(SampleRandom, StreamsAreKeyedBySeedEpochAndIndex) {
  SampleRandom a(7, 1, 42);
  SampleRandom same(7, 1, 42);
  std::set<uint64_t> firsts;
  for (uint64_t seed : {0u, 7u}) {
    for (uint64_t epoch : {0u, 1u}) {
      for (uint64_t index : {0u, 1u, 42u})
        firsts.insert(SampleRandom(seed, epoch, index).next_u64());
    }
  }
  EXPECT_EQ(firsts.size(), 12u) << "distinct keys must give distinct streams";
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(a.next_u64(), same.next_u64());
}

TEST(SampleRandom, DrawsAreUniformInTheirRanges) {
  SampleRandom random(1, 2, 3);
  double sum = 0;
  int counts[5] = {0, 0, 0, 0, 0};
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const float u = random.uniform(0.08, 1.0);
    ASSERT_TRUE(u >= 0.08f && u < 1.0f);
    sum += u;
    const int64_t k = random.randint(10, 15);
    ASSERT_TRUE(k >= 10 && k < 15);
    ++counts[k - 10];
  }
  EXPECT_NEAR(sum / kDraws, 0.54, 0.005);
  for (int count : counts)
    EXPECT_NEAR(count, kDraws / 5, kDraws / 50);
}

TEST(TrainPlan, FlipIsDrawnAfterTheCropAndFollowsItsProbability) {
  TransformConfig config;
  const ImageHeader header{ImageFormat::png, 500, 375};
  ReplayRandom replay({"f:0.5", "f:0.1", "i:3", "i:4", "f:0.25"});
  SamplePlan plan = plan_sample(header, config, replay);
  EXPECT_TRUE(plan.flip);
  EXPECT_TRUE(replay.exhausted());
  config.flip_probability = 0.0;
  ReplayRandom never({"f:0.5", "f:0.1", "i:3", "i:4", "f:0.0"});
  EXPECT_FALSE(plan_sample(header, config, never).flip);
}

TEST(EvalPlan, AbsurdAspectRatiosAreRefusedNotResized) {
  TransformConfig config;
  config.augmentation = Augmentation::eval;
  SampleRandom unused(0, 0, 0);
  // Resize(256) would make this 4096e6 pixels long (PIL would try to allocate it).
  EXPECT_THROW(plan_sample({ImageFormat::png, 16'000'000, 1}, config, unused), BadImageError);
  const SamplePlan plan = plan_sample({ImageFormat::png, 60'000, 1}, config, unused);
  EXPECT_EQ(plan.resized, (ImageSize{15'360'000, 256}));
}

// The JPEG path decodes only the planned region; a PNG of the same pixels is decoded whole.
// With the same draws, both must give the same bits, in training and in evaluation.
TEST(SamplePipeline, JpegRegionDecodingGivesTheFullDecodeResult) {
  const std::vector<uint8_t> jpeg = testing::encode_jpeg(testing::make_test_picture(320, 240, 5));
  const std::vector<uint8_t> png = testing::encode_png(decode_image(jpeg));
  for (Augmentation augmentation : {Augmentation::train, Augmentation::eval}) {
    TransformConfig config;
    config.augmentation = augmentation;
    config.output_size = 48;
    config.resize_size = 100;
    config.jpeg_dct_downscale = false;
    SampleProcessor from_jpeg(config, {});
    SampleProcessor from_png(config, {});
    std::vector<float> a(static_cast<size_t>(from_jpeg.values_per_sample()));
    std::vector<float> b(a.size());
    for (uint64_t index = 0; index < 40; ++index) {
      SampleRandom random_a(9, 1, index);
      SampleRandom random_b(9, 1, index);
      const SamplePlan plan = from_jpeg.process(jpeg, random_a, DType::f32, a.data());
      from_png.process(png, random_b, DType::f32, b.data());
      ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0)
          << "sample " << index << ", crop " << plan.crop.left << "," << plan.crop.top << " "
          << plan.crop.width << "x" << plan.crop.height;
      if (augmentation == Augmentation::train) {
        EXPECT_EQ(plan.decode_region.width, plan.crop.width) << "only the crop is decoded";
      } else {
        EXPECT_LT(plan.decode_region.width * plan.decode_region.height, 320 * 240)
            << "only what the center crop reads is decoded";
      }
    }
  }
}

TEST(TrainPlan, LargeJpegCropsAreDecodedScaledAndStayClose) {
  TransformConfig config;
  config.output_size = 64;
  const std::vector<uint8_t> jpeg = testing::encode_jpeg(testing::make_test_picture(1200, 900), 95);
  TransformConfig exact = config;
  exact.jpeg_dct_downscale = false;
  SampleProcessor fast(config, {});
  SampleProcessor reference(exact, {});
  std::vector<float> out(static_cast<size_t>(fast.values_per_sample()));
  int scaled_samples = 0;
  for (uint64_t index = 0; index < 20; ++index) {
    SampleRandom random_a(5, 0, index);
    SampleRandom random_b(5, 0, index);
    const SamplePlan plan = fast.process(jpeg, random_a, DType::f32, out.data());
    const SamplePlan exact_plan = reference.process(jpeg, random_b, DType::f32, out.data());
    EXPECT_EQ(plan.crop, exact_plan.crop) << "the draws must not depend on the shortcut";
    EXPECT_EQ(exact_plan.scale_eighths, 8);
    if (plan.scale_eighths < 8) {
      ++scaled_samples;
      // The decoded region still covers at least the output size.
      EXPECT_GE(plan.crop.width * plan.scale_eighths / 8.0, config.output_size);
      EXPECT_GE(plan.crop.height * plan.scale_eighths / 8.0, config.output_size);
    }
    EXPECT_LT(testing::mean_abs_difference(fast.last_pixels(), reference.last_pixels()), 2.0)
        << "sample " << index;
  }
  EXPECT_GT(scaled_samples, 10);
}

}  // namespace
}  // namespace engine::data
