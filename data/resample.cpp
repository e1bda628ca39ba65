#include "data/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "data/resample_kernels.h"
#include "kernels/error.h"

namespace engine::data {

namespace {

double bilinear_filter(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// PIL's rounding of a normalized coefficient to fixed point (normalize_coeffs_8bpc).
int32_t to_fixed_point(double weight) {
  const double scaled = weight * (1 << kResamplePrecisionBits);
  return static_cast<int32_t>(weight < 0 ? scaled - 0.5 : scaled + 0.5);
}

// Makes every output pixel read exactly `taps` inputs, zero weights padding the short ones at
// the image border, so the horizontal pass runs one fixed-length loop the compiler unrolls.
// The sums are unchanged. False when the input is narrower than `taps`.
bool pad_to_fixed_taps(ResampleAxis& axis, int in_size) {
  if (in_size < axis.taps) return false;
  for (size_t i = 0; i < axis.first.size(); ++i) {
    // first + count <= in_size, so no non-zero weight is shifted out.
    const int shift = std::max(0, axis.first[i] + axis.taps - in_size);
    int32_t* k = &axis.weights[i * axis.taps];
    std::memmove(k + shift, k, static_cast<size_t>(axis.taps - shift) * sizeof(int32_t));
    std::fill(k, k + shift, 0);
    axis.first[i] -= shift;
    axis.count[i] = axis.taps;
  }
  return true;
}

[[noreturn]] void outside_view(const char* what, int begin, int end, int size) {
  fail(std::string("Resampler: ") + what + " [" + std::to_string(begin) + ", " +
       std::to_string(end) + ") read outside the decoded pixels [0, " + std::to_string(size) + ")");
}

// Moves an axis from image to view coordinates and checks that every tap is inside the view.
void shift_into_view(ResampleAxis& axis, int view_offset, int view_size) {
  for (size_t i = 0; i < axis.first.size(); ++i) {
    axis.first[i] -= view_offset;
    if (axis.first[i] < 0 || axis.first[i] + axis.count[i] > view_size) {
      outside_view("columns", axis.first[i], axis.first[i] + axis.count[i], view_size);
    }
  }
}

}  // namespace

// Mirrors precompute_coeffs: the same double arithmetic, the same truncating casts.
void compute_resample_axis(int in_size, double in_begin, double in_end, int out_size, int out_begin,
                           int out_end, ResampleAxis& axis) {
  ENGINE_REQUIRE(out_size > 0 && 0 <= out_begin && out_begin <= out_end && out_end <= out_size,
                 "compute_resample_axis: output range out of bounds");
  const double scale = (in_end - in_begin) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;
  axis.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  const int outputs = out_end - out_begin;
  axis.first.resize(outputs);
  axis.count.resize(outputs);
  axis.weights.assign(static_cast<size_t>(outputs) * axis.taps, 0);
  thread_local std::vector<double> weights;
  weights.resize(axis.taps);
  for (int i = 0; i < outputs; ++i) {
    const double center = in_begin + (out_begin + i + 0.5) * scale;
    const double inverse_scale = 1.0 / filter_scale;
    int first = static_cast<int>(center - support + 0.5);
    first = std::max(first, 0);
    int last = static_cast<int>(center + support + 0.5);
    last = std::min(last, in_size);
    const int count = std::max(last - first, 0);
    double total = 0.0;
    for (int x = 0; x < count; ++x) {
      weights[x] = bilinear_filter((x + first - center + 0.5) * inverse_scale);
      total += weights[x];
    }
    int32_t* fixed = &axis.weights[static_cast<size_t>(i) * axis.taps];
    for (int x = 0; x < count; ++x) {
      fixed[x] = to_fixed_point(total != 0.0 ? weights[x] / total : weights[x]);
    }
    axis.first[i] = first;
    axis.count[i] = count;
  }
}

void Resampler::horizontal_pass(const RgbView& source, int row_begin, int row_end) {
  const size_t out_stride = horizontal_.first.size() * 3;
  intermediate_.resize(static_cast<size_t>(row_end - row_begin) * out_stride);
  const bool fixed_taps = pad_to_fixed_taps(horizontal_, source.width);
  resample_kernels::horizontal(horizontal_, fixed_taps, source, row_begin, row_end,
                               intermediate_.data(), out_stride);
}

void Resampler::vertical_pass(const RgbView& rows, int out_width, uint8_t* out, size_t out_stride) {
  resample_kernels::vertical(vertical_, rows, out_width, out, out_stride, accumulator_);
}

InputRange resample_input_range(int in_size, double in_begin, double in_end, int out_size,
                                int out_begin, int out_end) {
  if (out_begin >= out_end) return {0, 0};
  ResampleAxis axis;
  compute_resample_axis(in_size, in_begin, in_end, out_size, out_begin, out_begin + 1, axis);
  const int begin = axis.first[0];
  compute_resample_axis(in_size, in_begin, in_end, out_size, out_end - 1, out_end, axis);
  return {begin, axis.first[0] + axis.count[0]};
}

void Resampler::resize(const RgbView& source, const ResizeRequest& request, uint8_t* out) {
  ENGINE_REQUIRE(request.resized_width > 0 && request.resized_height > 0 &&
                     request.window_width >= 0 && request.window_height >= 0,
                 "Resampler::resize: empty output size");
  const size_t out_stride = static_cast<size_t>(request.window_width) * 3;
  // The window clipped to the resized image; the rest of the window is CenterCrop's padding.
  const int x_begin = std::max(request.window_left, 0);
  const int x_end = std::min(request.window_left + request.window_width, request.resized_width);
  const int y_begin = std::max(request.window_top, 0);
  const int y_end = std::min(request.window_top + request.window_height, request.resized_height);
  if (x_begin >= x_end || y_begin >= y_end || x_begin != request.window_left ||
      y_begin != request.window_top || x_end - x_begin != request.window_width ||
      y_end - y_begin != request.window_height) {
    std::memset(out, 0, out_stride * request.window_height);
    if (x_begin >= x_end || y_begin >= y_end) return;
  }
  uint8_t* inner = out + static_cast<size_t>(y_begin - request.window_top) * out_stride +
                   static_cast<size_t>(x_begin - request.window_left) * 3;
  // Coefficients come from the image the box refers to; pixels from the view inside it.
  const int image_width = request.image_width > 0 ? request.image_width : source.width;
  const int image_height = request.image_height > 0 ? request.image_height : source.height;

  compute_resample_axis(image_height, request.box_top, request.box_bottom, request.resized_height,
                        y_begin, y_end, vertical_);
  const int row_begin = vertical_.first.front() - request.view_top;
  const int row_end = vertical_.first.back() + vertical_.count.back() - request.view_top;
  if (row_begin < 0 || row_end > source.height) {
    outside_view("rows", row_begin, row_end, source.height);
  }

  // PIL skips a pass whose axis keeps its size and box; the result is the same as the identity
  // weights would give, only cheaper.
  const bool need_horizontal = request.resized_width != image_width || request.box_left != 0 ||
                               request.box_right != image_width;
  const bool need_vertical = request.resized_height != image_height || request.box_top != 0 ||
                             request.box_bottom != image_height;
  RgbView rows;
  int rows_offset = 0;  // view row of rows.row(0)
  if (need_horizontal) {
    compute_resample_axis(image_width, request.box_left, request.box_right, request.resized_width,
                          x_begin, x_end, horizontal_);
    shift_into_view(horizontal_, request.view_left, source.width);
    horizontal_pass(source, row_begin, row_end);
    rows = {intermediate_.data(), x_end - x_begin, row_end - row_begin,
            static_cast<size_t>(x_end - x_begin) * 3};
    rows_offset = row_begin;
  } else {
    const int left = x_begin - request.view_left;
    if (left < 0 || left + (x_end - x_begin) > source.width) {
      outside_view("columns", left, left + x_end - x_begin, source.width);
    }
    rows = source.crop(left, 0, x_end - x_begin, source.height);
  }
  if (need_vertical) {
    for (int& first : vertical_.first)
      first -= request.view_top + rows_offset;
    vertical_pass(rows, x_end - x_begin, inner, out_stride);
  } else {
    for (int y = y_begin; y < y_end; ++y) {
      std::memcpy(inner + static_cast<size_t>(y - y_begin) * out_stride,
                  rows.row(y - request.view_top - rows_offset),
                  static_cast<size_t>(x_end - x_begin) * 3);
    }
  }
}

}  // namespace engine::data
