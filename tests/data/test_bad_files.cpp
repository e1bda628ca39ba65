// Errors from files name the file (issue #9), and BadFileLog, through which the loader and
// bench_data skip bad files, warns once per file and counts them.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/bad_file_log.h"
#include "data/decode.h"
#include "data/file_io.h"
#include "tests/data/test_images.h"

namespace engine::data {
namespace {

namespace fs = std::filesystem;

// What decode_image_file throws for `path`; fails the test when it throws nothing.
BadImageError refusal_of(const std::string& path) {
  std::vector<uint8_t> bytes;
  RgbImage image;
  try {
    decode_image_file(path, bytes, image);
  } catch (const BadImageError& error) {
    return error;
  }
  ADD_FAILURE() << path << " was decoded; expected a BadImageError";
  return BadImageError("nothing thrown");
}

TEST(BadImageError, WhatNamesThePathWhenItIsKnown) {
  const BadImageError from_memory("empty file (0 bytes)");
  EXPECT_STREQ(from_memory.what(), "empty file (0 bytes)");
  EXPECT_EQ(from_memory.path(), "");
  const BadImageError from_file("empty file (0 bytes)", "/data/cat/1.jpg");
  EXPECT_STREQ(from_file.what(), "/data/cat/1.jpg: empty file (0 bytes)");
  EXPECT_EQ(from_file.reason(), "empty file (0 bytes)");
  EXPECT_EQ(from_file.path(), "/data/cat/1.jpg");
}

TEST(DecodeImageFile, EveryRefusalNamesTheFile) {
  testing::TempDir dir;
  const RgbImage picture = testing::make_test_picture(128, 96);
  std::vector<uint8_t> truncated_jpeg = testing::encode_jpeg(picture);
  truncated_jpeg.resize(truncated_jpeg.size() * 8 / 10);  // into the scan data, past the header
  const struct {
    std::string name;
    std::vector<uint8_t> bytes;
    std::string reason;
  } cases[] = {
      {"bad.png", testing::png_without_ihdr(picture), "corrupt PNG header: unknown image type"},
      {"truncated.jpg", truncated_jpeg, "truncated JPEG: Premature end of JPEG file"},
      {"notes.jpg", {'h', 'e', 'l', 'l', 'o', '\n'}, "not a recognised image format"},
      {"empty.png", {}, "empty file (0 bytes)"},
  };
  for (const auto& bad : cases) {
    const std::string path = (dir.path() / bad.name).string();
    testing::write_file(path, bad.bytes);
    const BadImageError error = refusal_of(path);
    EXPECT_EQ(error.path(), path);
    EXPECT_EQ(error.reason().rfind(bad.reason, 0), 0u) << error.reason();
    EXPECT_EQ(std::string(error.what()), path + ": " + error.reason());
  }
}

TEST(DecodeImageFile, ReadFailuresNameTheFileToo) {
  testing::TempDir dir;
  const std::string missing = (dir.path() / "missing.jpg").string();
  EXPECT_EQ(std::string(refusal_of(missing).what()),
            missing + ": cannot open: No such file or directory");
  const std::string folder = (dir.path() / "folder.jpg").string();
  fs::create_directory(folder);
  EXPECT_EQ(std::string(refusal_of(folder).what()), folder + ": not a regular file");
}

TEST(DecodeImageFile, DecodesAGoodFileAsDecodeImageDoes) {
  testing::TempDir dir;
  const std::vector<uint8_t> png = testing::encode_png(testing::make_test_picture(33, 17, 2));
  const std::string path = (dir.path() / "good.png").string();
  testing::write_file(path, png);
  std::vector<uint8_t> bytes;
  RgbImage image;
  decode_image_file(path, bytes, image);
  EXPECT_EQ(bytes, png);
  EXPECT_EQ(testing::max_abs_difference(image, decode_image(png)), 0);
}

TEST(BadFileLog, SkipsWithOneWarningPerFileThatNamesItOnce) {
  testing::CapturedWarnings warnings;
  BadFileLog log;
  const std::string path = "/data/cat/broken.png";
  auto broken = [&] { throw BadImageError("corrupt PNG header: unknown image type", path); };
  EXPECT_FALSE(log.use_or_skip(path, broken));
  EXPECT_FALSE(log.use_or_skip(path, broken));
  EXPECT_TRUE(log.use_or_skip("/data/cat/fine.png", [] {}));
  EXPECT_FALSE(
      log.use_or_skip("/data/dog/empty.jpg", [] { throw BadImageError("empty file (0 bytes)"); }));
  EXPECT_EQ(log.files(), 2u);
  ASSERT_EQ(warnings.lines.size(), 2u) << "one warning per file, not per attempt";
  EXPECT_EQ(warnings.lines[0],
            "warning: skipping /data/cat/broken.png: corrupt PNG header: unknown image type");
  EXPECT_EQ(warnings.lines[1], "warning: skipping /data/dog/empty.jpg: empty file (0 bytes)");
  // Anything but a bad file is not the file's fault: it propagates.
  EXPECT_THROW(log.use_or_skip(path, [] { throw std::logic_error("bug"); }), std::logic_error);
}

}  // namespace
}  // namespace engine::data
