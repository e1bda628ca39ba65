#include "data/augment_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "data/pil_geometry.h"
#include "kernels/error.h"

namespace engine::data {

namespace {

using Lut = std::array<uint8_t, 256>;

// Pillow's rgb2l (ITU-R 601-2 luma in 16.16 fixed point, rounded).
uint8_t pil_luma(const uint8_t* rgb) {
  return static_cast<uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);
}

// Pillow's getlist(TYPE_UINT8): a lookup value outside 0..255 is clamped.
uint8_t clip8(int64_t value) {
  return static_cast<uint8_t>(std::clamp<int64_t>(value, 0, 255));
}

// Pillow's clip8 for a float filter sum: truncation inside, saturation outside.
uint8_t clip8(float value) {
  if (value <= 0.0f) return 0;
  if (value >= 255.0f) return 255;
  return static_cast<uint8_t>(value);
}

void apply_luts(const std::array<Lut, 3>& luts, RgbImage& image) {
  for (size_t i = 0; i < image.pixels.size(); i += 3) {
    for (size_t c = 0; c < 3; ++c)
      image.pixels[i + c] = luts[c][image.pixels[i + c]];
  }
}

void apply_lut(const Lut& lut, RgbImage& image) {
  for (uint8_t& v : image.pixels)
    v = lut[v];
}

using Histogram = std::array<int64_t, 256>;

std::array<Histogram, 3> channel_histograms(const RgbImage& image) {
  std::array<Histogram, 3> h{};
  for (size_t i = 0; i < image.pixels.size(); i += 3) {
    for (size_t c = 0; c < 3; ++c)
      ++h[c][image.pixels[i + c]];
  }
  return h;
}

Lut identity_lut() {
  Lut lut{};
  for (int i = 0; i < 256; ++i)
    lut[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  return lut;
}

// ImageOps.autocontrast(cutoff=0): each channel's lowest and highest used levels stretched to
// 0 and 255 with int(i * scale + offset) in doubles; a channel with one level is unchanged.
void auto_contrast(RgbImage& image) {
  const std::array<Histogram, 3> histograms = channel_histograms(image);
  std::array<Lut, 3> luts{};
  for (size_t c = 0; c < 3; ++c) {
    const Histogram& h = histograms[c];
    int lo = 0;
    while (lo < 255 && h[static_cast<size_t>(lo)] == 0)
      ++lo;
    int hi = 255;
    while (hi > 0 && h[static_cast<size_t>(hi)] == 0)
      --hi;
    if (hi <= lo) {
      luts[c] = identity_lut();
      continue;
    }
    const double scale = 255.0 / (hi - lo);
    const double offset = -lo * scale;
    for (int i = 0; i < 256; ++i) {
      const auto level = static_cast<int64_t>(i * scale + offset);  // Python int(): toward 0
      luts[c][static_cast<size_t>(i)] = clip8(level);
    }
  }
  apply_luts(luts, image);
}

// ImageOps.equalize: each channel's cumulative histogram in steps of (pixels - count of the
// last used level) // 255, starting half a step in; a channel with one level, or too few pixels
// for a step, is unchanged.
void equalize(RgbImage& image) {
  const std::array<Histogram, 3> histograms = channel_histograms(image);
  std::array<Lut, 3> luts{};
  for (size_t c = 0; c < 3; ++c) {
    const Histogram& h = histograms[c];
    int64_t total = 0;
    int64_t last_used = 0;
    int used_levels = 0;
    for (const int64_t count : h) {
      if (count == 0) continue;
      total += count;
      last_used = count;
      ++used_levels;
    }
    const int64_t step = used_levels <= 1 ? 0 : (total - last_used) / 255;
    if (step == 0) {
      luts[c] = identity_lut();
      continue;
    }
    int64_t n = step / 2;
    for (size_t i = 0; i < 256; ++i) {
      luts[c][i] = clip8(n / step);
      n += h[i];
    }
  }
  apply_luts(luts, image);
}

// ImageFilter.SMOOTH (3x3, weights 1 and a centre of 5, divided by 13) as Pillow's
// ImagingFilter3x3 sums it in float32, rows below first; the border rows and columns are
// copied, and an image under 3 x 3 is copied whole.
void smooth(const RgbImage& in, RgbImage& out) {
  out = in;
  if (in.width < 3 || in.height < 3) return;
  const float edge = 1.0f / 13.0f;
  const float centre = 5.0f / 13.0f;
  const size_t stride = static_cast<size_t>(in.width) * 3;
  const auto row_sum = [](const uint8_t* p, float left, float mid, float right) {
    return static_cast<float>(p[-3]) * left + static_cast<float>(p[0]) * mid +
           static_cast<float>(p[3]) * right;
  };
  for (int y = 1; y < in.height - 1; ++y) {
    const uint8_t* row = in.pixels.data() + static_cast<size_t>(y) * stride;
    uint8_t* target = out.pixels.data() + static_cast<size_t>(y) * stride;
    for (size_t i = 3; i < stride - 3; ++i) {
      float sum = 0.5f;  // Pillow's offset (0) plus 0.5 for rounding
      sum += row_sum(row + stride + i, edge, edge, edge);
      sum += row_sum(row + i, edge, centre, edge);
      sum += row_sum(row - stride + i, edge, edge, edge);
      target[i] = clip8(sum);
    }
  }
}

void fill_grayscale(const RgbImage& image, RgbImage& gray) {
  gray.reset(image.width, image.height);
  for (size_t i = 0; i < image.pixels.size(); i += 3) {
    const uint8_t luma = pil_luma(&image.pixels[i]);
    gray.pixels[i] = gray.pixels[i + 1] = gray.pixels[i + 2] = luma;
  }
}

// ImageEnhance.Contrast's degenerate: the mean luma, int(mean + 0.5), everywhere.
void fill_mean_luma(const RgbImage& image, RgbImage& degenerate) {
  int64_t sum = 0;
  for (size_t i = 0; i < image.pixels.size(); i += 3)
    sum += pil_luma(&image.pixels[i]);
  const int64_t pixels = static_cast<int64_t>(image.pixels.size() / 3);
  const auto mean = static_cast<uint8_t>(static_cast<double>(sum) / pixels + 0.5);
  degenerate.reset(image.width, image.height);
  std::fill(degenerate.pixels.begin(), degenerate.pixels.end(), mean);
}

void posterize(int bits, RgbImage& image) {
  ENGINE_REQUIRE(bits >= 0 && bits <= 8, "Posterize: bits must be in 0..8");
  const int mask = ~((1 << (8 - bits)) - 1);
  Lut lut{};
  for (int i = 0; i < 256; ++i)
    lut[static_cast<size_t>(i)] = static_cast<uint8_t>(i & mask);
  apply_lut(lut, image);
}

void solarize(double threshold, RgbImage& image) {
  Lut lut{};
  for (int i = 0; i < 256; ++i)
    lut[static_cast<size_t>(i)] = static_cast<uint8_t>(i < threshold ? i : 255 - i);
  apply_lut(lut, image);
}

void affine(const AffineParams& params, RgbImage& image, RgbImage& scratch) {
  pil_affine_nearest(image, torchvision_inverse_affine(params), scratch);
  std::swap(image, scratch);
}

}  // namespace

std::string_view augment_op_name(AugmentOp op) {
  static constexpr std::array<std::string_view, kAugmentOpCount> names = {
      "Identity", "ShearX",   "ShearY",    "TranslateX", "TranslateY", "Rotate",       "Brightness",
      "Color",    "Contrast", "Sharpness", "Posterize",  "Solarize",   "AutoContrast", "Equalize"};
  return names.at(static_cast<size_t>(op));
}

void pil_blend(const RgbImage& degenerate, float factor, RgbImage& image) {
  // Image.blend's shortcuts return a copy of one input.
  if (factor == 0.0f) {
    image.pixels = degenerate.pixels;
    return;
  }
  if (factor == 1.0f) return;
  const bool interpolates = factor >= 0.0f && factor <= 1.0f;
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    const int from = degenerate.pixels[i];
    const int to = image.pixels[i];
    const float value = static_cast<float>(from) + factor * static_cast<float>(to - from);
    image.pixels[i] = interpolates ? static_cast<uint8_t>(value) : clip8(value);
  }
}

void apply_augment_op(AugmentOp op, double magnitude, RgbImage& image, RgbImage& scratch) {
  // Pillow's blend takes the factor as a C float.
  const auto factor = static_cast<float>(1.0 + magnitude);
  switch (op) {
    case AugmentOp::identity:
      return;
    case AugmentOp::shear_x:  // torchvision passes degrees(atan(m)) as the shear, centre (0, 0)
      return affine({.shear_degrees = {python_degrees(std::atan(magnitude)), 0.0}}, image, scratch);
    case AugmentOp::shear_y:
      return affine({.shear_degrees = {0.0, python_degrees(std::atan(magnitude))}}, image, scratch);
    case AugmentOp::translate_x:  // whole pixels: int(magnitude); centre at the image's middle
    case AugmentOp::translate_y: {
      const auto pixels = static_cast<double>(static_cast<int64_t>(magnitude));
      AffineParams params;
      params.translate =
          op == AugmentOp::translate_x ? std::array{pixels, 0.0} : std::array{0.0, pixels};
      params.center = {image.width * 0.5, image.height * 0.5};
      return affine(params, image, scratch);
    }
    case AugmentOp::rotate:
      pil_rotate_nearest(image, magnitude, scratch);
      std::swap(image, scratch);
      return;
    case AugmentOp::brightness:
      scratch.reset(image.width, image.height);
      std::fill(scratch.pixels.begin(), scratch.pixels.end(), uint8_t{0});
      return pil_blend(scratch, factor, image);
    case AugmentOp::color:
      fill_grayscale(image, scratch);
      return pil_blend(scratch, factor, image);
    case AugmentOp::contrast:
      fill_mean_luma(image, scratch);
      return pil_blend(scratch, factor, image);
    case AugmentOp::sharpness:
      smooth(image, scratch);
      return pil_blend(scratch, factor, image);
    case AugmentOp::posterize:
      return posterize(static_cast<int>(magnitude), image);
    case AugmentOp::solarize:
      return solarize(magnitude, image);
    case AugmentOp::auto_contrast:
      return auto_contrast(image);
    case AugmentOp::equalize:
      return equalize(image);
  }
  fail("apply_augment_op: unknown op");
}

}  // namespace engine::data
