// PNG, BMP, GIF and binary PPM/PGM through stb_image. The conversions to RGB follow PIL's
// convert('RGB'): alpha is dropped (not composited), palettes are expanded, 16-bit samples keep
// their high byte, except 16-bit grayscale, which PIL opens as 32-bit integers ("I") and clips
// to 255 on the way to RGB.
#include <stb_image.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "data/decoders.h"

namespace engine::data::decoders {

namespace {

struct StbFree {
  void operator()(void* pixels) const { stbi_image_free(pixels); }
};

int checked_length(std::span<const uint8_t> bytes) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    throw BadImageError("file of " + std::to_string(bytes.size()) +
                        " bytes is too large to decode");
  }
  return static_cast<int>(bytes.size());
}

std::string failure_reason() {
  const char* reason = stbi_failure_reason();
  return reason != nullptr ? reason : "unknown error";
}

uint32_t little_endian(std::span<const uint8_t> bytes, size_t offset, int size) {
  uint32_t value = 0;
  for (int i = size - 1; i >= 0; --i)
    value = (value << 8) | bytes[offset + i];
  return value;
}

// stb reads zeros past the end of a BMP or PNM, where PIL reports a truncated file; uncompressed
// pixel data has a known size, so compare it with what is there.
void check_bmp_complete(std::span<const uint8_t> bytes) {
  if (bytes.size() < 34) return;  // too short for a header stb accepts with pixel data
  const uint32_t data_offset = little_endian(bytes, 10, 4);
  const uint32_t info_size = little_endian(bytes, 14, 4);
  int64_t width = 0;
  int64_t height = 0;
  uint32_t bits = 0;
  uint32_t compression = 0;
  if (info_size == 12) {  // OS/2 BITMAPCOREHEADER
    width = little_endian(bytes, 18, 2);
    height = little_endian(bytes, 20, 2);
    bits = little_endian(bytes, 24, 2);
  } else {
    width = static_cast<int32_t>(little_endian(bytes, 18, 4));
    height = std::abs(static_cast<int64_t>(static_cast<int32_t>(little_endian(bytes, 22, 4))));
    bits = little_endian(bytes, 28, 2);
    compression = little_endian(bytes, 30, 4);
  }
  const bool uncompressed = compression == 0 || compression == 3 || compression == 6;
  if (!uncompressed) return;
  constexpr int64_t kMaxSide = int64_t{1} << 24;  // stb_image's own limit (STBI_MAX_DIMENSIONS)
  if (width <= 0 || width > kMaxSide || height > kMaxSide || bits == 0 || bits > 32) {
    throw BadImageError("corrupt BMP header: " + std::to_string(width) + " x " +
                        std::to_string(height) + " pixels of " + std::to_string(bits) + " bits");
  }
  const int64_t row_bytes = (width * bits + 31) / 32 * 4;
  if (static_cast<int64_t>(bytes.size()) < int64_t{data_offset} + row_bytes * height) {
    throw BadImageError("truncated BMP: " + std::to_string(bytes.size()) +
                        " bytes, the header needs " +
                        std::to_string(int64_t{data_offset} + row_bytes * height));
  }
}

// The binary PNM header is "P5|P6 <width> <height> <maxval>" with whitespace and # comments,
// then exactly one whitespace byte before the samples. Parsed here before stb sees it: stb 2.27
// overflows a signed int on long numbers, and reads zeros past the end of truncated data.
void check_pnm_header(std::span<const uint8_t> bytes) {
  size_t position = 2;
  int64_t values[3] = {0, 0, 0};  // width, height, maxval
  for (int64_t& value : values) {
    while (position < bytes.size()) {
      if (bytes[position] == '#') {
        while (position < bytes.size() && bytes[position] != '\n')
          ++position;
      } else if (std::isspace(bytes[position]) != 0) {
        ++position;
      } else {
        break;
      }
    }
    int digits = 0;
    while (position < bytes.size() && std::isdigit(bytes[position]) != 0) {
      if (++digits > 8) throw BadImageError("corrupt PNM header: a number longer than 8 digits");
      value = value * 10 + (bytes[position++] - '0');
    }
    if (digits == 0) throw BadImageError("corrupt PNM header: missing width, height or maxval");
  }
  if (values[2] < 1 || values[2] > 65535) {
    throw BadImageError("corrupt PNM header: maxval " + std::to_string(values[2]) +
                        " outside 1..65535");
  }
  ++position;
  const int64_t channels = bytes[1] == '6' ? 3 : 1;
  const int64_t sample_bytes = values[2] > 255 ? 2 : 1;
  const int64_t needed =
      static_cast<int64_t>(position) + values[0] * values[1] * channels * sample_bytes;
  if (static_cast<int64_t>(bytes.size()) < needed) {
    throw BadImageError("truncated PNM: " + std::to_string(bytes.size()) +
                        " bytes, the header needs " + std::to_string(needed));
  }
}

uint32_t big_endian_u32(std::span<const uint8_t> bytes, size_t offset) {
  return (uint32_t{bytes[offset]} << 24) | (uint32_t{bytes[offset + 1]} << 16) |
         (uint32_t{bytes[offset + 2]} << 8) | bytes[offset + 3];
}

// stb grows its IDAT buffer to whatever length a chunk header claims before reading it, so a
// 100-byte file could make it allocate gigabytes. Walking the chunk headers first (no data is
// read) refuses such a file as truncated, as PIL would.
void check_png_chunks(std::span<const uint8_t> bytes) {
  size_t position = 8;  // after the signature
  while (position + 8 <= bytes.size()) {
    const uint32_t length = big_endian_u32(bytes, position);
    const std::string kind(reinterpret_cast<const char*>(&bytes[position + 4]), 4);
    const size_t remaining = bytes.size() - position - 8;
    if (length > remaining || remaining - length < 4) {
      throw BadImageError("truncated PNG: chunk " + kind + " claims " + std::to_string(length) +
                          " bytes, " + std::to_string(remaining) + " remain");
    }
    if (kind == "IEND") return;
    position += 12 + size_t{length};
  }
}

}  // namespace

ImageHeader read_stb_header(std::span<const uint8_t> bytes, ImageFormat format) {
  if (format == ImageFormat::pnm && (bytes[1] != '5' && bytes[1] != '6')) {
    throw BadImageError(std::string("PNM variant P") + static_cast<char>(bytes[1]) +
                        " is not supported (only binary PGM P5 and PPM P6)");
  }
  if (format == ImageFormat::png) check_png_chunks(bytes);
  if (format == ImageFormat::pnm) check_pnm_header(bytes);
  ImageHeader header{format, 0, 0};
  int channels = 0;
  if (stbi_info_from_memory(bytes.data(), checked_length(bytes), &header.width, &header.height,
                            &channels) == 0) {
    throw BadImageError("corrupt " + std::string(format_name(format)) +
                        " header: " + failure_reason());
  }
  if (format == ImageFormat::bmp) check_bmp_complete(bytes);
  return header;
}

void decode_stb(std::span<const uint8_t> bytes, RgbImage& image) {
  const int length = checked_length(bytes);
  int width = 0;
  int height = 0;
  int channels = 0;
  if (stbi_info_from_memory(bytes.data(), length, &width, &height, &channels) == 0) {
    throw BadImageError("corrupt image header: " + failure_reason());
  }
  if (channels == 1 && stbi_is_16_bit_from_memory(bytes.data(), length) != 0) {
    std::unique_ptr<stbi_us, StbFree> gray(
        stbi_load_16_from_memory(bytes.data(), length, &width, &height, &channels, 1));
    if (gray == nullptr) throw BadImageError("corrupt image data: " + failure_reason());
    image.reset(width, height);
    const size_t pixels = static_cast<size_t>(width) * height;
    for (size_t i = 0; i < pixels; ++i) {
      const auto value = static_cast<uint8_t>(std::min<stbi_us>(gray.get()[i], 255));
      std::memset(&image.pixels[i * 3], value, 3);
    }
    return;
  }
  std::unique_ptr<stbi_uc, StbFree> rgb(
      stbi_load_from_memory(bytes.data(), length, &width, &height, &channels, 3));
  if (rgb == nullptr) throw BadImageError("corrupt image data: " + failure_reason());
  image.reset(width, height);
  std::memcpy(image.pixels.data(), rgb.get(), image.pixels.size());
}

}  // namespace engine::data::decoders
