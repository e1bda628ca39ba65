#include "kernels/cpu/conv.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/batchnorm.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/column_chunks.h"
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
#include "kernels/error.h"

namespace engine::cpu {

namespace {

void add_bias(int64_t rows, int64_t channels, const float* bias, float* y) {
  parallel_for(rows, [&](int64_t m) {
    float* row = y + m * channels;
    for (int64_t k = 0; k < channels; ++k)
      row[k] += bias[k];
  });
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

// Whether the bf16 GEMM can take every class's product (bf16_runs_are_paired).
bool runs_are_paired(const TapClassPlan& plan) {
  return std::all_of(
      plan.runs.begin(), plan.runs.end(),
      [](const std::vector<DepthRun>& class_runs) { return bf16_runs_are_paired(class_runs); });
}

// With the AVX-512 GEMMs: the filters are packed once, the output pixels are grouped by which
// taps read inside the input (kernels/cpu/tap_classes.h), and each thread lowers a chunk of
// one class into its own column buffer, those taps only, and multiplies it at once by the
// filter rows of those taps while the buffer is still in its L2, storing each row straight
// to its pixel. Padding taps are neither copied nor multiplied: at a 2x2 map that is 5 of 9.
// multiply(count, col, depth, runs, c_rows) is the GEMM: fp32 (sgemm_avx512.h, whose K passes
// are those of the full product, so every output has the same bits as a product over the
// zero-padded column matrix would give) or bf16 (bf16_gemm.h). T is the columns' type.
template <typename T, typename Multiply>
void forward_fused(const Conv2dShape& shape, const TapClassPlan& plan, const T* x,
                   Multiply&& multiply) {
  const int64_t channels_out = shape.out_channels;
  const std::vector<TapClass>& classes = plan.classes;
  const std::vector<std::vector<DepthRun>>& runs = plan.runs;
  const std::vector<ClassChunk> chunks = class_chunks(shape, classes);
  int64_t column_values = 0, max_rows = 0;
  for (const ClassChunk& chunk : chunks) {
    column_values = std::max(column_values, chunk.count * classes[chunk.tap_class].depth(shape));
    max_rows = std::max(max_rows, chunk.count);
  }
  [[maybe_unused]] const bool parallel = chunks.size() > 1;
#pragma omp parallel if (parallel)
  {
    const ScratchFloats col_storage((column_values * int64_t{sizeof(T)} + 3) / 4);
    T* col = reinterpret_cast<T*>(col_storage.data());
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
      im2col_inside(shape, taps, x, rows.data(), chunk.count, col);
      multiply(chunk.count, col, taps.depth(shape), runs[chunk.tap_class], c_rows.data());
    }
  }
}

void forward_fused_fp32(const Conv2dShape& shape, const float* x, const PackedB& filters,
                        float* y) {
  forward_fused(shape, TapClassPlan(shape), x,
                [&](int64_t count, const float* col, int64_t depth,
                    const std::vector<DepthRun>& runs, const int64_t* c_rows) {
                  sgemm_avx512_packed_runs(count, col, depth, 1, filters, runs, 0.f, y, 0, c_rows);
                });
}

// The bf16 twin: bf16 columns, the bf16 GEMM's products, each output rounded once into y
// (plus bias when set). Requires runs_are_paired(plan) (an even number of input channels).
void forward_fused_bf16(Bf16Products way, const Conv2dShape& shape, const TapClassPlan& plan,
                        const bf16* x, const PackedPairsB& filters, const float* bias, bf16* y) {
  forward_fused(shape, plan, x,
                [&](int64_t count, const bf16* col, int64_t depth,
                    const std::vector<DepthRun>& runs, const int64_t* c_rows) {
                  bf16_gemm_packed_runs(
                      way, count, col, depth, filters, runs,
                      {.c = y, .c_is_bf16 = true, .c_rows = c_rows, .bias = bias});
                });
}

// y = conv(x, w) in fp32: one GEMM for pointwise convolutions, else GEMMs over the tap classes
// (the fused AVX-512 one, or the portable one: conv_sgemm.h).
void forward_fp32(const Conv2dShape& shape, const float* x, const float* w, float* y) {
  const int64_t m = shape.gemm_m(), k = shape.gemm_k(), channels_out = shape.out_channels;
  if (shape.is_pointwise()) {
    sgemm(false, true, m, channels_out, k, 1.f, x, k, w, k, 0.f, y, channels_out);
    return;
  }
  if (use_avx512()) {
    forward_fused_fp32(shape, x, PackedB(channels_out, k, w, 1, k), y);
    return;
  }
  forward_sgemm(shape, x, {.data = w, .ld = k, .transposed = true}, y);
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
template <typename T>
std::vector<const T*> flipped_filter_rows(const Conv2dShape& shape, const T* w) {
  const int64_t taps = shape.kernel_h * shape.kernel_w, C = shape.in_channels;
  const int64_t K = shape.out_channels;
  std::vector<const T*> rows(static_cast<size_t>(taps * K));
  for (int64_t row = 0; row < taps * K; ++row) {
    const int64_t tap = row / K, k = row % K;
    rows[row] = w + (k * taps + (taps - 1 - tap)) * C;
  }
  return rows;
}

// The same matrix copied out for the portable GEMM. The rows of taps that the flipped
// convolution never reads inside its input (taps_read of its TapClassPlan: on a 1x1 map 8 of
// 9) are zeros rather than copies: the per-class products never read them, the full-row
// products multiply them by the padding's zeros.
void flip_filters(const Conv2dShape& shape, const float* w, const std::vector<bool>& taps_read,
                  float* flipped) {
  const std::vector<const float*> rows = flipped_filter_rows(shape, w);
  const int64_t C = shape.in_channels, count = static_cast<int64_t>(rows.size());
  const int64_t rows_per_tap = shape.out_channels;
#pragma omp parallel for schedule(static) if (count * C >= kParallelThreshold)
  for (int64_t row = 0; row < count; ++row) {
    float* out = flipped + row * C;
    if (taps_read[row / rows_per_tap]) {
      std::copy_n(rows[row], C, out);
    } else {
      std::fill_n(out, C, 0.f);
    }
  }
}

// `values` [rows x channels] with a zero channel appended to each row.
std::vector<bf16> with_zero_channel(const bf16* values, int64_t rows, int64_t channels) {
  std::vector<bf16> padded(static_cast<size_t>(rows * (channels + 1)));
  parallel_for(rows, [&](int64_t row) {
    std::copy_n(values + row * channels, channels, padded.data() + row * (channels + 1));
  });
  return padded;
}

bool forward_bf16(const Conv2dShape& shape, const bf16* x, const bf16* w, const float* bias,
                  bf16* y);

// The convolution of an odd number of input channels (the stem's 3), which the bf16 GEMM's
// pairs along the depth cannot take, as one of C + 1 with a zero channel in x and w: the same
// products plus exact zeros, for a third more multiplications on the stem (AMX multiplies them
// several times faster than the widened fp32 GEMM). The copies are small beside the product.
bool forward_bf16_odd_channels(const Conv2dShape& shape, const bf16* x, const bf16* w,
                               const float* bias, bf16* y) {
  Conv2dShape even = shape;
  even.in_channels = shape.in_channels + 1;
  const std::vector<bf16> padded_x =
      with_zero_channel(x, shape.batch * shape.in_h * shape.in_w, shape.in_channels);
  const std::vector<bf16> padded_w =
      with_zero_channel(w, shape.out_channels * shape.kernel_h * shape.kernel_w, shape.in_channels);
  return forward_bf16(even, padded_x.data(), padded_w.data(), bias, y);
}

// y = conv(x, w) (+ bias) with bf16 x, w and y on the bf16 GEMM: a pointwise convolution is
// one product, any other goes through the tap classes; odd input channels get a zero channel.
// False (nothing written) where the CPU has no bf16 kernel: the widened fp32 path.
bool forward_bf16(const Conv2dShape& shape, const bf16* x, const bf16* w, const float* bias,
                  bf16* y) {
  const Bf16Products way = bf16_products();
  const int64_t k = shape.gemm_k(), channels_out = shape.out_channels;
  if (way == Bf16Products::kWidened) return false;
  if (shape.in_channels % 2 != 0) return forward_bf16_odd_channels(shape, x, w, bias, y);
  if (shape.is_pointwise()) {
    bf16_gemm(way, shape.gemm_m(), channels_out, k, x, k, w, 1, k,
              {.c = y, .c_is_bf16 = true, .ldc = channels_out, .bias = bias});
    return true;
  }
  const TapClassPlan plan(shape);
  if (!runs_are_paired(plan)) return false;
  // Only the taps some pixel reads inside x are packed (groups of in_channels rows, even here).
  forward_fused_bf16(way, shape, plan, x,
                     PackedPairsB(channels_out, k, w, 1, k, {shape.in_channels, &plan.taps_read}),
                     bias, y);
  return true;
}

// dx = conv^T(dy, w) with bf16 tensors on the bf16 GEMM, as backward_data in fp32 below:
// pointwise one product, stride 1 the flipped convolution, otherwise a product into an fp32
// column matrix that col2im sums (fp32) before one rounding. False where the output channels
// (the products' depth) are odd or the CPU has no bf16 kernel.
bool backward_data_bf16(const Conv2dShape& shape, const bf16* dy, const bf16* w, bf16* dx) {
  const Bf16Products way = bf16_products();
  const int64_t m = shape.gemm_m(), k = shape.gemm_k(), channels_out = shape.out_channels;
  if (way == Bf16Products::kWidened || channels_out % 2 != 0) return false;
  if (shape.is_pointwise()) {
    bf16_gemm(way, m, k, channels_out, dy, channels_out, w, k, 1,
              {.c = dx, .c_is_bf16 = true, .ldc = k});
    return true;
  }
  if (backward_data_is_a_convolution(shape)) {
    const Conv2dShape flipped_shape = backward_data_as_convolution(shape);
    const TapClassPlan plan(flipped_shape);
    if (!runs_are_paired(plan)) return false;
    forward_fused_bf16(way, flipped_shape, plan, dy,
                       PackedPairsB(shape.in_channels, flipped_filter_rows(shape, w),
                                    {shape.out_channels, &plan.taps_read}),
                       nullptr, dx);
    return true;
  }
  const int64_t pixels = shape.batch * shape.in_h * shape.in_w * shape.in_channels;
  Fp32Output grad_in(DType::bf16, dx, pixels, false);
  const int64_t rows_per_image = shape.out_h() * shape.out_w();
  const int64_t chunk_images = images_per_chunk(shape);
  const ScratchFloats col(chunk_images * rows_per_image * k);
  const Bf16GemmOutput out{.c = col.data(), .ldc = k};
  for (int64_t image = 0; image < shape.batch; image += chunk_images) {
    const int64_t end_image = std::min(shape.batch, image + chunk_images);
    const int64_t first = image * rows_per_image, end = end_image * rows_per_image;
    bf16_gemm(way, end - first, k, channels_out, dy + first * channels_out, channels_out, w, k, 1,
              out);
    col2im(shape, col.data(), image, end_image, grad_in.data());
  }
  grad_in.commit();
  return true;
}

// y = conv(x, w) (+ bias): conv2d_forward without the statistics.
void forward_output(const Conv2dForwardArgs& args) {
  // (forward_output, not conv2d_forward: the statistics are taken once, by the caller.)
  if (run_on_transformed_input(args, [](const Conv2dForwardArgs& plain) { forward_output(plain); }))
    return;
  const Conv2dShape& shape = args.shape;
  const DType dtype = args.dtype;
  const void *x = args.x, *w = args.w;
  const float* bias = args.bias;
  void* y = args.y;
  if (dtype == DType::bf16 &&
      forward_bf16(shape, static_cast<const bf16*>(x), static_cast<const bf16*>(w), bias,
                   static_cast<bf16*>(y))) {
    return;
  }
  const int64_t m = shape.gemm_m(), channels_out = shape.out_channels;
  const Fp32Input input(dtype, x, shape.batch * shape.in_h * shape.in_w * shape.in_channels);
  const Fp32Input filter(dtype, w, channels_out * shape.gemm_k());
  Fp32Output output(dtype, y, m * channels_out, false);
  forward_fp32(shape, input.data(), filter.data(), output.data());
  if (bias != nullptr) add_bias(m, channels_out, bias, output.data());
  output.commit();
}

}  // namespace

// The CUDA epilogue's statistics are those of y as stored: here batchnorm_stats of y itself.
void conv2d_forward(const Conv2dForwardArgs& args) {
  forward_output(args);
  if (args.stats == nullptr) return;
  batchnorm_stats({.dtype = args.dtype,
                   .x = args.y,
                   .rows = args.shape.gemm_m(),
                   .channels = args.shape.out_channels,
                   .stats = args.stats,
                   .sums = args.stats_sums,
                   .finalize = args.stats_finalize});
}

// With args.batchnorm: the plain gradient (and dx_add), then batchnorm_backward_reduce gating
// it in place by the ReLU's mask and summing it: the outputs the CUDA epilogue gives (its g' is
// the stored g gated, its sums those of g').
void conv2d_backward_data(const Conv2dBackwardDataArgs& args) {
  if (args.batchnorm.active()) {
    const ConvDataGradBatchNorm& bn = args.batchnorm;
    ENGINE_REQUIRE(args.dx_add == nullptr || bn.relu_output != nullptr,
                   "conv2d_backward_data: dx_add with a batchnorm gated through its transform");
    Conv2dBackwardDataArgs plain = args;
    plain.batchnorm = {};
    conv2d_backward_data(plain);
    batchnorm_backward_reduce({.dtype = args.dtype,
                               .dy = args.dx,
                               .x = bn.x,
                               .batch_stats = bn.batch_stats,
                               .grad_sums = bn.grad_sums,
                               .rows = args.shape.batch * args.shape.in_h * args.shape.in_w,
                               .channels = args.shape.in_channels,
                               .relu_output = bn.relu_output,
                               .relu_scale = bn.relu_scale,
                               .relu_shift = bn.relu_shift,
                               .relu_grad = args.dx,
                               .bias_grad = bn.bias_grad,
                               .weight_grad = bn.weight_grad,
                               .accumulate = bn.accumulate});
    return;
  }
  if (args.dx_add != nullptr) {
    // The gradient as stored, then the add: the bits the CUDA epilogue reproduces.
    Conv2dBackwardDataArgs plain = args;
    plain.dx_add = nullptr;
    conv2d_backward_data(plain);
    const Conv2dShape& s = args.shape;
    add({.dtype = args.dtype,
         .a = args.dx,
         .b = args.dx_add,
         .y = args.dx,
         .n = s.batch * s.in_h * s.in_w * s.in_channels});
    return;
  }
  const Conv2dShape& shape = args.shape;
  const DType dtype = args.dtype;
  const void *dy = args.dy, *w = args.w;
  void* dx = args.dx;
  if (dtype == DType::bf16 &&
      backward_data_bf16(shape, static_cast<const bf16*>(dy), static_cast<const bf16*>(w),
                         static_cast<bf16*>(dx))) {
    return;
  }
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
      const ScratchFloats flipped(k * channels_out);
      flip_filters(shape, filter.data(), TapClassPlan(flipped_shape).taps_read, flipped.data());
      forward_sgemm(flipped_shape, grad_out.data(),
                    {.data = flipped.data(), .ld = shape.in_channels}, grad_in.data());
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

}  // namespace engine::cpu
