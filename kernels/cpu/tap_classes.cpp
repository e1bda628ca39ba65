#include "kernels/cpu/tap_classes.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace engine::cpu {
namespace {

// Maximal runs of consecutive output coordinates that read the same taps.
struct Band {
  int64_t begin, end;
  TapRange taps;
};

std::vector<Band> bands(int64_t out_extent, int64_t stride, int64_t pad, int64_t dilation,
                        int64_t kernel, int64_t in_extent) {
  std::vector<Band> result;
  for (int64_t out = 0; out < out_extent; ++out) {
    const TapRange taps = taps_inside(out, stride, pad, dilation, kernel, in_extent);
    if (!result.empty() && result.back().taps == taps) {
      result.back().end = out + 1;
    } else {
      result.push_back({out, out + 1, taps});
    }
  }
  return result;
}

// ENGINE_CPU_TAP_CLASSES: on or off forces the way for every shape; auto or unset, the
// estimates decide.
std::optional<bool> tap_classes_from_environment() {
  const char* text = std::getenv("ENGINE_CPU_TAP_CLASSES");
  if (text == nullptr || std::strcmp(text, "auto") == 0) return std::nullopt;
  if (std::strcmp(text, "on") == 0) return true;
  if (std::strcmp(text, "off") == 0) return false;
  std::fprintf(stderr, "ENGINE_CPU_TAP_CLASSES=%s is not on, off or auto: ignored\n", text);
  return std::nullopt;
}
std::optional<bool> tap_classes_forced = tap_classes_from_environment();

}  // namespace

std::optional<bool> forced_tap_classes() {
  return tap_classes_forced;
}

void force_tap_classes(std::optional<bool> on) {
  tap_classes_forced = on;
}

TapRange taps_inside(int64_t out, int64_t stride, int64_t pad, int64_t dilation, int64_t kernel,
                     int64_t in_extent) {
  // Tap t reads input coordinate first + t * dilation.
  const int64_t first = out * stride - pad;
  const int64_t begin = first >= 0 ? 0 : (-first + dilation - 1) / dilation;
  const int64_t end = first >= in_extent ? 0 : (in_extent - 1 - first) / dilation + 1;
  return {std::min(begin, kernel), std::min(end, kernel)};
}

TapRange outputs_reading_inside(int64_t tap, int64_t stride, int64_t pad, int64_t dilation,
                                int64_t out_extent, int64_t in_extent) {
  // Output coordinate out reads input coordinate out * stride - pad + tap * dilation.
  const int64_t offset = tap * dilation - pad;
  const int64_t begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last_input = in_extent - 1 - offset;  // out * stride <= last_input
  const int64_t end = last_input < 0 ? 0 : std::min(out_extent, last_input / stride + 1);
  return {std::min(begin, out_extent), end};
}

int64_t TapClass::output_row(const Conv2dShape& shape, int64_t index) const {
  const int64_t width = ow_end - ow_begin, per_image = pixels_per_image();
  const int64_t image = index / per_image, within = index % per_image;
  const int64_t oh = oh_begin + within / width, ow = ow_begin + within % width;
  return (image * shape.out_h() + oh) * shape.out_w() + ow;
}

std::vector<TapClass> tap_classes(const Conv2dShape& shape) {
  const std::vector<Band> row_bands = bands(shape.out_h(), shape.stride_h, shape.pad_h,
                                            shape.dilation_h, shape.kernel_h, shape.in_h);
  const std::vector<Band> col_bands = bands(shape.out_w(), shape.stride_w, shape.pad_w,
                                            shape.dilation_w, shape.kernel_w, shape.in_w);
  std::vector<TapClass> classes;
  for (const Band& row : row_bands) {
    for (const Band& col : col_bands)
      classes.push_back({row.begin, row.end, col.begin, col.end, row.taps, col.taps});
  }
  return classes;
}

std::vector<DepthRun> tap_class_runs(const Conv2dShape& shape, const TapClass& taps) {
  const int64_t channels = shape.in_channels, run = taps.cols.count() * channels;
  std::vector<DepthRun> runs;
  for (int64_t r = taps.rows.begin; run > 0 && r < taps.rows.end; ++r) {
    const int64_t a_begin = (r - taps.rows.begin) * run;
    const int64_t b_begin = (r * shape.kernel_w + taps.cols.begin) * channels;
    if (!runs.empty() && runs.back().b_begin + runs.back().length == b_begin) {
      runs.back().length += run;
    } else {
      runs.push_back({a_begin, b_begin, run});
    }
  }
  return runs;
}

TapClassPlan::TapClassPlan(const Conv2dShape& shape)
    : classes(tap_classes(shape)),
      taps_read(static_cast<size_t>(shape.kernel_h * shape.kernel_w), false) {
  for (const TapClass& taps : classes) {
    runs.push_back(tap_class_runs(shape, taps));
    for (int64_t r = taps.rows.begin; r < taps.rows.end; ++r) {
      for (int64_t s = taps.cols.begin; s < taps.cols.end; ++s)
        taps_read[r * shape.kernel_w + s] = true;
    }
  }
}

}  // namespace engine::cpu
