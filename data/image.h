// Decoded pixels. Every decoder produces 8-bit RGB whatever the file holds (grayscale, alpha,
// CMYK, 16-bit), as PIL's convert('RGB') does inside torchvision's ImageFolder loader, so the
// transforms have exactly one input format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace engine::data {

// A read-only window of RGB8 pixels: `width` x `height`, rows `stride` bytes apart.
struct RgbView {
  const uint8_t* pixels = nullptr;
  int width = 0;
  int height = 0;
  size_t stride = 0;

  const uint8_t* row(int y) const { return pixels + static_cast<size_t>(y) * stride; }
  // The sub-window with its top-left corner at (left, top); the caller keeps it inside.
  RgbView crop(int left, int top, int crop_width, int crop_height) const {
    return {row(top) + static_cast<size_t>(left) * 3, crop_width, crop_height, stride};
  }
};

// An owned RGB8 image with packed rows. Decoders reuse `pixels`' capacity across images, so a
// worker that decodes thousands of images allocates only when a larger one arrives.
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // height * width * 3 bytes

  // Sets the size and makes room for the pixels (contents unspecified).
  void reset(int new_width, int new_height) {
    width = new_width;
    height = new_height;
    pixels.resize(static_cast<size_t>(new_width) * static_cast<size_t>(new_height) * 3);
  }
  RgbView view() const { return {pixels.data(), width, height, static_cast<size_t>(width) * 3}; }
};

}  // namespace engine::data
