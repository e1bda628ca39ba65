// The per-library decoders behind decode.h (internal to data/). Each reads a header without
// touching pixels and decodes into an RgbImage; all throw BadImageError.
#pragma once

#include <cstdint>
#include <span>

#include "data/decode.h"
#include "data/image.h"

namespace engine::data::decoders {

// libjpeg-turbo's libjpeg API (decode_jpeg.cpp). scale_eighths in 1..8 selects the scaled
// IDCT; a non-empty region limits decoding to it (plus a margin) and the origin says where the
// decoded pixels start.
ImageHeader read_jpeg_header(std::span<const uint8_t> bytes);
ImageOrigin decode_jpeg(std::span<const uint8_t> bytes, int scale_eighths,
                        const DecodeRegion& region, RgbImage& image);

// stb_image (decode_stb.cpp): PNG, BMP, GIF (first frame), binary PPM/PGM.
ImageHeader read_stb_header(std::span<const uint8_t> bytes, ImageFormat format);
void decode_stb(std::span<const uint8_t> bytes, RgbImage& image);

// libtiff (decode_tiff.cpp): the first directory of a TIFF.
ImageHeader read_tiff_header(std::span<const uint8_t> bytes);
void decode_tiff(std::span<const uint8_t> bytes, RgbImage& image);

// libwebp (decode_webp.cpp): still images, lossy or lossless.
ImageHeader read_webp_header(std::span<const uint8_t> bytes);
void decode_webp(std::span<const uint8_t> bytes, RgbImage& image);

// PIL's CMYK -> RGB conversion (Convert.c cmyk2rgb): each channel nk - c * nk / 255 with
// nk = 255 - k, rounded as MULDIV255 does. Shared by the JPEG and TIFF decoders.
inline uint8_t cmyk_channel_to_rgb(uint8_t ink, uint8_t black) {
  const int not_black = 255 - black;
  const int product = ink * not_black + 128;
  const int ink_part = ((product >> 8) + product) >> 8;
  return static_cast<uint8_t>(not_black - ink_part);
}

}  // namespace engine::data::decoders
