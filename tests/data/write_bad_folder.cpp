// Writes a small ImageFolder with three bad files among eight good ones, for the ctest that
// runs bench_data over it (check_bench_data_skips.sh):
//   <dir>/good/img<i>.jpg|png      eight small pictures
//   <dir>/bad/bad_header.png       intact chunks, IHDR renamed: "unknown image type"
//   <dir>/bad/truncated.jpg        the first 80% of a JPEG: its header reads, its data ends early
//   <dir>/bad/not_an_image.jpg     text
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/data/test_images.h"
#include "train/cli_command.h"

namespace {

int write_folder(const std::filesystem::path& dir) {
  namespace testing = engine::data::testing;
  std::filesystem::create_directories(dir / "good");
  std::filesystem::create_directories(dir / "bad");
  for (int i = 0; i < 8; ++i) {
    const engine::data::RgbImage picture = testing::make_test_picture(48, 40, i);
    const std::string stem = (dir / "good" / ("img" + std::to_string(i))).string();
    if (i % 2 == 0) {
      testing::write_file(stem + ".jpg", testing::encode_jpeg(picture));
    } else {
      testing::write_file(stem + ".png", testing::encode_png(picture));
    }
  }
  const engine::data::RgbImage picture = testing::make_test_picture(128, 96);
  testing::write_file(dir / "bad" / "bad_header.png", testing::png_without_ihdr(picture));
  std::vector<uint8_t> jpeg = testing::encode_jpeg(picture);
  jpeg.resize(jpeg.size() * 8 / 10);
  testing::write_file(dir / "bad" / "truncated.jpg", jpeg);
  const std::string text = "not an image\n";
  testing::write_file(dir / "bad" / "not_an_image.jpg", {text.begin(), text.end()});
  std::printf("wrote 8 good images and 3 bad files to %s\n", dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return engine::cli::run_single_argument(
      argc, argv, "data_write_bad_folder", "DIR",
      "Writes an ImageFolder of 8 good images and 3 bad files (DIR/bad/) for bench_data.",
      [](const std::string& dir) { return write_folder(dir); });
}
