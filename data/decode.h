// Image decoding: the file's bytes -> 8-bit RGB. The format comes from the content (as PIL
// decides), not from the extension: JPEG through libjpeg-turbo (with DCT-domain downscaling and
// region decoding),
// PNG/BMP/GIF/PPM/PGM through stb_image, TIFF through libtiff, WebP through libwebp.
//
// EXIF orientation is ignored, as torchvision does.
//
// Untrusted input: every failure is a BadImageError carrying the reason, never a crash, and
// the dimensions are checked against a pixel limit before any pixel memory is allocated, so a
// decompression bomb costs nothing but its header.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "data/image.h"
#include "kernels/error.h"

namespace engine::data {

// A file that cannot be used as a sample: the loader skips it with one warning (its path and
// the reason) and counts it. The decoders see bytes only and throw the reason; whoever knows
// the file (read_file, decode_image_file, BadFileLog) attaches its path, and what() is then
// "<path>: <reason>", so no message escapes without naming the file.
class BadImageError : public Error {
 public:
  explicit BadImageError(const std::string& reason, const std::string& path = {});

  const std::string& reason() const { return reason_; }
  // The file the bytes came from; empty for bytes decoded from memory.
  const std::string& path() const { return path_; }

 private:
  std::string reason_;
  std::string path_;
};

enum class ImageFormat : uint8_t { unknown, jpeg, png, bmp, gif, pnm, tiff, webp };
std::string_view format_name(ImageFormat format);

// PIL's decompression-bomb error threshold: 2 * Image.MAX_IMAGE_PIXELS.
inline constexpr int64_t kDefaultMaxImagePixels = 178'956'970;

struct DecodeLimits {
  // Images with more pixels than this are rejected from their header.
  int64_t max_pixels = kDefaultMaxImagePixels;
};

struct ImageHeader {
  ImageFormat format = ImageFormat::unknown;
  int width = 0;
  int height = 0;
};

// The format from the first bytes; unknown when nothing matches.
ImageFormat sniff_format(std::span<const uint8_t> bytes);

// Reads the dimensions without decoding pixels and applies the limits. Throws BadImageError
// for empty, unrecognised, corrupt-header, zero-sized or too large images.
ImageHeader read_image_header(std::span<const uint8_t> bytes, const DecodeLimits& limits);

// Whether decode_image can decode this format at less than full size: JPEG through libjpeg's
// scaled IDCT. Builds without libjpeg decode JPEG with stb_image, at full size only.
bool decodes_scaled(ImageFormat format);

// The size decode_image produces at `scale_eighths`/8 of full size: rounded up, as libjpeg's
// scaled IDCT does, where decodes_scaled; the full size otherwise (the scale is ignored).
ImageHeader scaled_header(const ImageHeader& header, int scale_eighths);

// Decodes into `image` (reusing its buffer) at `scale_eighths`/8 (1..8) of full size.
// `header` must come from read_image_header on the same bytes. Throws BadImageError.
void decode_image(std::span<const uint8_t> bytes, const ImageHeader& header, int scale_eighths,
                  RgbImage& image);

// A rectangle of the (scaled) image; empty (width or height 0) means the whole image.
struct DecodeRegion {
  int left = 0;
  int top = 0;
  int width = 0;
  int height = 0;
};
// Where the decoded pixels sit in the (scaled) image.
struct ImageOrigin {
  int left = 0;
  int top = 0;
};

// Decodes at least `region` and returns where `image` starts. JPEG decodes little more than
// the region (rows below it not at all), with pixels equal to a full decode's; other formats
// decode the whole image (origin 0, 0).
ImageOrigin decode_image_region(std::span<const uint8_t> bytes, const ImageHeader& header,
                                int scale_eighths, const DecodeRegion& region, RgbImage& image);

// Header + full-size decode in one call.
RgbImage decode_image(std::span<const uint8_t> bytes, const DecodeLimits& limits = {});

}  // namespace engine::data
