// A convolution's output pixels grouped by which filter taps read inside the input. Near the
// border some taps fall on the zero padding; a GEMM over im2col's full rows multiplies those
// zeros too. At the small feature maps of a ResNet trained on 32-64 px images that is most of
// the work: a 3x3 tap set on a 2x2 map has 4 of 9 taps inside for every pixel, on a 1x1 map
// 1 of 9. Grouped by class, each group is a dense GEMM over its own taps only.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/conv_shape.h"
#include "kernels/cpu/depth_run.h"

namespace engine::cpu {

// Filter taps [begin, end) along one dimension; empty when end <= begin.
struct TapRange {
  int64_t begin = 0, end = 0;
  int64_t count() const { return end > begin ? end - begin : 0; }
  bool operator==(const TapRange&) const = default;
};

// The output pixels (oh, ow) in [oh_begin, oh_end) x [ow_begin, ow_end) of every image, whose
// taps inside the input are exactly rows x cols.
struct TapClass {
  int64_t oh_begin = 0, oh_end = 0, ow_begin = 0, ow_end = 0;
  TapRange rows, cols;
  int64_t pixels_per_image() const { return (oh_end - oh_begin) * (ow_end - ow_begin); }
  // Depth of the class's column rows: its taps times the input channels.
  int64_t depth(const Conv2dShape& shape) const {
    return rows.count() * cols.count() * shape.in_channels;
  }
  // The output row (gemm row, NHWC pixel index) of the class's index-th pixel, counted
  // image by image and row by row.
  int64_t output_row(const Conv2dShape& shape, int64_t index) const;
};

// The taps along one dimension that read inside an input of `in_extent` for output
// coordinate `out`.
TapRange taps_inside(int64_t out, int64_t stride, int64_t pad, int64_t dilation, int64_t kernel,
                     int64_t in_extent);

// The other way round: the output coordinates [begin, end) for which filter tap `tap` reads
// inside an input of `in_extent`.
TapRange outputs_reading_inside(int64_t tap, int64_t stride, int64_t pad, int64_t dilation,
                                int64_t out_extent, int64_t in_extent);

// Every output pixel in exactly one class; classes of empty tap sets included (their
// outputs are zero). Without padding there is one class.
std::vector<TapClass> tap_classes(const Conv2dShape& shape);

// The runs of a class's column rows (im2col_inside's order) and the filter rows (KRSC order,
// taps * C) they multiply: one per filter row r of its taps, merged where both are contiguous
// (all of a row's taps inside). None for a class with no tap inside.
std::vector<DepthRun> tap_class_runs(const Conv2dShape& shape, const TapClass& taps);

// A convolution's tap classes and the runs of each class's column rows, in the classes' order.
struct TapClassPlan {
  std::vector<TapClass> classes;
  std::vector<std::vector<DepthRun>> runs;
  // Whether some output pixel's tap (r, s) (at r * kernel_w + s) reads inside the input: the
  // filter rows any product multiplies.
  std::vector<bool> taps_read;

  explicit TapClassPlan(const Conv2dShape& shape);
};

// Whether the products that skip the padding's zeros (the portable passes' tap classes,
// kernels/cpu/conv_sgemm.h, and the bf16 filter gradient's runs of pixels) are forced on
// (true) or off (false) for every shape, or left to each one's estimate (nullopt). Set by
// ENGINE_CPU_TAP_CLASSES=on|off|auto at start: for tests of both ways and A/B timings in one
// build.
std::optional<bool> forced_tap_classes();
// Sets it. Not thread-safe: call between ops.
void force_tap_classes(std::optional<bool> on);

}  // namespace engine::cpu
