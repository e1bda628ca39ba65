#include "kernels/cpu/conv.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/fp32_buffer.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/scratch.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/sgemm_avx512.h"
#include "kernels/cpu/tap_classes.h"

namespace engine::cpu {

namespace {

// Column-matrix budget per chunk (floats): large enough for efficient GEMMs, small enough
// to stay in the last-level cache's neighbourhood instead of materializing the whole batch.
constexpr int64_t kColumnBudget = int64_t{1} << 21;

int64_t images_per_chunk(const Conv2dShape& shape) {
  const int64_t per_image = shape.out_h() * shape.out_w() * shape.gemm_k();
  return std::clamp<int64_t>(kColumnBudget / std::max<int64_t>(per_image, 1), 1, shape.batch);
}

void add_bias(int64_t rows, int64_t channels, const float* bias, float* y) {
  parallel_for(rows, [&](int64_t m) {
    float* row = y + m * channels;
    for (int64_t k = 0; k < channels; ++k)
      row[k] += bias[k];
  });
}

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

// Calls fn(first_row, end_row, col) over chunks of whole images, col holding im2col(x) for
// output rows [first_row, end_row).
template <typename Fn>
void for_each_column_chunk(const Conv2dShape& shape, const float* x, Fn&& fn) {
  const int64_t rows_per_image = shape.out_h() * shape.out_w();
  const int64_t chunk_images = images_per_chunk(shape);
  const ScratchFloats col(chunk_images * rows_per_image * shape.gemm_k());
  for (int64_t image = 0; image < shape.batch; image += chunk_images) {
    const int64_t first = image * rows_per_image;
    const int64_t end = std::min(shape.batch, image + chunk_images) * rows_per_image;
    im2col(shape, x, first, end, col.data());
    fn(first, end, col.data());
  }
}

// Rows of a column chunk that should stay in a core's L2 while it is multiplied: about
// 256 KiB of columns, but at least one 240-row block of the AVX-512 GEMM (MC in
// kernels/cpu/sgemm_avx512.cpp), so the B panels are not streamed for a few rows.
int64_t l2_chunk_rows(int64_t k) {
  return std::max<int64_t>(240, (int64_t{1} << 16) / k);
}

// How a GEMM reads the filters: as stored, KRSC (one row of taps * C per output channel), or
// as the [taps * C x K] matrix that the flipped filters of the input gradient are built as.
enum class FilterRows { kPerOutputChannel, kPerTapAndChannel };

// The runs of a class's column rows and the filter (B) rows they multiply: one per filter
// row r of its taps, merged where both are contiguous (all of a row's taps inside).
std::vector<DepthRun> tap_class_runs(const Conv2dShape& shape, const TapClass& taps) {
  const int64_t channels = shape.in_channels, run = taps.cols.count() * channels;
  std::vector<DepthRun> runs;
  for (int64_t r = taps.rows.begin; r < taps.rows.end; ++r) {
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

// Rows [first, first + count) of one tap class.
struct ClassChunk {
  int64_t tap_class, first, count;
};

// Each class in chunks of whole 12-row tiles, each about 1/(2 * threads) of the convolution's
// work (rows times depth) so that the threads finish together, but at most l2_chunk_rows, so
// that a chunk's columns are still in L2 when they are multiplied. Largest first, for the
// dynamic schedule.
std::vector<ClassChunk> class_chunks(const Conv2dShape& shape,
                                     const std::vector<TapClass>& classes) {
  int64_t work = 0;
  for (const TapClass& taps : classes)
    work += shape.batch * taps.pixels_per_image() * taps.depth(shape);
  const int64_t chunk_work = std::max<int64_t>(work / (2 * max_threads()), 1);
  std::vector<ClassChunk> chunks;
  for (int64_t c = 0; c < static_cast<int64_t>(classes.size()); ++c) {
    const int64_t rows = shape.batch * classes[c].pixels_per_image();
    const int64_t depth = std::max<int64_t>(classes[c].depth(shape), 1);
    const int64_t target = std::clamp<int64_t>(chunk_work / depth, 12, l2_chunk_rows(depth));
    const int64_t count = (rows + target - 1) / target;
    const int64_t chunk_rows = ((rows + count - 1) / count + 11) / 12 * 12;
    for (int64_t first = 0; first < rows; first += chunk_rows)
      chunks.push_back({c, first, std::min(chunk_rows, rows - first)});
  }
  std::stable_sort(chunks.begin(), chunks.end(), [&](const ClassChunk& x, const ClassChunk& y) {
    return x.count * classes[x.tap_class].depth(shape) >
           y.count * classes[y.tap_class].depth(shape);
  });
  return chunks;
}

// With the AVX-512 GEMM: the filters are packed once, the output pixels are grouped by which
// taps read inside the input (kernels/cpu/tap_classes.h), and each thread lowers a chunk of
// one class into its own column buffer, those taps only, and multiplies it at once by the
// filter rows of those taps while the buffer is still in its L2, storing each row straight
// to its pixel. Padding taps are neither copied nor multiplied: at a 2x2 map that is 5 of 9.
// The GEMM keeps the K passes of the full product (kernels/cpu/sgemm_avx512.cpp), so every
// output has the same bits as a product over the zero-padded column matrix would give.
void forward_fused_fp32(const Conv2dShape& shape, const float* x, const PackedB& filters,
                        float* y) {
  const int64_t channels_out = shape.out_channels;
  const std::vector<TapClass> classes = tap_classes(shape);
  std::vector<std::vector<DepthRun>> runs;
  for (const TapClass& taps : classes)
    runs.push_back(tap_class_runs(shape, taps));
  const std::vector<ClassChunk> chunks = class_chunks(shape, classes);
  int64_t column_floats = 0, max_rows = 0;
  for (const ClassChunk& chunk : chunks) {
    column_floats = std::max(column_floats, chunk.count * classes[chunk.tap_class].depth(shape));
    max_rows = std::max(max_rows, chunk.count);
  }
  [[maybe_unused]] const bool parallel = chunks.size() > 1;
#pragma omp parallel if (parallel)
  {
    const ScratchFloats col(column_floats);
    std::vector<int64_t> rows(static_cast<size_t>(max_rows)), c_rows(rows.size());
#pragma omp for schedule(dynamic, 1)
    for (size_t index = 0; index < chunks.size(); ++index) {
      const ClassChunk& chunk = chunks[index];
      const TapClass& taps = classes[chunk.tap_class];
      for (int64_t i = 0; i < chunk.count; ++i) {
        rows[i] = taps.output_row(shape, chunk.first + i);
        c_rows[i] = rows[i] * channels_out;
      }
      // A class with no tap inside the input has no runs: the GEMM stores zeros for it.
      im2col_inside(shape, taps, x, rows.data(), chunk.count, col.data());
      sgemm_avx512_packed_runs(chunk.count, col.data(), taps.depth(shape), 1, filters,
                               runs[chunk.tap_class], 0.f, y, 0, c_rows.data());
    }
  }
}

// y = conv(x, w) in fp32: one GEMM for pointwise convolutions, else GEMMs over column chunks.
void forward_fp32(const Conv2dShape& shape, const float* x, const float* w, float* y,
                  FilterRows rows = FilterRows::kPerOutputChannel) {
  const int64_t m = shape.gemm_m(), k = shape.gemm_k(), channels_out = shape.out_channels;
  const bool transposed = rows == FilterRows::kPerOutputChannel;
  const int64_t ldw = transposed ? k : channels_out;
  if (shape.is_pointwise()) {
    sgemm(false, transposed, m, channels_out, k, 1.f, x, k, w, ldw, 0.f, y, channels_out);
    return;
  }
  if (use_avx512()) {
    forward_fused_fp32(
        shape, x, PackedB(channels_out, k, w, transposed ? 1 : channels_out, transposed ? k : 1),
        y);
    return;
  }
  for_each_column_chunk(shape, x, [&](int64_t first, int64_t end, const float* col) {
    sgemm(false, transposed, end - first, channels_out, k, 1.f, col, k, w, ldw, 0.f,
          y + first * channels_out, channels_out);
  });
}

// For stride 1, the input gradient is itself a convolution: of dy with the filters flipped
// in space and with in/out channels swapped, padded by (kernel - 1) * dilation - pad. That
// reuses the forward path and avoids col2im's column matrix, kernel_h * kernel_w times the
// size of dx.
bool backward_data_is_a_convolution(const Conv2dShape& shape) {
  return shape.stride_h == 1 && shape.stride_w == 1 &&
         shape.pad_h <= (shape.kernel_h - 1) * shape.dilation_h &&
         shape.pad_w <= (shape.kernel_w - 1) * shape.dilation_w;
}

Conv2dShape backward_data_as_convolution(const Conv2dShape& shape) {
  Conv2dShape flipped = shape;
  flipped.in_h = shape.out_h();
  flipped.in_w = shape.out_w();
  flipped.in_channels = shape.out_channels;
  flipped.out_channels = shape.in_channels;
  flipped.pad_h = (shape.kernel_h - 1) * shape.dilation_h - shape.pad_h;
  flipped.pad_w = (shape.kernel_w - 1) * shape.dilation_w - shape.pad_w;
  return flipped;
}

// The flipped filters as a [taps * K x C] GEMM operand, row by row: row (t, k) is
// w[k][R-1-r][S-1-s][:], where t = (r, s). The AVX-512 path packs these rows straight into
// the GEMM's panels; building w'[c][r'][s'][k] in KRSC order instead took a transpose, which
// with its transposed pack cost 0.5-1 ms more on layer4.
std::vector<const float*> flipped_filter_rows(const Conv2dShape& shape, const float* w) {
  const int64_t taps = shape.kernel_h * shape.kernel_w, C = shape.in_channels;
  const int64_t K = shape.out_channels;
  std::vector<const float*> rows(static_cast<size_t>(taps * K));
  for (int64_t row = 0; row < taps * K; ++row) {
    const int64_t tap = row / K, k = row % K;
    rows[row] = w + (k * taps + (taps - 1 - tap)) * C;
  }
  return rows;
}

// The same matrix copied out, for the portable GEMM.
std::vector<float> flip_filters(const Conv2dShape& shape, const float* w) {
  const std::vector<const float*> rows = flipped_filter_rows(shape, w);
  const int64_t C = shape.in_channels, count = static_cast<int64_t>(rows.size());
  std::vector<float> flipped(static_cast<size_t>(count * C));
#pragma omp parallel for schedule(static) if (count * C >= kParallelThreshold)
  for (int64_t row = 0; row < count; ++row)
    std::copy_n(rows[row], C, flipped.data() + row * C);
  return flipped;
}

// out[r][c] = in[c][r] (+ out[r][c] when beta is 1), in being [cols x rows]: 32 x 32 blocks, so
// that reads and writes both stay within a few cache lines per block.
void transpose_into(const float* in, int64_t rows, int64_t cols, float beta, float* out) {
  constexpr int64_t kBlock = 32;
  const int64_t row_blocks = (rows + kBlock - 1) / kBlock;
  const int64_t col_blocks = (cols + kBlock - 1) / kBlock;
  [[maybe_unused]] const bool parallel = rows * cols >= kParallelThreshold;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t job = 0; job < row_blocks * col_blocks; ++job) {
    const int64_t r0 = job / col_blocks * kBlock, c0 = job % col_blocks * kBlock;
    const int64_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t c = c0; c < c1; ++c)
        out[r * cols + c] = in[c * rows + r] + (beta == 0.f ? 0.f : out[r * cols + c]);
    }
  }
}

// The grouped filter gradient below: worth it while a 240-row column chunk stays within
// about half of L2 (taps * C <= 640: ResNet's stem and 64-channel 3x3 layers), and while
// every thread gets a group of images. Beyond that the shared chunks of the batched path win.
bool per_image_filter_gradient_fits(const Conv2dShape& shape) {
  return shape.gemm_k() <= 640 && shape.batch >= max_threads();
}

// Images per group of the grouped filter gradient: at most 16 groups, whatever the thread
// count, so that the summation order, and so the result, depends on the batch alone.
int64_t images_per_group(int64_t batch) {
  return (batch + 15) / 16;
}

// dW^T [taps*C x K] with the AVX-512 GEMM, into `transposed`: each group of images is taken
// by one thread, which lowers column chunks of ~240 rows into its L2 and multiplies them at
// once, accumulating the group's partial dW^T in image order; the partials are then summed
// in group order. The whole-image column matrices of the general path (7.4 MiB per image
// for the stem) went through L3, and one partial per image (19 MB for a batch of 128 on
// layer1) cost more to fill and sum than the GEMMs.
void filter_gradient_grouped(const Conv2dShape& shape, const float* x, const float* dy,
                             float* transposed) {
  const int64_t k = shape.gemm_k(), channels_out = shape.out_channels;
  const int64_t rows_per_image = shape.out_h() * shape.out_w();
  const int64_t chunk_rows = l2_chunk_rows(k);
  const int64_t group_images = images_per_group(shape.batch);
  const int64_t groups = (shape.batch + group_images - 1) / group_images;
  const int64_t partial_size = k * channels_out;
  const ScratchFloats partials(groups * partial_size);
#pragma omp parallel
  {
    const ScratchFloats col(std::min(chunk_rows, rows_per_image) * k);
#pragma omp for schedule(static)
    for (int64_t group = 0; group < groups; ++group) {
      float* partial = partials.data() + group * partial_size;
      const int64_t group_first = group * group_images * rows_per_image;
      const int64_t group_end = std::min(shape.batch, (group + 1) * group_images) * rows_per_image;
      for (int64_t first = group_first; first < group_end;) {
        // Chunks never straddle an image, as im2col's row ranges need not.
        const int64_t image_end = (first / rows_per_image + 1) * rows_per_image;
        const int64_t end = std::min(image_end, first + chunk_rows);
        im2col(shape, x, first, end, col.data());
        const PackedB grad_chunk(channels_out, end - first, dy + first * channels_out, channels_out,
                                 1);
        sgemm_avx512_packed(k, col.data(), 1, k, grad_chunk, first == group_first ? 0.f : 1.f,
                            partial, channels_out);
        first = end;
      }
    }
  }
  std::copy(partials.data(), partials.data() + partial_size, transposed);
  for (int64_t group = 1; group < groups; ++group) {
    const float* partial = partials.data() + group * partial_size;
    parallel_for(partial_size, [&](int64_t i) { transposed[i] += partial[i]; });
  }
}

// The rows in [first, end) (output pixels of whole images) whose filter tap (r, s) reads
// inside the input, as runs of consecutive rows counted from `first`: the depth runs of that
// tap's share of the filter gradient.
std::vector<DepthRun> tap_pixel_runs(const Conv2dShape& shape, int64_t r, int64_t s, int64_t first,
                                     int64_t end) {
  const int64_t out_h = shape.out_h(), out_w = shape.out_w();
  const TapRange rows =
      outputs_reading_inside(r, shape.stride_h, shape.pad_h, shape.dilation_h, out_h, shape.in_h);
  const TapRange cols =
      outputs_reading_inside(s, shape.stride_w, shape.pad_w, shape.dilation_w, out_w, shape.in_w);
  std::vector<DepthRun> runs;
  if (rows.count() == 0 || cols.count() == 0) return runs;
  for (int64_t image = first / (out_h * out_w); image * out_h * out_w < end; ++image) {
    for (int64_t oh = rows.begin; oh < rows.end; ++oh) {
      const int64_t begin = (image * out_h + oh) * out_w + cols.begin - first;
      if (!runs.empty() && runs.back().a_begin + runs.back().length == begin) {
        runs.back().length += cols.count();
      } else {
        runs.push_back({begin, begin, cols.count()});
      }
    }
  }
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
  const int64_t threads = max_threads();
  const int64_t share = ((channels + threads - 1) / threads + 11) / 12 * 12;
#pragma omp parallel for schedule(static) if (threads > 1)
  for (int64_t thread = 0; thread < threads; ++thread) {
    const int64_t begin = std::min(channels, thread * share);
    const int64_t rows = std::min(channels, begin + share) - begin;
    if (rows == 0) continue;
    for (int64_t tap = 0; tap < static_cast<int64_t>(runs.size()); ++tap) {
      sgemm_avx512_packed_runs(rows, col + tap * channels + begin, 1, k, grad_chunk, runs[tap],
                               beta, transposed + (tap * channels + begin) * channels_out,
                               channels_out, nullptr);
    }
  }
}

}  // namespace

void conv2d_forward(const Conv2dShape& shape, DType dtype, const void* x, const void* w,
                    const float* bias, void* y) {
  const int64_t m = shape.gemm_m(), channels_out = shape.out_channels;
  const Fp32Input input(dtype, x, shape.batch * shape.in_h * shape.in_w * shape.in_channels);
  const Fp32Input filter(dtype, w, channels_out * shape.gemm_k());
  Fp32Output output(dtype, y, m * channels_out, false);
  forward_fp32(shape, input.data(), filter.data(), output.data());
  if (bias != nullptr) add_bias(m, channels_out, bias, output.data());
  output.commit();
}

void conv2d_backward_data(const Conv2dShape& shape, DType dtype, const void* dy, const void* w,
                          void* dx) {
  const int64_t m = shape.gemm_m(), k = shape.gemm_k(), channels_out = shape.out_channels;
  const Fp32Input grad_out(dtype, dy, m * channels_out);
  const Fp32Input filter(dtype, w, channels_out * k);
  Fp32Output grad_in(dtype, dx, shape.batch * shape.in_h * shape.in_w * shape.in_channels, false);
  if (shape.is_pointwise()) {
    sgemm(false, false, m, k, channels_out, 1.f, grad_out.data(), channels_out, filter.data(), k,
          0.f, grad_in.data(), k);
  } else if (backward_data_is_a_convolution(shape)) {
    const Conv2dShape flipped_shape = backward_data_as_convolution(shape);
    if (use_avx512()) {
      forward_fused_fp32(flipped_shape, grad_out.data(),
                         PackedB(shape.in_channels, flipped_filter_rows(shape, filter.data())),
                         grad_in.data());
    } else {
      const std::vector<float> flipped = flip_filters(shape, filter.data());
      forward_fp32(flipped_shape, grad_out.data(), flipped.data(), grad_in.data(),
                   FilterRows::kPerTapAndChannel);
    }
  } else {
    const int64_t rows_per_image = shape.out_h() * shape.out_w();
    const int64_t chunk_images = images_per_chunk(shape);
    const ScratchFloats col(chunk_images * rows_per_image * k);
    for (int64_t image = 0; image < shape.batch; image += chunk_images) {
      const int64_t end_image = std::min(shape.batch, image + chunk_images);
      const int64_t first = image * rows_per_image, end = end_image * rows_per_image;
      sgemm(false, false, end - first, k, channels_out, 1.f, grad_out.data() + first * channels_out,
            channels_out, filter.data(), k, 0.f, col.data(), k);
      col2im(shape, col.data(), image, end_image, grad_in.data());
    }
  }
  grad_in.commit();
}

void conv2d_backward_filter(const Conv2dShape& shape, DType dtype, const void* x, const void* dy,
                            DType dw_dtype, void* dw, float* dbias, bool accumulate) {
  const int64_t m = shape.gemm_m(), k = shape.gemm_k(), channels_out = shape.out_channels;
  const Fp32Input input(dtype, x, shape.batch * shape.in_h * shape.in_w * shape.in_channels);
  const Fp32Input grad_out(dtype, dy, m * channels_out);
  Fp32Output grad_filter(dw_dtype, dw, channels_out * k, accumulate);
  const float first_beta = accumulate ? 1.f : 0.f;
  if (shape.is_pointwise()) {
    sgemm(true, false, channels_out, k, m, 1.f, grad_out.data(), channels_out, input.data(), k,
          first_beta, grad_filter.data(), k);
  } else if (use_avx512() && per_image_filter_gradient_fits(shape)) {
    const ScratchFloats transposed(k * channels_out);
    filter_gradient_grouped(shape, input.data(), grad_out.data(), transposed.data());
    transpose_into(transposed.data(), channels_out, k, first_beta, grad_filter.data());
  } else if (use_avx512() && padding_share(shape) >= kPerTapFilterGradientPadding) {
    // dW^T [taps*C x K] = col^T * dY, summed over column chunks, then one transpose into dW.
    // The long side (taps * C) is the GEMM's M and the small dY chunk is what gets packed,
    // rather than the column matrix, which dW = dY^T * col would have to pack whole.
    const ScratchFloats transposed(k * channels_out);
    for_each_column_chunk(shape, input.data(), [&](int64_t first, int64_t end, const float* col) {
      filter_gradient_chunk(shape, first, end, col, grad_out.data(), first == 0 ? 0.f : 1.f,
                            transposed.data());
    });
    transpose_into(transposed.data(), channels_out, k, first_beta, grad_filter.data());
  } else {
    // The same as one product per chunk, padding zeros included.
    const ScratchFloats transposed(k * channels_out);
    for_each_column_chunk(shape, input.data(), [&](int64_t first, int64_t end, const float* col) {
      sgemm(true, false, k, channels_out, end - first, 1.f, col, k,
            grad_out.data() + first * channels_out, channels_out, first == 0 ? 0.f : 1.f,
            transposed.data(), channels_out);
    });
    transpose_into(transposed.data(), channels_out, k, first_beta, grad_filter.data());
  }
  grad_filter.commit();
  if (dbias != nullptr) bias_gradient(m, channels_out, grad_out.data(), dbias, accumulate);
}

}  // namespace engine::cpu
