#include "kernels/cpu/conv_sgemm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/column_chunks.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/scratch.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/transpose.h"

namespace engine::cpu {
namespace {

// A class's pixels per chunk: its column rows within the column budget. Fixed by the shape
// alone, so the GEMM calls, and with them the sums' order, do not follow the threads.
int64_t class_chunk_rows(const Conv2dShape& shape, const TapClass& taps) {
  const int64_t rows = shape.batch * taps.pixels_per_image();
  return std::clamp<int64_t>(kColumnBudget / std::max<int64_t>(taps.depth(shape), 1), 1, rows);
}

// im2col_inside over blocks of rows shared by the threads.
void lower(const Conv2dShape& shape, const TapClass& taps, const float* x, const int64_t* rows,
           int64_t count, float* col) {
  constexpr int64_t kBlock = 64;
  const int64_t depth = taps.depth(shape), blocks = (count + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (blocks > 1 && count * depth >= kParallelThreshold)
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t first = block * kBlock;
    im2col_inside(shape, taps, x, rows + first, std::min(kBlock, count - first),
                  col + first * depth);
  }
}

// Calls fn(class_index, rows, count, col) for each chunk of each class that has a tap inside
// the input, in order: rows the chunk's output rows (NHWC pixel indices, increasing), col
// their column rows, taps.depth(shape) values each.
template <typename Fn>
void for_each_class_chunk(const Conv2dShape& shape, const TapClassPlan& plan, const float* x,
                          Fn&& fn) {
  int64_t max_rows = 0, max_values = 0;
  for (const TapClass& taps : plan.classes) {
    const int64_t rows = class_chunk_rows(shape, taps);
    max_rows = std::max(max_rows, rows);
    max_values = std::max(max_values, rows * taps.depth(shape));
  }
  std::vector<int64_t> rows(static_cast<size_t>(max_rows));
  const ScratchFloats col(max_values);
  for (size_t c = 0; c < plan.classes.size(); ++c) {
    const TapClass& taps = plan.classes[c];
    if (plan.runs[c].empty()) continue;
    const int64_t total = shape.batch * taps.pixels_per_image();
    const int64_t chunk = class_chunk_rows(shape, taps);
    for (int64_t first = 0; first < total; first += chunk) {
      const int64_t count = std::min(chunk, total - first);
      for (int64_t i = 0; i < count; ++i)
        rows[i] = taps.output_row(shape, first + i);
      lower(shape, taps, x, rows.data(), count, col.data());
      fn(c, rows.data(), count, col.data());
    }
  }
}

bool contiguous(const int64_t* rows, int64_t count) {
  return rows[count - 1] - rows[0] == count - 1;
}

// Row i of `from` ([count x width]) to row rows[i] of `to` (or the other way round).
void scatter_rows(const float* from, const int64_t* rows, int64_t count, int64_t width, float* to) {
#pragma omp parallel for schedule(static) if (count * width >= kParallelThreshold)
  for (int64_t i = 0; i < count; ++i)
    std::copy_n(from + i * width, width, to + rows[i] * width);
}

void gather_rows(const float* from, const int64_t* rows, int64_t count, int64_t width, float* to) {
#pragma omp parallel for schedule(static) if (count * width >= kParallelThreshold)
  for (int64_t i = 0; i < count; ++i)
    std::copy_n(from + rows[i] * width, width, to + i * width);
}

// Calls fn(first_tap, end_tap, read) for the maximal ranges of taps all read or all unread.
template <typename Fn>
void for_each_tap_range(const std::vector<bool>& taps_read, Fn&& fn) {
  const int64_t taps = static_cast<int64_t>(taps_read.size());
  for (int64_t first = 0, end = 0; first < taps; first = end) {
    for (end = first + 1; end < taps && taps_read[end] == taps_read[first]; ++end) {
    }
    fn(first, end, static_cast<bool>(taps_read[first]));
  }
}

bool use_tap_classes(const Conv2dShape& shape, const TapClassPlan& plan) {
  return forced_tap_classes().value_or(tap_classes_pay(shape, plan));
}

// tap_classes_pay's cost of a GEMM call beyond its rows times its depth, as rows and as depth
// (OpenBLAS packs the filters again per call; a call per run reads and writes its output tile
// again), and the share of the full rows' estimate the classes must come under. Fitted to the
// passes of 26 ResNet-18 shapes timed both ways on an AMD EPYC Zen 3 (AVX2, OpenBLAS; maps
// 1x1 to 40x40, batch 1 to 64; bench/results/conv-cpu-tap-classes-sgemm-amd-epyc-zen3-avx2.txt):
// the choice costs 0.5% over the faster way of each, where always one way costs 6%.
constexpr double kCallRows = 8, kCallDepth = 16, kClassesShare = 0.92;

// y = im2col(x) * w, one GEMM per column chunk of whole images over the full rows.
void forward_full_rows(const Conv2dShape& shape, const float* x, const FilterOperand& w, float* y) {
  const int64_t k = shape.gemm_k(), channels_out = shape.out_channels;
  for_each_column_chunk(shape, x, [&](int64_t first, int64_t end, const float* col) {
    sgemm(false, w.transposed, end - first, channels_out, k, 1.f, col, k, w.data, w.ld, 0.f,
          y + first * channels_out, channels_out);
  });
}

// dW (+)= dy^T * im2col(x) over the full rows: dW^T per column chunk, then transposed.
void filter_gradient_full_rows(const Conv2dShape& shape, const float* x, const float* dy,
                               float beta, float* dw) {
  const int64_t k = shape.gemm_k(), channels_out = shape.out_channels;
  const ScratchFloats transposed(k * channels_out);
  for_each_column_chunk(shape, x, [&](int64_t first, int64_t end, const float* col) {
    sgemm(true, false, k, channels_out, end - first, 1.f, col, k, dy + first * channels_out,
          channels_out, first == 0 ? 0.f : 1.f, transposed.data(), channels_out);
  });
  transpose_into(transposed.data(), channels_out, channels_out, k, beta, dw, k);
}

}  // namespace

bool tap_classes_pay(const Conv2dShape& shape, const TapClassPlan& plan) {
  double classes = 0;
  for (size_t c = 0; c < plan.classes.size(); ++c) {
    const TapClass& taps = plan.classes[c];
    const int64_t rows = shape.batch * taps.pixels_per_image();
    const double chunks = std::ceil(static_cast<double>(rows) / class_chunk_rows(shape, taps));
    for (const DepthRun& run : plan.runs[c]) {
      classes += (static_cast<double>(rows) + chunks * kCallRows) *
                 (static_cast<double>(run.length) + kCallDepth);
    }
  }
  const double chunks = std::ceil(static_cast<double>(shape.batch) / images_per_chunk(shape));
  const double full = (static_cast<double>(shape.gemm_m()) + chunks * kCallRows) *
                      (static_cast<double>(shape.gemm_k()) + kCallDepth);
  return classes < kClassesShare * full;
}

void forward_sgemm(const Conv2dShape& shape, const float* x, const FilterOperand& w, float* y) {
  const TapClassPlan plan(shape);
  if (!use_tap_classes(shape, plan)) {
    forward_full_rows(shape, x, w, y);
    return;
  }
  const int64_t channels_out = shape.out_channels;
  int64_t max_rows = 0;
  for (size_t c = 0; c < plan.classes.size(); ++c) {
    const TapClass& taps = plan.classes[c];
    if (!plan.runs[c].empty()) {
      max_rows = std::max(max_rows, class_chunk_rows(shape, taps));
      continue;
    }
    // No tap inside the input (padding wider than the filter's reach): zero outputs.
    for (int64_t i = 0; i < shape.batch * taps.pixels_per_image(); ++i)
      std::fill_n(y + taps.output_row(shape, i) * channels_out, channels_out, 0.f);
  }
  const ScratchFloats staged(max_rows * channels_out);
  for_each_class_chunk(shape, plan, x,
                       [&](size_t c, const int64_t* rows, int64_t count, const float* col) {
                         const int64_t depth = plan.classes[c].depth(shape);
                         // A chunk of consecutive pixels (a class spanning whole rows) is stored in
                         // place.
                         const bool in_place = contiguous(rows, count);
                         float* out = in_place ? y + rows[0] * channels_out : staged.data();
                         const std::vector<DepthRun>& runs = plan.runs[c];
                         for (size_t r = 0; r < runs.size(); ++r) {
                           sgemm(false, w.transposed, count, channels_out, runs[r].length, 1.f,
                                 col + runs[r].a_begin, depth, w.row(runs[r].b_begin), w.ld,
                                 r == 0 ? 0.f : 1.f, out, channels_out);
                         }
                         if (!in_place) scatter_rows(staged.data(), rows, count, channels_out, y);
                       });
}

void filter_gradient_sgemm(const Conv2dShape& shape, const float* x, const float* dy, float beta,
                           float* dw) {
  const TapClassPlan plan(shape);
  if (!use_tap_classes(shape, plan)) {
    filter_gradient_full_rows(shape, x, dy, beta, dw);
    return;
  }
  const int64_t channels = shape.in_channels, channels_out = shape.out_channels;
  const int64_t k = shape.gemm_k();
  const ScratchFloats transposed(k * channels_out);
  for_each_tap_range(plan.taps_read, [&](int64_t first_tap, int64_t end_tap, bool read) {
    if (!read) return;
    float* rows = transposed.data() + first_tap * channels * channels_out;
    parallel_for_ranges(
        (end_tap - first_tap) * channels * channels_out,
        [&](int64_t begin, int64_t end) { std::fill(rows + begin, rows + end, 0.f); });
  });
  int64_t max_rows = 0;
  for (const TapClass& taps : plan.classes)
    max_rows = std::max(max_rows, class_chunk_rows(shape, taps));
  const ScratchFloats gathered(max_rows * channels_out);
  for_each_class_chunk(
      shape, plan, x, [&](size_t c, const int64_t* rows, int64_t count, const float* col) {
        const int64_t depth = plan.classes[c].depth(shape);
        const float* grad = dy + rows[0] * channels_out;
        if (!contiguous(rows, count)) {
          gather_rows(dy, rows, count, channels_out, gathered.data());
          grad = gathered.data();
        }
        for (const DepthRun& run : plan.runs[c]) {
          sgemm(true, false, run.length, channels_out, count, 1.f, col + run.a_begin, depth, grad,
                channels_out, 1.f, transposed.data() + run.b_begin * channels_out, channels_out);
        }
      });
  for_each_tap_range(plan.taps_read, [&](int64_t first_tap, int64_t end_tap, bool read) {
    const int64_t first = first_tap * channels, width = (end_tap - first_tap) * channels;
    if (read) {
      transpose_into(transposed.data() + first * channels_out, channels_out, channels_out, width,
                     beta, dw + first, k);
    } else if (beta == 0.f) {
      zero_columns(dw, channels_out, k, first, width);
    }
  });
}

}  // namespace engine::cpu
