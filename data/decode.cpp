#include "data/decode.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "data/decoders.h"

namespace engine::data {

namespace {

bool starts_with(std::span<const uint8_t> bytes, std::string_view magic, size_t offset = 0) {
  return bytes.size() >= offset + magic.size() &&
         std::memcmp(bytes.data() + offset, magic.data(), magic.size()) == 0;
}

[[noreturn, maybe_unused]] void missing_library(ImageFormat format, const char* library) {
  throw BadImageError(std::string(format_name(format)) + " support was not built (" + library +
                      " was missing at configure time)");
}

void check_limits(const ImageHeader& header, const DecodeLimits& limits) {
  if (header.width <= 0 || header.height <= 0) {
    throw BadImageError(std::string(format_name(header.format)) + " image has a zero size (" +
                        std::to_string(header.width) + " x " + std::to_string(header.height) + ")");
  }
  const int64_t pixels = int64_t{header.width} * header.height;
  if (pixels > limits.max_pixels) {
    throw BadImageError("image of " + std::to_string(header.width) + " x " +
                        std::to_string(header.height) + " = " + std::to_string(pixels) +
                        " pixels exceeds the pixel limit of " + std::to_string(limits.max_pixels) +
                        " (DecodeLimits::max_pixels); possible decompression bomb");
  }
}

}  // namespace

BadImageError::BadImageError(const std::string& reason, const std::string& path)
    : Error(path.empty() ? reason : path + ": " + reason), reason_(reason), path_(path) {}

std::string_view format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::jpeg:
      return "JPEG";
    case ImageFormat::png:
      return "PNG";
    case ImageFormat::bmp:
      return "BMP";
    case ImageFormat::gif:
      return "GIF";
    case ImageFormat::pnm:
      return "PNM";
    case ImageFormat::tiff:
      return "TIFF";
    case ImageFormat::webp:
      return "WebP";
    case ImageFormat::unknown:
      break;
  }
  return "unknown";
}

ImageFormat sniff_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, "\xFF\xD8\xFF")) return ImageFormat::jpeg;
  if (starts_with(bytes, "\x89PNG\r\n\x1A\n")) return ImageFormat::png;
  if (starts_with(bytes, "BM")) return ImageFormat::bmp;
  if (starts_with(bytes, "GIF87a") || starts_with(bytes, "GIF89a")) return ImageFormat::gif;
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '7') {
    return ImageFormat::pnm;
  }
  if (starts_with(bytes, std::string_view("II*\0", 4)) ||
      starts_with(bytes, std::string_view("MM\0*", 4)) ||
      starts_with(bytes, std::string_view("II+\0", 4)) ||
      starts_with(bytes, std::string_view("MM\0+", 4))) {
    return ImageFormat::tiff;
  }
  if (starts_with(bytes, "RIFF") && starts_with(bytes, "WEBP", 8)) return ImageFormat::webp;
  return ImageFormat::unknown;
}

ImageHeader read_image_header(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  if (bytes.empty()) throw BadImageError("empty file (0 bytes)");
  ImageHeader header;
  const ImageFormat format = sniff_format(bytes);
  switch (format) {
    case ImageFormat::jpeg:
#if ENGINE_DATA_HAVE_LIBJPEG
      header = decoders::read_jpeg_header(bytes);
#else
      header = decoders::read_stb_header(bytes, format);
#endif
      break;
    case ImageFormat::png:
    case ImageFormat::bmp:
    case ImageFormat::gif:
    case ImageFormat::pnm:
      header = decoders::read_stb_header(bytes, format);
      break;
    case ImageFormat::tiff:
#if ENGINE_DATA_HAVE_TIFF
      header = decoders::read_tiff_header(bytes);
#else
      missing_library(format, "libtiff");
#endif
      break;
    case ImageFormat::webp:
#if ENGINE_DATA_HAVE_WEBP
      header = decoders::read_webp_header(bytes);
#else
      missing_library(format, "libwebp");
#endif
      break;
    case ImageFormat::unknown:
      throw BadImageError(
          "not a recognised image format (JPEG, PNG, BMP, GIF, PPM/PGM, TIFF, WebP)");
  }
  check_limits(header, limits);
  return header;
}

bool decodes_scaled(ImageFormat format) {
  return format == ImageFormat::jpeg && ENGINE_DATA_HAVE_LIBJPEG;
}

ImageHeader scaled_header(const ImageHeader& header, int scale_eighths) {
  if (!decodes_scaled(header.format) || scale_eighths >= 8) return header;
  ImageHeader scaled = header;
  scaled.width = (header.width * scale_eighths + 7) / 8;
  scaled.height = (header.height * scale_eighths + 7) / 8;
  return scaled;
}

void decode_image(std::span<const uint8_t> bytes, const ImageHeader& header, int scale_eighths,
                  RgbImage& image) {
  decode_image_region(bytes, header, scale_eighths, {}, image);
}

ImageOrigin decode_image_region(std::span<const uint8_t> bytes, const ImageHeader& header,
                                int scale_eighths, const DecodeRegion& region, RgbImage& image) {
  ENGINE_REQUIRE(scale_eighths >= 1 && scale_eighths <= 8,
                 "decode_image: scale_eighths must be 1..8, got " + std::to_string(scale_eighths));
  ImageOrigin origin;
  switch (header.format) {
    case ImageFormat::jpeg:
#if ENGINE_DATA_HAVE_LIBJPEG
      origin = decoders::decode_jpeg(bytes, scale_eighths, region, image);
#else
      decoders::decode_stb(bytes, image);
#endif
      break;
    case ImageFormat::png:
    case ImageFormat::bmp:
    case ImageFormat::gif:
    case ImageFormat::pnm:
      decoders::decode_stb(bytes, image);
      break;
#if ENGINE_DATA_HAVE_TIFF
    case ImageFormat::tiff:
      decoders::decode_tiff(bytes, image);
      break;
#endif
#if ENGINE_DATA_HAVE_WEBP
    case ImageFormat::webp:
      decoders::decode_webp(bytes, image);
      break;
#endif
    default:
      throw BadImageError("decode_image: no decoder for " +
                          std::string(format_name(header.format)));
  }
  // Either the whole image, or a part inside it that covers the region: the resize then
  // never reads a pixel that was not decoded, whatever the file claimed.
  const ImageHeader expected = scaled_header(header, scale_eighths);
  const bool whole = origin.left == 0 && origin.top == 0 && image.width == expected.width &&
                     image.height == expected.height;
  const bool inside = origin.left >= 0 && origin.top >= 0 &&
                      origin.left + image.width <= expected.width &&
                      origin.top + image.height <= expected.height;
  const bool covers =
      region.width > 0 && region.height > 0 && origin.left <= region.left &&
      origin.top <= region.top &&
      origin.left + image.width >= std::min(region.left + region.width, expected.width) &&
      origin.top + image.height >= std::min(region.top + region.height, expected.height);
  if (!whole && !(inside && covers)) {
    throw BadImageError("decoded " + std::to_string(image.width) + " x " +
                        std::to_string(image.height) + " pixels do not match the header's " +
                        std::to_string(expected.width) + " x " + std::to_string(expected.height));
  }
  return origin;
}

RgbImage decode_image(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  const ImageHeader header = read_image_header(bytes, limits);
  RgbImage image;
  decode_image(bytes, header, 8, image);
  return image;
}

}  // namespace engine::data
