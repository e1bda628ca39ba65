// WebP through libwebp: still images, lossy or lossless, alpha dropped as convert('RGB') does.
// Animated WebP (PIL would take the first frame) is refused with a reason.
#include <webp/decode.h>

#include <string>

#include "data/decoders.h"

namespace engine::data::decoders {

namespace {

WebPBitstreamFeatures read_features(std::span<const uint8_t> bytes) {
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (status != VP8_STATUS_OK) {
    throw BadImageError("corrupt WebP header (VP8 status " + std::to_string(status) + ")");
  }
  if (features.has_animation != 0) throw BadImageError("animated WebP is not supported");
  return features;
}

}  // namespace

ImageHeader read_webp_header(std::span<const uint8_t> bytes) {
  const WebPBitstreamFeatures features = read_features(bytes);
  return {ImageFormat::webp, features.width, features.height};
}

void decode_webp(std::span<const uint8_t> bytes, RgbImage& image) {
  const WebPBitstreamFeatures features = read_features(bytes);
  image.reset(features.width, features.height);
  if (WebPDecodeRGBInto(bytes.data(), bytes.size(), image.pixels.data(), image.pixels.size(),
                        features.width * 3) == nullptr) {
    throw BadImageError("corrupt or truncated WebP data");
  }
}

}  // namespace engine::data::decoders
