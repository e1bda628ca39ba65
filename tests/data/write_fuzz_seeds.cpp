// Writes the fuzz target's seed corpus: small images in every format the decoders read (made
// here), and the PIL-made files of the decode golden (CMYK, palette, 16-bit, GIF, ...).
//
//   data_write_fuzz_seeds DIR
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/data/golden.h"
#include "tests/data/test_images.h"
#include "train/cli_command.h"

namespace {

int write_seeds(const std::filesystem::path& dir) {
  namespace testing = engine::data::testing;
  std::filesystem::create_directories(dir);
  const engine::data::RgbImage picture = testing::make_test_picture(29, 21, 3);
  testing::write_file(dir / "rgb.jpg", testing::encode_jpeg(picture));
  testing::write_file(dir / "progressive.jpg", testing::encode_jpeg(picture, 80, true));
  testing::write_file(dir / "gray.jpg", testing::encode_jpeg_gray(picture));
  testing::write_file(dir / "rgb.png", testing::encode_png(picture));
  testing::write_file(dir / "rgb.bmp", testing::encode_bmp(picture));
  testing::write_file(dir / "rgb.ppm", testing::encode_ppm(picture));
  testing::write_file(dir / "rgb.tif", testing::encode_tiff(picture, dir / "rgb.tif"));
  testing::write_file(dir / "lossy.webp", testing::encode_webp(picture, false));
  testing::write_file(dir / "lossless.webp", testing::encode_webp(picture, true));
  int written = 9;
  for (const auto& record : testing::golden_records(testing::read_golden("decode"), "decode")) {
    testing::write_file(dir / ("golden_" + record.fields.at(0)),
                        testing::decode_base64(record.fields.at(5)));
    ++written;
  }
  std::printf("wrote %d seed images to %s\n", written, dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return engine::cli::run_single_argument(
      argc, argv, "data_write_fuzz_seeds", "DIR",
      "Writes the seed corpus of data_fuzz_decode_transform (an image in every format) to DIR.",
      [](const std::string& dir) { return write_seeds(dir); });
}
