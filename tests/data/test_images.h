// Test images made at test time (small, deterministic, written to a temporary directory): one
// encoder per format the decoders read, plus hand-built headers for hostile files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "data/image.h"
#include "data/warnings.h"

namespace engine::data::testing {

// Gradients and waves: smooth like a photo, different in every channel.
RgbImage make_test_picture(int width, int height, int variant = 0);

enum class Chroma { s444, s422, s420, s411 };
std::vector<uint8_t> encode_jpeg(const RgbImage& image, int quality = 90, bool progressive = false,
                                 Chroma chroma = Chroma::s420);
std::vector<uint8_t> encode_jpeg_gray(const RgbImage& image, int quality = 90);
// PNG of raw samples (8 or 16 bits, big-endian for 16), any color type; deflate "stored"
// blocks, so any size is cheap to write. 16-bit PNGs and giant headers come from here.
std::vector<uint8_t> encode_png_samples(int width, int height, int bit_depth, int color_type,
                                        const std::vector<uint8_t>& samples);
std::vector<uint8_t> encode_png(const RgbImage& image);
std::vector<uint8_t> encode_bmp(const RgbImage& image);
std::vector<uint8_t> encode_ppm(const RgbImage& image);
std::vector<uint8_t> encode_tiff(const RgbImage& image, const std::filesystem::path& scratch);
std::vector<uint8_t> encode_webp(const RgbImage& image, bool lossless);

// A PNG header (and nothing else) claiming width x height: a decompression bomb's calling card.
std::vector<uint8_t> png_header_only(uint32_t width, uint32_t height);
// A PNG of `image` whose IHDR chunk is renamed: the chunks are intact, so stb_image gets as
// far as its format probes and answers "unknown image type" (the file of issue #9).
std::vector<uint8_t> png_without_ihdr(const RgbImage& image);
// `jpeg` with the frame header's dimensions replaced.
std::vector<uint8_t> with_jpeg_dimensions(std::vector<uint8_t> jpeg, uint16_t width,
                                          uint16_t height);

void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);

// Largest and mean absolute difference of two pixel buffers; 256 when their sizes differ (or,
// for the mean, when they are empty).
int max_abs_difference(std::span<const uint8_t> a, std::span<const uint8_t> b);
double mean_abs_difference(std::span<const uint8_t> a, std::span<const uint8_t> b);
// The same for two images; 256 when their sizes differ.
int max_abs_difference(const RgbImage& a, const RgbImage& b);
double mean_abs_difference(const RgbImage& a, const RgbImage& b);

// Collects the warnings issued while it lives (the previous sink is restored after).
class CapturedWarnings {
 public:
  CapturedWarnings() {
    previous_ = set_warning_sink([this](const std::string& line) { lines.push_back(line); });
  }
  ~CapturedWarnings() { set_warning_sink(previous_); }
  CapturedWarnings(const CapturedWarnings&) = delete;
  CapturedWarnings& operator=(const CapturedWarnings&) = delete;
  std::vector<std::string> lines;

 private:
  WarningSink previous_;
};

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace engine::data::testing
