// The CPU filter gradient, dW = dY^T * im2col(x), and the bias gradient. On AVX-512 CPUs it
// picks one of four ways by shape, all computing dW^T [taps*C x K] first (the long side as
// the GEMM's M, the small dY chunk as what gets packed), then one transpose into dW:
// - direct: the input read in place, one product per tap, no column matrix (32 or more
//   input channels; strided only on output rows of 4 or more pixels);
// - grouped: groups of images per thread over L2-sized column chunks (the stem);
// - per tap over column chunks, where padding is 20% or more of the work;
// - one product per column chunk, padding included.
// Every way sums in an order set by the shape alone, never by the thread count.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/column_chunks.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_input_transform.h"
#include "kernels/cpu/conv_sgemm.h"
#include "kernels/cpu/fp32_buffer.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/scratch.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/sgemm_avx512.h"
#include "kernels/cpu/tap_classes.h"
#include "kernels/cpu/transpose.h"

namespace engine::cpu {

namespace {

// dbias[k] (+)= sum over rows of dy[m, k], in double for long batches.
void bias_gradient(int64_t rows, int64_t channels, const float* dy, float* dbias, bool accumulate) {
  std::vector<double> sums(static_cast<size_t>(channels), 0.0);
  for (int64_t m = 0; m < rows; ++m) {
    const float* row = dy + m * channels;
    for (int64_t k = 0; k < channels; ++k)
      sums[k] += row[k];
  }
  for (int64_t k = 0; k < channels; ++k) {
    dbias[k] = static_cast<float>(sums[k] + (accumulate ? dbias[k] : 0.0));
  }
}

// Groups of images per thread (sum_over_image_groups), for the grouped and the direct filter
// gradient: worth it while a 240-row column chunk stays within about half of L2 (taps * C <=
// 640: ResNet's stem and 64-channel 3x3 layers), and while every thread gets a group of
// images. Beyond that chunks shared by the threads win.
bool per_image_filter_gradient_fits(const Conv2dShape& shape) {
  return shape.gemm_k() <= 640 && shape.batch >= max_threads();
}

// Images per group of the grouped filter gradient: at most 16 groups, whatever the thread
// count, so that the summation order, and so the result, depends on the batch alone.
int64_t images_per_group(int64_t batch) {
  return (batch + 15) / 16;
}

// transposed = the sum over groups of images of the partial dW^T [taps*C x K] that
// fn(first_row, end_row, partial) writes for each group's output rows, each group taken by
// one thread; the partials are then summed in group order. One partial per image (19 MB for
// a batch of 128 on layer1) cost more to fill and sum than the GEMMs.
template <typename Fn>
void sum_over_image_groups(const Conv2dShape& shape, float* transposed, Fn&& fn) {
  const int64_t rows_per_image = shape.out_h() * shape.out_w();
  const int64_t group_images = images_per_group(shape.batch);
  const int64_t groups = (shape.batch + group_images - 1) / group_images;
  const int64_t partial_size = shape.gemm_k() * shape.out_channels;
  const ScratchFloats partials(groups * partial_size);
#pragma omp parallel for schedule(static)
  for (int64_t group = 0; group < groups; ++group) {
    const int64_t end_image = std::min(shape.batch, (group + 1) * group_images);
    fn(group * group_images * rows_per_image, end_image * rows_per_image,
       partials.data() + group * partial_size);
  }
  std::copy(partials.data(), partials.data() + partial_size, transposed);
  for (int64_t group = 1; group < groups; ++group) {
    const float* partial = partials.data() + group * partial_size;
    parallel_for(partial_size, [&](int64_t i) { transposed[i] += partial[i]; });
  }
}

// dW^T [taps*C x K] with the AVX-512 GEMM, into `transposed`, by groups of images: each
// group's thread lowers column chunks of ~240 rows into its L2 and multiplies them at once.
// The whole-image column matrices of the general path (7.4 MiB per image for the stem) went
// through L3.
void filter_gradient_grouped(const Conv2dShape& shape, const float* x, const float* dy,
                             float* transposed) {
  const int64_t k = shape.gemm_k(), channels_out = shape.out_channels;
  const int64_t rows_per_image = shape.out_h() * shape.out_w();
  const int64_t chunk_rows = l2_chunk_rows(k);
  sum_over_image_groups(
      shape, transposed, [&](int64_t group_first, int64_t group_end, float* partial) {
        const ScratchFloats col(std::min(chunk_rows, rows_per_image) * k);
        for (int64_t first = group_first; first < group_end;) {
          // Chunks end at image ends (im2col takes any range; equal chunks across images
          // measured no faster).
          const int64_t image_end = (first / rows_per_image + 1) * rows_per_image;
          const int64_t end = std::min(image_end, first + chunk_rows);
          im2col(shape, x, first, end, col.data());
          const PackedB grad_chunk(channels_out, end - first, dy + first * channels_out,
                                   channels_out, 1);
          sgemm_avx512_packed(k, col.data(), 1, k, grad_chunk, first == group_first ? 0.f : 1.f,
                              partial, channels_out);
          first = end;
        }
      });
}

// Calls fn(pixel, row, count) for each piece of an output row in [first, end) (any range,
// across images) whose filter tap (r, s) reads inside the input: `count` output pixels from
// output row index `row`, the first reading input pixel `pixel` (NHWC index over the batch).
template <typename Fn>
void for_each_tap_segment(const Conv2dShape& shape, int64_t r, int64_t s, int64_t first,
                          int64_t end, Fn&& fn) {
  const int64_t out_h = shape.out_h(), out_w = shape.out_w();
  const TapRange rows =
      outputs_reading_inside(r, shape.stride_h, shape.pad_h, shape.dilation_h, out_h, shape.in_h);
  const TapRange cols =
      outputs_reading_inside(s, shape.stride_w, shape.pad_w, shape.dilation_w, out_w, shape.in_w);
  if (rows.count() == 0 || cols.count() == 0) return;
  const int64_t per_image = out_h * out_w;
  for (int64_t image = first / per_image; image * per_image < end; ++image) {
    for (int64_t oh = rows.begin; oh < rows.end; ++oh) {
      const int64_t row_start = (image * out_h + oh) * out_w;
      const int64_t q0 = std::max(cols.begin, first - row_start);
      const int64_t q1 = std::min(cols.end, end - row_start);
      if (q0 >= q1) continue;
      const int64_t h = oh * shape.stride_h - shape.pad_h + r * shape.dilation_h;
      const int64_t w = q0 * shape.stride_w - shape.pad_w + s * shape.dilation_w;
      fn((image * shape.in_h + h) * shape.in_w + w, row_start + q0, q1 - q0);
    }
  }
}

// Appends a run, merged into the last one where it continues it in both A and B.
void append_run(std::vector<DepthRun>& runs, int64_t a_begin, int64_t b_begin, int64_t length) {
  DepthRun* last = runs.empty() ? nullptr : &runs.back();
  if (last != nullptr && last->a_begin + last->length == a_begin &&
      last->b_begin + last->length == b_begin) {
    last->length += length;
  } else {
    runs.push_back({a_begin, b_begin, length});
  }
}

// The rows in [first, end) (output pixels of whole images) whose filter tap (r, s) reads
// inside the input, as runs of consecutive rows counted from `first`: the depth runs of that
// tap's share of the filter gradient, A being the column chunk.
std::vector<DepthRun> tap_pixel_runs(const Conv2dShape& shape, int64_t r, int64_t s, int64_t first,
                                     int64_t end) {
  std::vector<DepthRun> runs;
  for_each_tap_segment(shape, r, s, first, end, [&](int64_t, int64_t row, int64_t count) {
    append_run(runs, row - first, row - first, count);
  });
  return runs;
}

// The share of a convolution's (tap, output pixel) products that read the zero padding.
double padding_share(const Conv2dShape& shape) {
  double rows = 0, cols = 0;
  for (int64_t r = 0; r < shape.kernel_h; ++r) {
    rows += static_cast<double>(outputs_reading_inside(r, shape.stride_h, shape.pad_h,
                                                       shape.dilation_h, shape.out_h(), shape.in_h)
                                    .count());
  }
  for (int64_t s = 0; s < shape.kernel_w; ++s) {
    cols += static_cast<double>(outputs_reading_inside(s, shape.stride_w, shape.pad_w,
                                                       shape.dilation_w, shape.out_w(), shape.in_w)
                                    .count());
  }
  const double all =
      static_cast<double>(shape.kernel_h * shape.kernel_w * shape.out_h() * shape.out_w());
  return 1.0 - rows * cols / all;
}

// The filter gradient is one product per tap where at least this share of it is padding.
// Per tap, each thread's rows of dW^T are a block of their own that streams the dY chunk
// again: at a 28x28 map (7% padding) that measured 0.89x of one product, at 14x14 (14%)
// 1.00x, at 7x7 (27%) 1.13x, at 2x2 (56%) 1.2-1.5x and at 1x1 (89%) 1.5x.
constexpr double kPerTapFilterGradientPadding = 0.2;

// Calls fn(begin, end) on each thread for its share of [0, channels), in whole 12-row tiles
// of the GEMM: the rows of dW^T that the thread computes for every tap. Each element's sum is
// the same whichever thread computes it.
template <typename Fn>
void for_each_channel_share(int64_t channels, Fn&& fn) {
  const int64_t threads = max_threads();
  const int64_t share = ((channels + threads - 1) / threads + 11) / 12 * 12;
#pragma omp parallel for schedule(static) if (threads > 1)
  for (int64_t thread = 0; thread < threads; ++thread) {
    const int64_t begin = std::min(channels, thread * share);
    const int64_t end = std::min(channels, begin + share);
    if (begin < end) fn(begin, end);
  }
}

// dW^T [taps*C x K] (+)= col^T * dY over one chunk of whole images' output rows, one product
// per tap over only the rows whose tap reads inside the input (tap_pixel_runs): the padding
// zeros of the column matrix are not multiplied. Each thread takes the same share of every
// tap's C rows; the products keep the full product's K passes, so the result has the same
// bits as one GEMM over the whole column matrix.
void filter_gradient_chunk(const Conv2dShape& shape, int64_t first, int64_t end, const float* col,
                           const float* dy, float beta, float* transposed) {
  const int64_t k = shape.gemm_k(), channels = shape.in_channels;
  const int64_t channels_out = shape.out_channels;
  const PackedB grad_chunk(channels_out, end - first, dy + first * channels_out, channels_out, 1);
  std::vector<std::vector<DepthRun>> runs;
  for (int64_t r = 0; r < shape.kernel_h; ++r) {
    for (int64_t s = 0; s < shape.kernel_w; ++s)
      runs.push_back(tap_pixel_runs(shape, r, s, first, end));
  }
  for_each_channel_share(channels, [&](int64_t begin, int64_t end_channel) {
    for (int64_t tap = 0; tap < static_cast<int64_t>(runs.size()); ++tap) {
      sgemm_avx512_packed_runs(
          end_channel - begin, col + tap * channels + begin, 1, k, grad_chunk, runs[tap], beta,
          transposed + (tap * channels + begin) * channels_out, channels_out, nullptr);
    }
  });
}

// Output rows [first, end) (any range, across images) split into equal chunks of at most
// kDirectChunkRows: each chunk is one K pass of the GEMM (kMaxDepth in sgemm_avx512.cpp),
// so C is loaded and stored once per chunk, and no chunk is a short remainder.
constexpr int64_t kDirectChunkRows = 384;

template <typename Fn>
void for_each_row_chunk(int64_t first, int64_t end, Fn&& fn) {
  const int64_t rows = end - first;
  const int64_t chunks = (rows + kDirectChunkRows - 1) / kDirectChunkRows;
  const int64_t size = (rows + chunks - 1) / std::max<int64_t>(chunks, 1);
  for (int64_t begin = first; begin < end; begin += size)
    fn(begin, std::min(end, begin + size));
}

// One tap's share of the direct filter gradient over a chunk of output rows: A's depth column
// d is the input pixel base + d * stride_w, so A is the input itself (C floats per pixel) and
// no column matrix is built.
struct TapRuns {
  int64_t base = 0;
  std::vector<DepthRun> runs;  // b_begin counts output rows from the chunk's first
};

// The output rows in [first, end) (any range, across images) whose tap (r, s) reads inside
// the input. A run of consecutive output pixels in one row reads input pixels stride_w apart;
// runs that continue each other in both A and B are merged (the centre taps' rows at
// stride 1). With in_w a multiple of stride_w every run's first pixel is the same modulo
// stride_w, so all of them are columns of one A.
TapRuns tap_input_runs(const Conv2dShape& shape, int64_t r, int64_t s, int64_t first, int64_t end) {
  TapRuns tap;
  bool any = false;
  for_each_tap_segment(shape, r, s, first, end, [&](int64_t pixel, int64_t row, int64_t count) {
    if (!any) tap.base = pixel;
    any = true;
    append_run(tap.runs, (pixel - tap.base) / shape.stride_w, row - first, count);
  });
  return tap;
}

// The direct filter gradient applies where every tap's runs are columns of one A
// (tap_input_runs) and the input has enough channels to fill the GEMM's 12-row tiles: the
// stem's 3 channels would leave 3 of a tile's 12 rows busy (it keeps the grouped path).
// Strided, it needs output rows of 4 pixels or more: its runs then end with every output row
// (a column matrix's runs merge across rows), and at 2x2 outputs it measured 0.9-1.0x.
bool direct_filter_gradient_applies(const Conv2dShape& shape) {
  return !shape.is_pointwise() && shape.in_w % shape.stride_w == 0 && shape.in_channels >= 32 &&
         (shape.stride_w == 1 || shape.out_w() >= 4);
}

// dW^T [taps*C x K] (+)= x^T * dY over one chunk of output rows, rows [c_begin, c_end) of
// each tap's C: one product per tap over the output rows whose tap reads inside the input.
// A is read from the input, which is not in L2: with 4 or more B panels (K >= 128) its tiles
// are packed per pass, which repays the copy there and not with fewer panels
// (docs/kernel-tuning.md).
void direct_filter_gradient_chunk(const Conv2dShape& shape, const float* x, const PackedB& grad,
                                  const std::vector<TapRuns>& taps, int64_t c_begin, int64_t c_end,
                                  float beta, float* transposed) {
  const int64_t channels = shape.in_channels, channels_out = shape.out_channels;
  const APacking a_packing = channels_out >= 128 ? APacking::kPacked : APacking::kAuto;
  for (int64_t tap = 0; tap < static_cast<int64_t>(taps.size()); ++tap) {
    sgemm_avx512_packed_runs(c_end - c_begin, x + taps[tap].base * channels + c_begin, 1,
                             shape.stride_w * channels, grad, taps[tap].runs, beta,
                             transposed + (tap * channels + c_begin) * channels_out, channels_out,
                             nullptr, a_packing);
  }
}

std::vector<TapRuns> chunk_tap_runs(const Conv2dShape& shape, int64_t first, int64_t end) {
  std::vector<TapRuns> taps;
  for (int64_t r = 0; r < shape.kernel_h; ++r) {
    for (int64_t s = 0; s < shape.kernel_w; ++s)
      taps.push_back(tap_input_runs(shape, r, s, first, end));
  }
  return taps;
}

// The filter gradient without im2col (direct_filter_gradient_applies), into `transposed`
// [taps*C x K]. Small filters (taps * C <= 640, as for the grouped path) take groups of
// images per thread, each summed into its own partial, the partials then summed in group
// order; larger ones share each chunk of dY between the threads, which split the channels.
// Either way the summation order depends on the shape alone, not on the thread count.
void filter_gradient_direct(const Conv2dShape& shape, const float* x, const float* dy,
                            float* transposed) {
  const int64_t channels = shape.in_channels, channels_out = shape.out_channels;
  const int64_t rows_per_image = shape.out_h() * shape.out_w();
  if (per_image_filter_gradient_fits(shape)) {
    sum_over_image_groups(
        shape, transposed, [&](int64_t group_first, int64_t group_end, float* partial) {
          for_each_row_chunk(group_first, group_end, [&](int64_t first, int64_t end) {
            const PackedB grad(channels_out, end - first, dy + first * channels_out, channels_out,
                               1);
            direct_filter_gradient_chunk(shape, x, grad, chunk_tap_runs(shape, first, end), 0,
                                         channels, first == group_first ? 0.f : 1.f, partial);
          });
        });
    return;
  }
  for_each_row_chunk(0, shape.batch * rows_per_image, [&](int64_t first, int64_t end) {
    const PackedB grad(channels_out, end - first, dy + first * channels_out, channels_out, 1);
    const std::vector<TapRuns> taps = chunk_tap_runs(shape, first, end);
    for_each_channel_share(channels, [&](int64_t begin, int64_t end_channel) {
      direct_filter_gradient_chunk(shape, x, grad, taps, begin, end_channel, first == 0 ? 0.f : 1.f,
                                   transposed);
    });
  });
}

// dW^T [taps*C x K] into `transposed` on an AVX-512 CPU, by the first way (see the top of
// this file) that applies.
void filter_gradient_avx512(const Conv2dShape& shape, const float* x, const float* dy,
                            float* transposed) {
  if (direct_filter_gradient_applies(shape)) {
    filter_gradient_direct(shape, x, dy, transposed);
  } else if (per_image_filter_gradient_fits(shape)) {
    filter_gradient_grouped(shape, x, dy, transposed);
  } else if (padding_share(shape) >= kPerTapFilterGradientPadding) {
    for_each_column_chunk(shape, x, [&](int64_t first, int64_t end, const float* col) {
      filter_gradient_chunk(shape, first, end, col, dy, first == 0 ? 0.f : 1.f, transposed);
    });
  } else {
    for_each_column_chunk(shape, x, [&](int64_t first, int64_t end, const float* col) {
      sgemm(true, false, shape.gemm_k(), shape.out_channels, end - first, 1.f, col, shape.gemm_k(),
            dy + first * shape.out_channels, shape.out_channels, first == 0 ? 0.f : 1.f, transposed,
            shape.out_channels);
    });
  }
}

// Output pixels per step of the bf16 filter gradient: the packed input of every tap for them
// (pixels x taps * C bf16, 1.2 MiB for 64 channels, 9 taps) and dY^T's slice stay in L2.
constexpr int64_t kBf16GradientPixels = 1024;

// dY [M x K] transposed into [K x padded_m] (padded_m = M rounded up to even, the pad zero):
// the bf16 GEMM's A, rows contiguous along the output pixels it sums over.
void transpose_grad_output(const Conv2dShape& shape, const bf16* dy, int64_t padded_m, bf16* out) {
  const int64_t m = shape.gemm_m(), channels_out = shape.out_channels;
  constexpr int64_t kBlock = 32;
  const int64_t pixel_blocks = (padded_m + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (m * channels_out >= kParallelThreshold)
  for (int64_t block = 0; block < pixel_blocks; ++block) {
    const int64_t p0 = block * kBlock, p1 = std::min(padded_m, p0 + kBlock);
    for (int64_t k = 0; k < channels_out; ++k) {
      for (int64_t p = p0; p < p1; ++p)
        out[k * padded_m + p] = p < m ? dy[p * channels_out + k] : bf16();
    }
  }
}

// Row p of tap (r, s)'s B for output pixels [first, first + count): the input pixel that tap
// reads for output pixel first + p, or null where it reads the padding (or p is past the last
// pixel, in the pad of an odd M).
void tap_rows(const Conv2dShape& shape, const bf16* x, int64_t r, int64_t s, int64_t first,
              int64_t count, std::vector<const bf16*>& rows) {
  const int64_t out_h = shape.out_h(), out_w = shape.out_w(), m = shape.gemm_m();
  rows.assign(static_cast<size_t>(count), nullptr);
  for (int64_t p = 0; p < count && first + p < m; ++p) {
    const int64_t pixel = first + p;
    const int64_t n = pixel / (out_h * out_w), oh = pixel / out_w % out_h, ow = pixel % out_w;
    const int64_t h = oh * shape.stride_h - shape.pad_h + r * shape.dilation_h;
    const int64_t w = ow * shape.stride_w - shape.pad_w + s * shape.dilation_w;
    if (h >= 0 && h < shape.in_h && w >= 0 && w < shape.in_w) {
      rows[p] = x + ((n * shape.in_h + h) * shape.in_w + w) * shape.in_channels;
    }
  }
}

// The pixels of a tap's B rows worth multiplying, as runs of the bf16 GEMM's depth: the pairs
// of rows (2q, 2q + 1) of which one reads inside the input (rows[p] not null); none where no
// pixel does (a 3x3 filter's outer taps on a 1x1 map). Where skipping the other pairs is not
// estimated to pay, the whole range as one run. A run is costed as its length rounded up to
// the kernel's depth step (AMX: 32 pixels a tdpbf16ps, a shorter run padded in a copy;
// AVX512_BF16: a pair) plus half a step for its setup, and the runs must come under 0.9 of
// the whole range's cost. Set by the shape alone, so the sums' order does not follow the
// threads.
std::vector<DepthRun> pixel_runs_inside(const std::vector<const bf16*>& rows, Bf16Products way) {
  const auto count = static_cast<int64_t>(rows.size());
  const std::vector<DepthRun> whole = {DepthRun{0, 0, count}};
  const std::optional<bool> forced = forced_tap_classes();
  if (forced == false) return whole;
  std::vector<DepthRun> runs;
  for (int64_t p = 0; p < count; p += 2) {
    if (rows[p] == nullptr && (p + 1 >= count || rows[p + 1] == nullptr)) continue;
    const int64_t length = std::min<int64_t>(2, count - p);
    if (!runs.empty() && runs.back().b_begin + runs.back().length == p) {
      runs.back().length += length;
    } else {
      runs.push_back({p, p, length});
    }
  }
  const double step = way == Bf16Products::kAmx ? 32 : 2;
  double cost = 0;
  for (const DepthRun& run : runs)
    cost += std::ceil(static_cast<double>(run.length) / step) * step + step / 2;
  constexpr double kRunsShare = 0.9;
  return forced == true || cost < kRunsShare * static_cast<double>(count) ? runs : whole;
}

// Columns [first, first + width) of dW.
struct ColumnRange {
  int64_t first = 0, width = 0;
};

// The dW columns of the groups with no runs (group g: columns [g * group_columns, +group_columns)),
// adjacent groups merged into one range.
std::vector<ColumnRange> empty_group_columns(const std::vector<std::vector<DepthRun>>& group_runs,
                                             int64_t group_columns) {
  std::vector<ColumnRange> ranges;
  for (size_t group = 0; group < group_runs.size(); ++group) {
    if (!group_runs[group].empty()) continue;
    const auto first = static_cast<int64_t>(group) * group_columns;
    if (!ranges.empty() && ranges.back().first + ranges.back().width == first) {
      ranges.back().width += group_columns;
    } else {
      ranges.push_back({first, group_columns});
    }
  }
  return ranges;
}

// dW [K x taps * C] (+)= dY^T * im2col(x) on the bf16 GEMM, with bf16 x and dY and an fp32
// dW: the GEMM's A is dY^T (K rows along the output pixels) and its B the column rows of the
// output pixels, packed into pair rows in groups of dW's columns. Where the input channels are
// a multiple of the panel width (32: every ResNet layer but the stem) a group is one tap's C
// columns, packed straight from x (no column matrix) and a panel never straddles two taps;
// otherwise (the stem's 3 channels) one group holds all taps * C columns, packed from a bf16
// im2col of the step. A tap's products skip the pixels whose tap reads the padding where that
// pays (pixel_runs_inside: on the 1x1 to 4x4 maps of 32-64 px images most of the work), and a
// tap no pixel reads is not multiplied at all. Steps of kBf16GradientPixels pixels are summed
// into dW in order, each (group, 32-column panel) by one thread, so the bits do not depend on
// the thread count. False (nothing written) without a bf16 kernel.
bool filter_gradient_bf16(const Conv2dShape& shape, const bf16* x, const bf16* dy, float* dw,
                          bool accumulate) {
  const Bf16Products way = bf16_products();
  if (way == Bf16Products::kWidened) return false;
  const int64_t m = shape.gemm_m(), padded_m = (m + 1) / 2 * 2;
  const int64_t channels = shape.in_channels, channels_out = shape.out_channels;
  const int64_t taps = shape.kernel_h * shape.kernel_w, k = shape.gemm_k();
  const bool per_tap = channels % kBf16PanelColumns == 0;
  const int64_t groups = per_tap ? taps : 1, group_columns = per_tap ? channels : k;
  const ScratchFloats transposed(channels_out * padded_m / 2);
  bf16* dy_t = reinterpret_cast<bf16*>(transposed.data());
  transpose_grad_output(shape, dy, padded_m, dy_t);
  const int64_t step_pixels = std::min(kBf16GradientPixels, padded_m);
  const int64_t group_values = pair_panels_values(group_columns, step_pixels);
  const ScratchFloats packed((groups * group_values + 1) / 2);
  uint16_t* packed_groups = reinterpret_cast<uint16_t*>(packed.data());
  const ScratchFloats col_storage(per_tap ? 0 : (step_pixels * k + 1) / 2);
  bf16* col = reinterpret_cast<bf16*>(col_storage.data());
  const int64_t panels = (group_columns + kBf16PanelColumns - 1) / kBf16PanelColumns;
  // Packing jobs: one per tap, or one per panel of the single group.
  const int64_t pack_jobs = per_tap ? taps : panels;
  // Per group, the runs of the step's pixels its products take (per tap: those reading inside).
  std::vector<std::vector<DepthRun>> group_runs(static_cast<size_t>(groups));
  for (int64_t first = 0; first < padded_m; first += step_pixels) {
    const int64_t count = std::min(step_pixels, padded_m - first);
    const int64_t inside = std::min(count, m - first);  // pixels before the pad of an odd M
    if (!per_tap) im2col(shape, x, first, first + inside, col);
    const Bf16GemmOutput out{.ldc = k, .beta = first == 0 && !accumulate ? 0.f : 1.f};
    if (!per_tap) group_runs[0] = {DepthRun{0, 0, count}};
#pragma omp parallel
    {
      std::vector<const bf16*> rows;
#pragma omp for schedule(static)
      for (int64_t job = 0; job < pack_jobs; ++job) {
        if (per_tap) {
          tap_rows(shape, x, job / shape.kernel_w, job % shape.kernel_w, first, count, rows);
          group_runs[job] = pixel_runs_inside(rows, way);
          if (!group_runs[job].empty())
            pack_pair_panels(channels, rows, 0, panels, packed_groups + job * group_values);
        } else {
          rows.assign(static_cast<size_t>(count), nullptr);
          for (int64_t p = 0; p < inside; ++p)
            rows[p] = col + p * k;
          pack_pair_panels(k, rows, job, job + 1, packed_groups);
        }
      }
      // A group with no products: its dW columns are zero, or kept. Adjacent ones zeroed as
      // one range, row by row (on a 1x1 map 8 of 9 taps, in two runs of 4 a row): per 32-column
      // panel each row's write was 128 bytes, 2-4% of the demo's step.
      if (out.beta == 0.f) {
        const std::vector<ColumnRange> empty = empty_group_columns(group_runs, group_columns);
#pragma omp for schedule(static)
        for (int64_t row = 0; row < channels_out; ++row) {
          for (const ColumnRange& range : empty)
            zero_columns(dw + row * k, 1, k, range.first, range.width);
        }
      }
#pragma omp for schedule(static)
      for (int64_t job = 0; job < groups * panels; ++job) {
        const int64_t group = job / panels, panel = job % panels;
        const int64_t column = group * group_columns + panel * kBf16PanelColumns;
        if (group_runs[group].empty()) continue;
        const PairPanels b =
            PairPanels{packed_groups + group * group_values, group_columns, count}.panels(panel, 1);
        Bf16GemmOutput job_out = out;
        job_out.c = dw + column;
        bf16_gemm_packed_runs(way, channels_out, dy_t + first, padded_m, b, group_runs[group],
                              job_out);
      }
    }
  }
  return true;
}

}  // namespace

void conv2d_backward_filter(const Conv2dBackwardFilterArgs& args) {
  if (run_on_transformed_input(
          args, [](const Conv2dBackwardFilterArgs& plain) { conv2d_backward_filter(plain); }))
    return;
  const Conv2dShape& shape = args.shape;
  const DType dtype = args.dtype, dw_dtype = args.dw_dtype;
  const void *x = args.x, *dy = args.dy;
  void* dw = args.dw;
  float* dbias = args.dbias;
  const bool accumulate = args.accumulate;
  const int64_t m = shape.gemm_m(), k = shape.gemm_k(), channels_out = shape.out_channels;
  if (dtype == DType::bf16 && dw_dtype == DType::f32 &&
      filter_gradient_bf16(shape, static_cast<const bf16*>(x), static_cast<const bf16*>(dy),
                           static_cast<float*>(dw), accumulate)) {
    if (dbias != nullptr) {
      bias_gradient(m, channels_out, Fp32Input(dtype, dy, m * channels_out).data(), dbias,
                    accumulate);
    }
    return;
  }
  const Fp32Input input(dtype, x, shape.batch * shape.in_h * shape.in_w * shape.in_channels);
  const Fp32Input grad_out(dtype, dy, m * channels_out);
  Fp32Output grad_filter(dw_dtype, dw, channels_out * k, accumulate);
  const float first_beta = accumulate ? 1.f : 0.f;
  if (shape.is_pointwise()) {
    sgemm(true, false, channels_out, k, m, 1.f, grad_out.data(), channels_out, input.data(), k,
          first_beta, grad_filter.data(), k);
  } else {
    // Every way computes dW^T [taps*C x K]: the long side (taps * C) is the GEMM's M and the
    // small dY chunk is what gets packed, rather than the column matrix, which dW = dY^T * col
    // would have to pack whole.
    if (use_avx512()) {
      const ScratchFloats transposed(k * channels_out);
      filter_gradient_avx512(shape, input.data(), grad_out.data(), transposed.data());
      transpose_into(transposed.data(), channels_out, channels_out, k, first_beta,
                     grad_filter.data(), k);
    } else {
      filter_gradient_sgemm(shape, input.data(), grad_out.data(), first_beta, grad_filter.data());
    }
  }
  grad_filter.commit();
  if (dbias != nullptr) bias_gradient(m, channels_out, grad_out.data(), dbias, accumulate);
}

}  // namespace engine::cpu
