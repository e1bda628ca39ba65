// PIL's antialiased bilinear resize (Image.resize with BILINEAR, as torchvision's Resize and
// RandomResizedCrop call it on PIL images), reimplemented to give the same 8-bit results:
// triangle filter widened by the downscale factor, coefficients normalized per output pixel and
// rounded to 22 fractional bits, horizontal pass first into an 8-bit intermediate, then the
// vertical pass (Pillow's src/libImaging/Resample.c).
//
// Beyond PIL: only a window of the resized image is computed (CenterCrop after Resize costs
// the crop, not the whole resize), and the window may extend past the resized image, where it
// is 0 (CenterCrop's padding).
#pragma once

#include <cstdint>
#include <vector>

#include "data/image.h"

namespace engine::data {

// The taps of one axis for output pixels [out_begin, out_end) of a resize of the input range
// [in_begin, in_end) (PIL's box, may be fractional) of an axis of in_size pixels to out_size.
struct ResampleAxis {
  int taps = 0;                  // weights per output pixel (PIL's ksize)
  std::vector<int> first;        // first input pixel of each output pixel
  std::vector<int> count;        // input pixels each output pixel reads
  std::vector<int32_t> weights;  // taps per output pixel, 22 fractional bits
};
inline constexpr int kResamplePrecisionBits = 22;

void compute_resample_axis(int in_size, double in_begin, double in_end, int out_size, int out_begin,
                           int out_end, ResampleAxis& axis);

// The input pixels [begin, end) that outputs [out_begin, out_end) of such a resize read: what a
// decoder must produce for them.
struct InputRange {
  int begin = 0;
  int end = 0;
};
InputRange resample_input_range(int in_size, double in_begin, double in_end, int out_size,
                                int out_begin, int out_end);

struct ResizeRequest {
  // PIL: source.resize((resized_width, resized_height), BILINEAR, box=(box_left, box_top,
  // box_right, box_bottom)).
  double box_left = 0;
  double box_top = 0;
  double box_right = 0;
  double box_bottom = 0;
  int resized_width = 0;
  int resized_height = 0;
  // The part of the resized image to produce, in resized coordinates.
  int window_left = 0;
  int window_top = 0;
  int window_width = 0;
  int window_height = 0;
  // The image the box refers to is image_width x image_height (0: the source view's size), and
  // the source view holds only part of it, starting at (view_left, view_top): a region decode.
  int image_width = 0;
  int image_height = 0;
  int view_left = 0;
  int view_top = 0;
};

// Holds the scratch buffers, so a worker resizes thousands of images without allocating.
class Resampler {
 public:
  // Writes window_width x window_height packed RGB8 pixels to `out`. Throws engine::Error if the
  // taps would read outside `source`.
  void resize(const RgbView& source, const ResizeRequest& request, uint8_t* out);

 private:
  void horizontal_pass(const RgbView& source, int row_begin, int row_end);
  void vertical_pass(const RgbView& rows, int out_width, uint8_t* out, size_t out_stride);

  ResampleAxis horizontal_;
  ResampleAxis vertical_;
  std::vector<uint8_t> intermediate_;
  std::vector<int32_t> accumulator_;
};

}  // namespace engine::data
