// Every decoder path against PIL (golden files), round trips of images made at test time, and
// the bad inputs that must be refused with a reason instead of crashing or allocating.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "data/decode.h"
#include "data/random.h"
#include "tests/data/golden.h"
#include "tests/data/test_images.h"

namespace engine::data {
namespace {

using testing::decode_base64;
using testing::decode_hex;

// Where we knowingly differ from PIL, by at most this many levels: libtiff converts CMYK with a
// truncating division where PIL rounds.
const std::map<std::string, int> kToleranceByCase = {{"tiff_cmyk", 1}};

TEST(DecodeGolden, EveryFormatMatchesPilConvertRgb) {
  const auto records = testing::golden_records(testing::read_golden("decode"), "decode");
  EXPECT_GE(records.size(), 30u);
  for (const auto& record : records) {
    const std::string& name = record.fields.at(0);
    SCOPED_TRACE(name + " (PIL " + record.fields.at(1) + " " + record.fields.at(2) + ")");
    const int width = std::stoi(record.fields.at(3));
    const int height = std::stoi(record.fields.at(4));
    const std::vector<uint8_t> bytes = decode_base64(record.fields.at(5));
    const std::vector<uint8_t> expected = decode_hex(record.fields.at(6));
    const ImageHeader header = read_image_header(bytes, {});
    EXPECT_EQ(header.width, width);
    EXPECT_EQ(header.height, height);
    RgbImage image;
    ASSERT_NO_THROW(decode_image(bytes, header, 8, image));
    ASSERT_EQ(image.pixels.size(), expected.size());
    const auto tolerance = kToleranceByCase.contains(name) ? kToleranceByCase.at(name) : 0;
    EXPECT_LE(testing::max_abs_difference(image.pixels, expected), tolerance)
        << "largest difference from PIL, in 8-bit levels";
  }
}

TEST(DecodeFormats, SniffedFromContentNotExtension) {
  const RgbImage picture = testing::make_test_picture(8, 8);
  EXPECT_EQ(sniff_format(testing::encode_jpeg(picture)), ImageFormat::jpeg);
  EXPECT_EQ(sniff_format(testing::encode_png(picture)), ImageFormat::png);
  EXPECT_EQ(sniff_format(testing::encode_bmp(picture)), ImageFormat::bmp);
  EXPECT_EQ(sniff_format(testing::encode_ppm(picture)), ImageFormat::pnm);
  EXPECT_EQ(sniff_format(testing::encode_webp(picture, true)), ImageFormat::webp);
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  EXPECT_EQ(sniff_format(text), ImageFormat::unknown);
}

TEST(DecodeFormats, LosslessFormatsRoundTripExactly) {
  testing::TempDir dir;
  const RgbImage picture = testing::make_test_picture(37, 23, 1);
  const std::map<std::string, std::vector<uint8_t>> files = {
      {"png", testing::encode_png(picture)},
      {"bmp", testing::encode_bmp(picture)},
      {"ppm", testing::encode_ppm(picture)},
      {"tiff", testing::encode_tiff(picture, dir.path() / "x.tif")},
      {"webp", testing::encode_webp(picture, /*lossless=*/true)},
  };
  for (const auto& [format, bytes] : files) {
    SCOPED_TRACE(format);
    const RgbImage decoded = decode_image(bytes);
    EXPECT_EQ(decoded.width, 37);
    EXPECT_EQ(decoded.height, 23);
    EXPECT_EQ(testing::max_abs_difference(decoded, picture), 0);
  }
}

TEST(DecodeFormats, LossyFormatsStayClose) {
  const RgbImage picture = testing::make_test_picture(64, 48, 2);
  EXPECT_LT(testing::mean_abs_difference(decode_image(testing::encode_jpeg(picture, 95)), picture),
            2.0);
  EXPECT_LT(
      testing::mean_abs_difference(decode_image(testing::encode_jpeg(picture, 95, true)), picture),
      2.0);
  EXPECT_LT(
      testing::mean_abs_difference(decode_image(testing::encode_webp(picture, false)), picture),
      4.0);
  const RgbImage gray = decode_image(testing::encode_jpeg_gray(picture));
  for (size_t i = 0; i < gray.pixels.size(); i += 3) {
    ASSERT_EQ(gray.pixels[i], gray.pixels[i + 1]);  // grayscale becomes R = G = B
    ASSERT_EQ(gray.pixels[i], gray.pixels[i + 2]);
  }
}

TEST(DecodeFormats, SixteenBitPngsFollowPil) {
  // RGB: the high byte of each sample. Grayscale: PIL's "I" mode clips at 255.
  const std::vector<uint8_t> rgb16 = {0x12, 0x34, 0xAB, 0xCD, 0x00, 0xFF,
                                      0xFF, 0xFF, 0x01, 0x00, 0x80, 0x80};
  const RgbImage rgb = decode_image(testing::encode_png_samples(2, 1, 16, 2, rgb16));
  EXPECT_EQ(rgb.pixels, (std::vector<uint8_t>{0x12, 0xAB, 0x00, 0xFF, 0x01, 0x80}));
  const std::vector<uint8_t> gray16 = {0x00, 0x07, 0x00, 0xFF, 0x01, 0x00, 0xFF, 0xFF};
  const RgbImage gray = decode_image(testing::encode_png_samples(4, 1, 16, 0, gray16));
  EXPECT_EQ(gray.pixels,
            (std::vector<uint8_t>{7, 7, 7, 255, 255, 255, 255, 255, 255, 255, 255, 255}));
}

TEST(DecodeScaled, JpegDctDownscalingRoundsSizesUpAndStaysClose) {
  const RgbImage picture = testing::make_test_picture(203, 157);
  const std::vector<uint8_t> jpeg = testing::encode_jpeg(picture, 95);
  const ImageHeader header = read_image_header(jpeg, {});
  for (int eighths : {1, 2, 4}) {
    SCOPED_TRACE(eighths);
    RgbImage scaled;
    decode_image(jpeg, header, eighths, scaled);
    EXPECT_EQ(scaled.width, (203 * eighths + 7) / 8);
    EXPECT_EQ(scaled.height, (157 * eighths + 7) / 8);
    // The red channel is a horizontal ramp: the scaled image keeps it.
    const int x = scaled.width / 2;
    const double source_x = (x + 0.5) * 8.0 / eighths - 0.5;
    const double expected_red = 255.0 * source_x / 202.0;
    EXPECT_NEAR(scaled.pixels[(static_cast<size_t>(scaled.height / 2) * scaled.width + x) * 3],
                expected_red, 12);
  }
  const std::vector<uint8_t> png = testing::encode_png(picture);
  RgbImage unscaled;
  decode_image(png, read_image_header(png, {}), 2, unscaled);
  EXPECT_EQ(unscaled.width, 203) << "only JPEG has a scaled decode";
}

// A region decode skips rows and columns, yet every pixel it returns equals the full decode's.
TEST(DecodeRegion, JpegRegionsEqualTheFullDecodeForEverySubsamplingAndScale) {
  const RgbImage picture = testing::make_test_picture(331, 247, 4);
  std::map<std::string, std::vector<uint8_t>> files = {
      {"444", testing::encode_jpeg(picture, 90, false, testing::Chroma::s444)},
      {"422", testing::encode_jpeg(picture, 90, false, testing::Chroma::s422)},
      {"420", testing::encode_jpeg(picture, 90, false, testing::Chroma::s420)},
      {"411", testing::encode_jpeg(picture, 90, false, testing::Chroma::s411)},
      {"progressive", testing::encode_jpeg(picture, 85, true)},
      {"gray", testing::encode_jpeg_gray(picture)},
  };
  for (const auto& record : testing::golden_records(testing::read_golden("decode"), "decode")) {
    if (record.fields.at(0) == "jpeg_cmyk") files["cmyk"] = decode_base64(record.fields.at(5));
  }
  ASSERT_TRUE(files.contains("cmyk"));
  SampleRandom random(3, 0, 0);
  for (const auto& [name, bytes] : files) {
    const ImageHeader header = read_image_header(bytes, {});
    for (int eighths : {8, 4, 3}) {
      SCOPED_TRACE(name + " at " + std::to_string(eighths) + "/8");
      RgbImage full;
      decode_image(bytes, header, eighths, full);
      for (int trial = 0; trial < 25; ++trial) {
        DecodeRegion region;
        region.width = static_cast<int>(random.randint(1, full.width + 1));
        region.height = static_cast<int>(random.randint(1, full.height + 1));
        region.left = static_cast<int>(random.randint(0, full.width - region.width + 1));
        region.top = static_cast<int>(random.randint(0, full.height - region.height + 1));
        RgbImage part;
        const ImageOrigin origin = decode_image_region(bytes, header, eighths, region, part);
        ASSERT_LE(origin.left, region.left);
        ASSERT_LE(origin.top, region.top);
        ASSERT_GE(origin.left + part.width, region.left + region.width);
        ASSERT_GE(origin.top + part.height, region.top + region.height);
        for (int y = region.top; y < region.top + region.height; ++y) {
          const uint8_t* expected =
              &full.pixels[(static_cast<size_t>(y) * full.width + region.left) * 3];
          const uint8_t* got = &part.pixels[(static_cast<size_t>(y - origin.top) * part.width +
                                             (region.left - origin.left)) *
                                            3];
          ASSERT_EQ(std::memcmp(expected, got, static_cast<size_t>(region.width) * 3), 0)
              << "row " << y << " of region " << region.left << "," << region.top << " "
              << region.width << "x" << region.height;
        }
      }
    }
  }
}

TEST(DecodeRegion, TruncatedJpegIsRefusedEvenWhenTheRegionIsIntact) {
  std::vector<uint8_t> jpeg = testing::encode_jpeg(testing::make_test_picture(256, 192));
  jpeg.resize(jpeg.size() * 8 / 10);
  const ImageHeader header = read_image_header(jpeg, {});
  RgbImage part;
  EXPECT_THROW(decode_image_region(jpeg, header, 8, {0, 0, 16, 16}, part), BadImageError);
}

// Each bad input is a BadImageError whose message says why.
void expect_refused(const std::vector<uint8_t>& bytes, const std::string& reason,
                    const DecodeLimits& limits = {}) {
  SCOPED_TRACE("expected reason: " + reason);
  try {
    RgbImage image;
    const ImageHeader header = read_image_header(bytes, limits);
    decode_image(bytes, header, 8, image);
    ADD_FAILURE() << "accepted; expected a refusal mentioning '" << reason << "'";
  } catch (const BadImageError& error) {
    EXPECT_NE(std::string(error.what()).find(reason), std::string::npos) << error.what();
  }
}

std::vector<uint8_t> truncated(std::vector<uint8_t> bytes, double fraction) {
  bytes.resize(static_cast<size_t>(bytes.size() * fraction));
  return bytes;
}

TEST(DecodeBadInput, RefusedWithAReason) {
  testing::TempDir dir;
  const RgbImage picture = testing::make_test_picture(256, 192);
  const std::vector<uint8_t> jpeg = testing::encode_jpeg(picture);
  expect_refused({}, "empty file");
  expect_refused({'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'}, "not a recognised");
  expect_refused(truncated(jpeg, 0.7), "truncated JPEG");
  expect_refused(truncated(jpeg, 0.05), "corrupt JPEG header");
  expect_refused({0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F'}, "corrupt JPEG header");
  expect_refused(truncated(testing::encode_png(picture), 0.5), "truncated PNG");
  const std::vector<uint8_t> png = testing::encode_png(picture);
  expect_refused({png.begin(), png.begin() + 20}, "truncated PNG: chunk IHDR");
  expect_refused(truncated(testing::encode_ppm(picture), 0.5), "truncated");
  expect_refused(truncated(testing::encode_bmp(picture), 0.5), "truncated BMP");
  expect_refused(truncated(testing::encode_webp(picture, true), 0.5), "WebP");
  expect_refused(truncated(testing::encode_tiff(picture, dir.path() / "t.tif"), 0.3), "TIFF");
  expect_refused({'I', 'I', '*', 0, 0xFF, 0xFF, 0xFF, 0x7F}, "corrupt TIFF header");
  expect_refused(
      {'P', '3', '\n', '1', ' ', '1', '\n', '2', '5', '5', '\n', '0', ' ', '0', ' ', '0'},
      "PNM variant P3 is not supported");
  expect_refused(testing::encode_png_samples(0, 0, 8, 2, {}), "PNG");
  // A chunk claiming 2 GB in a small file: refused before stb allocates for it.
  std::vector<uint8_t> lying_png = testing::encode_png(testing::make_test_picture(8, 8));
  lying_png[33] = 0x7F;  // first byte of the IDAT chunk's length
  expect_refused(lying_png, "truncated PNG: chunk IDAT claims");
}

TEST(DecodeBadInput, HugeImagesAreRefusedFromTheirHeaderBeforeAllocation) {
  // 60000 x 60000 JPEG frame header on a 64 x 48 body: 3.6 gigapixels over PIL's limit.
  const std::vector<uint8_t> bomb = testing::with_jpeg_dimensions(
      testing::encode_jpeg(testing::make_test_picture(64, 48)), 60000, 60000);
  expect_refused(bomb, "exceeds the pixel limit of 178956970");
  // A PNG header claiming 20000 x 10000 pixels with no data at all.
  expect_refused(testing::png_header_only(20000, 10000),
                 "200000000 pixels exceeds the pixel limit");
  // A lowered limit applies to every format.
  const DecodeLimits small{.max_pixels = 1000};
  expect_refused(testing::encode_png(testing::make_test_picture(40, 30)), "1200 pixels", small);
  expect_refused(testing::encode_bmp(testing::make_test_picture(40, 30)), "pixel limit", small);
  EXPECT_NO_THROW(
      read_image_header(testing::encode_png(testing::make_test_picture(40, 25)), small));
}

// Inputs the fuzz target found (base64); each once crashed or tripped a sanitizer.
TEST(DecodeBadInput, FuzzFindingsStayFixed) {
  const char* findings[] = {
      "Qk1uBwAALwAAADYAJgAoAAAAHQAAABUAAAABAAIA",  // 30-byte BMP: header check read past the end
      // PNG with an empty IDAT chunk: stb_image 2.27 calls memcpy(NULL, p, 0) (benign UB)
      "iVBORw0KGgoAAAANSUhEUgAAAA0AAAAJAQAAAADBAZvHAAAAAElEQVR4nGNgUGBU1WYUEGexjGPiPsD0LYBh7Q3GaFGG"
      "9z9JRU5ErkJggg==",
      // PNG whose IDAT length made stb_image allocate 2 GiB before reading it
      "iVBORw0KGgoAAAANSUhEUgAAAA0AAAAJEAAAAACcgSX1AAAANklEQVSSnGNkYGBgxw4ZGaJjbUvDKszAgYzOnc6B"
      "nZFJiRwDmW4kYBoFgQD8twam3IUhABMbLTEsJS06PUVSXAAANklEQVSSnGNkYGBgxw4ZGaJjS20qzM7AzoyBnYGd"
      "kUmJHAOZbiRgGgWBAPy3BqZgggAAABo=",
      // PGM whose maxval overflowed stb_image 2.27's int parser (signed overflow, UB)
      "UDUKMTMgIDkKNjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2",
      // BMP whose dimensions overflowed the truncation check's row arithmetic
      "Qk2eAQAyAAAAADcAAAAoAAAADQB+AFJJRkYBABgnAAAAAABoAQAAxAAApPcQVf8f3+kC8QA=",
  };
  for (const char* finding : findings) {
    const std::vector<uint8_t> bytes = decode_base64(finding);
    try {
      decode_image(bytes);
    } catch (const BadImageError&) {
    }
  }
}

}  // namespace
}  // namespace engine::data
