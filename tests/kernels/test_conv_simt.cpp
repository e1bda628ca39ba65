// The CUDA conv2d kernels (implicit GEMM: fp32 SIMT for f32, tf32 tensor cores for f32 under
// Fp32Math::tf32, ldmatrix + mma.sync bf16 tensor cores for bf16) through their launchers
// under the SIMT emulator, against the CPU twins (for tf32, the CPU's fp32 conv of the
// operands rounded to tf32, whose products are exact in fp32). The shapes are small but cross
// every tile edge: M, N and K not multiples of the tiles, several tiles in each direction,
// forced split-K, padding, stride, dilation and the pointwise fast path.
// The kernels under test, compiled by g++ for the emulator in simt_conv_kernels.cpp.
#include "simt_conv_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

#include "conv_engines.h"
#include "conv_reference.h"
#include "elementwise_cases.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/conv.h"
#include "simt_buffer.h"

namespace engine {
namespace {

using testing::conv_shape;
using testing::decode;
using testing::random_values;
using testing::round_to_tf32;
using testing::SimtBuffer;

using Engine = testing::ConvEngine;
using testing::conv_engines;
using testing::relative_difference;

struct SimtCase {
  const char* name;
  Conv2dShape shape;
};

std::vector<SimtCase> simt_cases() {
  return {
      {"3x3 s1 p1 odd sizes", conv_shape(2, 5, 7, 3, 5, 3, 3, 1, 1)},
      // The block tiles are 128 x 128 (K tiles 8 fp32, 32 bf16): M and N over two in each
      // pass, K over several, the scalar loads and (channel counts multiples of 8) the bf16
      // engine's 16-byte ones. 1x1 stride-2 filters keep backward data's K short.
      {"3x3 s1 p1, M over two tiles", conv_shape(2, 9, 9, 6, 40, 3, 3, 1, 1)},
      // Channels a multiple of 4, not of 8: tf32's 16-byte loads, bf16's element loads.
      {"3x3 s1 p1, vector loads of 4", conv_shape(1, 9, 9, 12, 20, 3, 3, 1, 1)},
      {"1x1 s2, M and N over two tiles", conv_shape(2, 17, 17, 6, 136, 1, 1, 2, 0)},
      {"1x1 s2, M and N over two tiles, vector loads", conv_shape(2, 17, 17, 16, 136, 1, 1, 2, 0)},
      {"1x1 s2, wide input", conv_shape(1, 12, 12, 130, 6, 1, 1, 2, 0)},
      {"1x1 s2, wide input, vector loads", conv_shape(1, 12, 12, 136, 16, 1, 1, 2, 0)},
      {"3x3 s2 p1, vector loads", conv_shape(1, 7, 7, 16, 16, 3, 3, 2, 1)},
      {"3x3 dilation 2 p2, vector loads", conv_shape(2, 9, 9, 16, 24, 3, 3, 1, 2, 2)},
      {"3x3 s2 p1 odd", conv_shape(1, 7, 6, 5, 3, 3, 3, 2, 1)},
      {"3x3 dilation 2", conv_shape(1, 9, 9, 3, 4, 3, 3, 1, 2, 2)},
      {"7x7 s2 p3 stem", conv_shape(1, 12, 12, 3, 16, 7, 7, 2, 3)},
      {"pointwise, odd N", conv_shape(2, 5, 5, 19, 70, 1, 1, 1, 0)},
      {"pointwise, M and N over two tiles", conv_shape(2, 9, 9, 19, 140, 1, 1, 1, 0)},
      {"pointwise, vector loads", conv_shape(2, 9, 9, 24, 136, 1, 1, 1, 0)},
      {"1x1 s2 downsample", conv_shape(1, 6, 6, 8, 9, 1, 1, 2, 0)},
      {"3x3 long K", conv_shape(1, 4, 4, 40, 8, 3, 3, 1, 1)},
  };
}

// The cases of simt_cases() with these names, in this order: the suites that run a few of them
// take the table's shapes rather than a copy.
std::vector<SimtCase> simt_cases_named(std::initializer_list<std::string_view> names) {
  const std::vector<SimtCase> all = simt_cases();
  std::vector<SimtCase> chosen;
  for (const std::string_view name : names) {
    const auto found =
        std::find_if(all.begin(), all.end(), [&](const SimtCase& c) { return c.name == name; });
    if (found == all.end()) {
      throw std::invalid_argument("simt_cases has no case '" + std::string(name) + "'");
    }
    chosen.push_back(*found);
  }
  return chosen;
}

// What the CPU twin multiplies: the buffer's bytes, or for tf32 its values rounded to tf32.
std::vector<std::byte> twin_bytes(const SimtBuffer& buffer, const Engine& engine) {
  std::vector<float> values = buffer.values();
  if (engine.math == Fp32Math::tf32) {
    for (float& v : values)
      v = round_to_tf32(v);
  }
  return testing::encode(engine.dtype, values);
}

// Guarded buffers standing in for device memory (simt_buffer.h), in the dtype of the test,
// and what the CPU twin reads of them. tf32 gets values with more bits than tf32 keeps, so
// that its rounding shows; the others bf16-exact ones.
struct Operands {
  Operands(const Conv2dShape& shape, const Engine& engine)
      : x(engine.dtype, values(shape_numel(shape.input_shape()), 1, engine)),
        w(engine.dtype, values(shape_numel(shape.filter_shape()), 2, engine)),
        dy(engine.dtype, values(shape_numel(shape.output_shape()), 3, engine)),
        bias(DType::f32, random_values(shape.out_channels, 4)),
        cpu_x(twin_bytes(x, engine)),
        cpu_w(twin_bytes(w, engine)),
        cpu_dy(twin_bytes(dy, engine)) {}
  static std::vector<float> values(int64_t n, uint32_t seed, const Engine& engine) {
    return random_values(n, seed, engine.math != Fp32Math::tf32);
  }
  SimtBuffer x, w, dy, bias;
  std::vector<std::byte> cpu_x, cpu_w, cpu_dy;
};

TEST(ConvSimt, ForwardMatchesCpu) {
  for (const Engine& engine : conv_engines()) {
    const DType dtype = engine.dtype;
    for (const auto& [name, shape] : simt_cases()) {
      SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + engine.name());
      Operands in(shape, engine);
      const int64_t outputs = shape_numel(shape.output_shape());
      std::vector<std::byte> expected(outputs * dtype_size(dtype));
      SimtBuffer actual(dtype, std::vector<float>(outputs, NAN));
      cpu::conv2d_forward({.shape = shape,
                           .dtype = dtype,
                           .x = in.cpu_x.data(),
                           .w = in.cpu_w.data(),
                           .bias = in.bias.floats(),
                           .y = expected.data()});
      cuda::conv2d_forward({.shape = shape,
                            .dtype = dtype,
                            .x = in.x.data(),
                            .w = in.w.data(),
                            .bias = in.bias.floats(),
                            .y = actual.data(),
                            .fp32_math = engine.math},
                           nullptr);
      EXPECT_LE(relative_difference(actual.values(), decode(dtype, expected.data(), outputs)),
                engine.tolerance());
    }
  }
}

// The CUDA input gradient of `shape` against the CPU twin's; dx starts as NaN, so an element
// no thread writes fails.
void expect_backward_data_matches_cpu(const Conv2dShape& shape, const Engine& engine) {
  const DType dtype = engine.dtype;
  Operands in(shape, engine);
  const int64_t inputs = shape_numel(shape.input_shape());
  std::vector<std::byte> expected(inputs * dtype_size(dtype));
  SimtBuffer actual(dtype, std::vector<float>(inputs, NAN));
  cpu::conv2d_backward_data({.shape = shape,
                             .dtype = dtype,
                             .dy = in.cpu_dy.data(),
                             .w = in.cpu_w.data(),
                             .dx = expected.data()});
  cuda::conv2d_backward_data({.shape = shape,
                              .dtype = dtype,
                              .dy = in.dy.data(),
                              .w = in.w.data(),
                              .dx = actual.data(),
                              .fp32_math = engine.math},
                             nullptr);
  EXPECT_LE(relative_difference(actual.values(), decode(dtype, expected.data(), inputs)),
            engine.tolerance());
}

TEST(ConvSimt, BackwardDataMatchesCpu) {
  for (const Engine& engine : conv_engines()) {
    for (const auto& [name, shape] : simt_cases()) {
      SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + engine.name());
      expect_backward_data_matches_cpu(shape, engine);
    }
  }
}

// The input gradient adding a residual branch's gradient in its epilogue (dx_add) gives the
// bits of the plain gradient followed by the add op (the CPU twin's add on what it stored), on
// each engine, at 16-byte and element widths (an addend one element off its alignment takes the
// element stores), M and N over one and two tiles. The epilogue takes every case that is one
// GEMM without a split; where it cannot (strided, split K) conv2d_backward_data_adds says so
// and the launcher refuses.
TEST(ConvSimt, BackwardDataAddsTheResidualGradientAsTheAddOpWould) {
  for (const auto& [name, shape] : simt_cases()) {
    if (!cuda::conv2d_backward_data_adds({.shape = shape})) {
      EXPECT_TRUE(cuda::is_strided_pointwise(shape) || cuda::splits_into_stride_phases(shape))
          << name;
    }
  }
  // The store's paths, not every shape again (BackwardDataMatchesCpu runs them all): input
  // channels of 3 and 19 (element stores), 12 (tf32's 16-byte ones) and 24 (bf16's too).
  const std::vector<SimtCase> cases =
      simt_cases_named({"3x3 s1 p1 odd sizes", "3x3 s1 p1, vector loads of 4",
                        "pointwise, M and N over two tiles", "pointwise, vector loads"});
  for (const Engine& engine : conv_engines()) {
    const DType dtype = engine.dtype;
    for (const auto& [name, shape] : cases) {
      ASSERT_TRUE(cuda::conv2d_backward_data_adds({.shape = shape, .dtype = dtype})) << name;
      for (const int offset : {0, 1}) {
        SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + engine.name() +
                     " addend offset " + std::to_string(offset));
        Operands in(shape, engine);
        const int64_t inputs = shape_numel(shape.input_shape());
        SimtBuffer addend(dtype, random_values(inputs, 9), offset);
        SimtBuffer plain(dtype, std::vector<float>(inputs, NAN));
        SimtBuffer fused(dtype, std::vector<float>(inputs, NAN));
        Conv2dBackwardDataArgs args{.shape = shape,
                                    .dtype = dtype,
                                    .dy = in.dy.data(),
                                    .w = in.w.data(),
                                    .dx = plain.data(),
                                    .fp32_math = engine.math};
        cuda::conv2d_backward_data(args, nullptr);
        cpu::add({.dtype = dtype,
                  .a = plain.data(),
                  .b = addend.data(),
                  .y = plain.data(),
                  .n = inputs});
        args.dx = fused.data();
        args.dx_add = addend.data();
        cuda::conv2d_backward_data(args, nullptr);
        EXPECT_EQ(fused.values(), plain.values());
      }
    }
  }
  // Where it cannot: a split K (the partials' sum would have to add it) is refused.
  const Conv2dShape long_k = conv_shape(1, 4, 4, 40, 8, 3, 3, 1, 1);
  Operands in(long_k, testing::kConvFp32);
  SimtBuffer dx = SimtBuffer::f32(shape_numel(long_k.input_shape()));
  SimtBuffer workspace = SimtBuffer::f32(3 * shape_numel(long_k.input_shape()));
  const Conv2dBackwardDataArgs split{.shape = long_k,
                                     .dy = in.dy.data(),
                                     .w = in.w.data(),
                                     .dx = dx.data(),
                                     .dx_add = dx.data(),
                                     .workspace = workspace.data(),
                                     .algo = {.split_k = 3}};
  EXPECT_FALSE(cuda::conv2d_backward_data_adds(split));
  EXPECT_THROW(cuda::conv2d_backward_data(split, nullptr), Error);
}

// Strided input gradients without the stride's zeros (conv_strided_data_grad.cuh): 1x1
// layers as one GEMM filling stride cells, the others as a GEMM per stride phase.
std::vector<SimtCase> strided_data_grad_cases() {
  Conv2dShape rows_only = conv_shape(2, 9, 7, 16, 8, 3, 3, 1, 1);
  rows_only.stride_h = 2;  // phases along h only
  return {
      {"3x3 s2 p1 even, vector loads", conv_shape(2, 12, 12, 16, 24, 3, 3, 2, 1)},
      {"3x3 s2 p1, phase M and N over two tiles", conv_shape(3, 16, 16, 136, 16, 3, 3, 2, 1)},
      {"3x3 s2 p0 odd, element loads", conv_shape(1, 9, 9, 5, 7, 3, 3, 2, 0)},
      {"3x3 s2 p2", conv_shape(1, 8, 8, 8, 8, 3, 3, 2, 2)},
      {"3x3 s3 p1: nine phases of one tap", conv_shape(1, 10, 10, 8, 8, 3, 3, 3, 1)},
      {"2x2 s2", conv_shape(1, 8, 7, 8, 16, 2, 2, 2, 0)},
      {"5x3 s2 p2", conv_shape(1, 11, 9, 8, 16, 5, 3, 2, 2)},
      {"3x3 stride 2 x 1", rows_only},
      {"1x1 s3 cells", conv_shape(1, 10, 10, 16, 8, 1, 1, 3, 0)},
      {"1x1 s2 cells, odd", conv_shape(2, 7, 5, 6, 10, 1, 1, 2, 0)},
  };
}

TEST(ConvSimt, StridedBackwardDataSkipsTheStridesZeros) {
  for (const Engine& engine : conv_engines()) {
    for (const auto& [name, shape] : strided_data_grad_cases()) {
      SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + engine.name());
      EXPECT_TRUE(cuda::is_strided_pointwise(shape) || cuda::splits_into_stride_phases(shape));
      EXPECT_EQ(cuda::conv2d_backward_data_workspace_bytes(shape), 0u);
      expect_backward_data_matches_cpu(shape, engine);
    }
  }
}

// The phases of a stride tile the input: every input pixel in exactly one, read by the taps
// (h + pad - r) % stride == 0 from dy row (h + pad - r) / stride. ResNet's 3x3/2 at 56 px:
// 28 x 28 pixels a phase, with 4, 2, 2 and 1 taps.
TEST(ConvSimt, StridePhasesTileTheInput) {
  const Conv2dShape resnet = conv_shape(1, 56, 56, 8, 8, 3, 3, 2, 1);
  std::vector<int64_t> taps;
  for (const cuda::StridePhase& phase : cuda::stride_phases(resnet)) {
    EXPECT_EQ(phase.rows.count, 28);
    EXPECT_EQ(phase.cols.count, 28);
    taps.push_back(phase.taps());
  }
  EXPECT_EQ(taps, (std::vector<int64_t>{4, 2, 2, 1}));  // residues (0, 0), (0, 1), (1, 0), (1, 1)
  for (const auto& [name, shape] : strided_data_grad_cases()) {
    if (!cuda::splits_into_stride_phases(shape)) continue;
    SCOPED_TRACE(std::string(name) + " " + shape.str());
    std::vector<int> covered(static_cast<size_t>(shape.in_h * shape.in_w), 0);
    for (const cuda::StridePhase& phase : cuda::stride_phases(shape)) {
      for (int32_t i = 0; i < phase.rows.count; ++i) {
        for (int32_t j = 0; j < phase.cols.count; ++j) {
          const int64_t h = phase.rows.first + int64_t{i} * shape.stride_h;
          const int64_t w = phase.cols.first + int64_t{j} * shape.stride_w;
          ASSERT_LT(h, shape.in_h);
          ASSERT_LT(w, shape.in_w);
          ++covered[static_cast<size_t>(h * shape.in_w + w)];
          for (int32_t t = 0; t < phase.rows.taps; ++t) {  // the taps and dy rows, per axis
            const int64_t r = phase.rows.tap0 + int64_t{t} * shape.stride_h;
            EXPECT_LT(r, shape.kernel_h);
            EXPECT_EQ((h + shape.pad_h - r) % shape.stride_h, 0);
            EXPECT_EQ((h + shape.pad_h - r) / shape.stride_h, phase.rows.top + i - t);
          }
        }
      }
    }
    EXPECT_EQ(std::count(covered.begin(), covered.end(), 1), shape.in_h * shape.in_w);
  }
}

// Forward and input gradient with K split over blockIdx.z into fp32 partials, summed by
// splitk_reduce_kernel: a few of the cases (tiles crossed in M and N, scalar and 16-byte
// loads, the pointwise path, a long K). A forward with a bias never splits (the reduction adds
// none), so its case checks that the bias still arrives.
TEST(ConvSimt, ForwardAndBackwardDataMatchCpuWithSplitK) {
  const std::vector<SimtCase> cases =
      simt_cases_named({"3x3 s1 p1 odd sizes", "1x1 s2, M and N over two tiles, vector loads",
                        "3x3 dilation 2 p2, vector loads", "pointwise, odd N", "3x3 long K"});
  for (const Engine& engine : conv_engines()) {
    const DType dtype = engine.dtype;
    for (const auto& [name, shape] : cases) {
      for (const bool with_bias : {false, true}) {
        const int splits = 3;
        SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + engine.name() +
                     (with_bias ? " with bias" : ""));
        Operands in(shape, engine);
        const float* bias = with_bias ? in.bias.floats() : nullptr;
        const int64_t outputs = shape_numel(shape.output_shape());
        const int64_t inputs = shape_numel(shape.input_shape());
        std::vector<std::byte> expected_y(outputs * dtype_size(dtype));
        std::vector<std::byte> expected_dx(inputs * dtype_size(dtype));
        cpu::conv2d_forward({.shape = shape,
                             .dtype = dtype,
                             .x = in.cpu_x.data(),
                             .w = in.cpu_w.data(),
                             .bias = bias,
                             .y = expected_y.data()});
        cpu::conv2d_backward_data({.shape = shape,
                                   .dtype = dtype,
                                   .dy = in.cpu_dy.data(),
                                   .w = in.cpu_w.data(),
                                   .dx = expected_dx.data()});
        SimtBuffer y(dtype, std::vector<float>(outputs, NAN));
        SimtBuffer dx(dtype, std::vector<float>(inputs, NAN));
        SimtBuffer y_workspace = SimtBuffer::f32(splits * outputs);
        SimtBuffer dx_workspace = SimtBuffer::f32(splits * inputs);
        cuda::conv2d_forward({.shape = shape,
                              .dtype = dtype,
                              .x = in.x.data(),
                              .w = in.w.data(),
                              .bias = bias,
                              .y = y.data(),
                              .workspace = y_workspace.data(),
                              .fp32_math = engine.math},
                             nullptr, {.split_k = splits});
        if (!with_bias) {  // the input gradient has no bias: run it once
          cuda::conv2d_backward_data({.shape = shape,
                                      .dtype = dtype,
                                      .dy = in.dy.data(),
                                      .w = in.w.data(),
                                      .dx = dx.data(),
                                      .workspace = dx_workspace.data(),
                                      .fp32_math = engine.math},
                                     nullptr, {.split_k = splits});
        }
        EXPECT_LE(relative_difference(y.values(), decode(dtype, expected_y.data(), outputs)),
                  engine.tolerance());
        if (!with_bias) {
          EXPECT_LE(relative_difference(dx.values(), decode(dtype, expected_dx.data(), inputs)),
                    engine.tolerance());
        }
      }
    }
  }
}

// The filter gradient with `algo`, accumulating onto earlier gradients (the second micro-batch
// of a step) and with a bias, against the CPU twin; split partials summed by each tile's last
// split (sums_in_gemm: counters given) or by a second launch.
void expect_filter_grad_matches_cpu(const Conv2dShape& shape, const Engine& engine,
                                    const ConvAlgo& algo, bool sums_in_gemm) {
  Operands in(shape, engine);
  const int64_t filters = shape_numel(shape.filter_shape());
  const std::vector<float> previous = random_values(filters, 5);
  const std::vector<float> previous_bias = random_values(shape.out_channels, 6);
  std::vector<float> expected = previous, expected_bias = previous_bias;
  cpu::conv2d_backward_filter({.shape = shape,
                               .dtype = engine.dtype,
                               .x = in.cpu_x.data(),
                               .dy = in.cpu_dy.data(),
                               .dw = expected.data(),
                               .accumulate = true});
  // The bias gradient sums dy itself, on no engine's tensor cores.
  std::vector<float> unused = previous;
  cpu::conv2d_backward_filter({.shape = shape,
                               .dtype = engine.dtype,
                               .x = in.x.data(),
                               .dy = in.dy.data(),
                               .dw = unused.data(),
                               .dbias = expected_bias.data(),
                               .accumulate = true});
  SimtBuffer actual(DType::f32, previous), actual_bias(DType::f32, previous_bias);
  SimtBuffer workspace =
      SimtBuffer::f32(cuda::conv2d_backward_filter_workspace_bytes(shape, algo) / 4);
  SimtBuffer counters(std::vector<int32_t>(
      std::max<size_t>(
          cuda::conv2d_split_counters_bytes(shape, ConvPass::backward_filter, algo) / 4, 1),
      0));
  cuda::conv2d_backward_filter(
      {.shape = shape,
       .dtype = engine.dtype,
       .x = in.x.data(),
       .dy = in.dy.data(),
       .dw = actual.data(),
       .dbias = actual_bias.floats(),
       .accumulate = true,
       .workspace = workspace.data(),
       .split_counters = sums_in_gemm ? reinterpret_cast<unsigned*>(counters.ints()) : nullptr,
       .fp32_math = engine.math},
      nullptr, algo);
  EXPECT_LE(relative_difference(actual.values(), expected), testing::kConvF32Tolerance);
  EXPECT_LE(relative_difference(actual_bias.values(), expected_bias), testing::kConvF32Tolerance);
}

TEST(ConvSimt, BackwardFilterMatchesCpuWithAndWithoutSplitK) {
  for (const Engine& engine : conv_engines()) {
    for (const auto& [name, shape] : simt_cases()) {
      for (int splits : {1, 3}) {
        SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + engine.name() +
                     " splits=" + std::to_string(splits));
        expect_filter_grad_matches_cpu(shape, engine, {.split_k = splits}, false);
      }
    }
  }
}

// The tensor-core filter gradients through x padded to their 16-byte vector (8 bf16, 4 tf32;
// conv_channel_padding.cuh): the stem's 3 channels, 5, and 19 (several vectors a pixel), with
// and without split K (summed in the GEMM), accumulating onto earlier gradients, with a bias;
// the fp32 SIMT engine reads x as it is whatever the algorithm says.
TEST(ConvSimt, BackwardFilterThroughPaddedChannelsMatchesCpu) {
  for (const Engine& engine : conv_engines()) {
    for (const auto& [name, shape] :
         simt_cases_named({"7x7 s2 p3 stem", "3x3 s2 p1 odd", "pointwise, odd N"})) {
      const Conv2dBackwardFilterArgs engine_args{
          .shape = shape, .dtype = engine.dtype, .dw_dtype = DType::f32, .fp32_math = engine.math};
      const int64_t vector = engine.dtype == DType::bf16 ? 8 : 4;
      const int64_t channels =
          cuda::filter_grad_channels(engine_args, {.padding = ChannelPadding::vector});
      if (engine.math == Fp32Math::exact && engine.dtype == DType::f32) {
        EXPECT_EQ(channels, shape.in_channels);
      } else {
        EXPECT_EQ(channels, (shape.in_channels + vector - 1) / vector * vector);
      }
      EXPECT_EQ(cuda::filter_grad_channels(engine_args, {.padding = ChannelPadding::none}),
                shape.in_channels);
      for (int splits : {1, 3}) {
        SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + engine.name() +
                     " splits=" + std::to_string(splits));
        expect_filter_grad_matches_cpu(
            shape, engine, {.split_k = splits, .padding = ChannelPadding::vector}, true);
      }
    }
  }
}

// The three passes with K split, their partials summed by each output tile's last split to
// finish (split counters given) against the same passes summing them in a second launch:
// the same bits, in one level (3 splits) and in two (20: groups of 8 and a last one of 4, some
// splits with no K at all), with the filter gradient accumulating; the counters are left zero, so
// the next call (and a replayed graph) finds them as it needs them. Under ThreadSanitizer (40 of
// its conv suite's 86 s with all three shapes) one shape: the sums' barriers and counters are
// the same code at every shape, and this one has two tiles each way and sums both 4 columns a
// thread (the forward's 140) and 1 (the gradients' 19); the plain and ASan runs take all three.
TEST(ConvSimt, SplitKSumInTheGemmGivesTheSecondLaunchsBits) {
#if defined(__SANITIZE_THREAD__)
  const std::vector<SimtCase> cases = simt_cases_named({"pointwise, M and N over two tiles"});
#else
  const std::vector<SimtCase> cases =
      simt_cases_named({"3x3 long K", "pointwise, M and N over two tiles",
                        "1x1 s2, M and N over two tiles, vector loads"});
#endif
  for (const Engine& engine : conv_engines()) {
    const DType dtype = engine.dtype;
    for (const auto& [name, shape] : cases) {
      for (const int splits : {3, 20}) {
        SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + engine.name() +
                     " splits=" + std::to_string(splits));
        const ConvAlgo algo{.split_k = splits};
        Operands in(shape, engine);
        const int64_t outputs = shape_numel(shape.output_shape());
        const int64_t inputs = shape_numel(shape.input_shape());
        const int64_t filters = shape_numel(shape.filter_shape());
        const std::vector<float> previous = random_values(filters, 5);
        const auto counters_for = [&](ConvPass pass) {
          return SimtBuffer(std::vector<int32_t>(
              std::max<size_t>(cuda::conv2d_split_counters_bytes(shape, pass, algo) / 4, 1), 0));
        };
        struct Run {
          SimtBuffer y, dx, dw;
        };
        const auto run = [&](bool in_gemm) {
          Run out{SimtBuffer(dtype, std::vector<float>(outputs, NAN)),
                  SimtBuffer(dtype, std::vector<float>(inputs, NAN)),
                  SimtBuffer(DType::f32, previous)};
          SimtBuffer forward_counters = counters_for(ConvPass::forward);
          SimtBuffer data_counters = counters_for(ConvPass::backward_data);
          SimtBuffer filter_counters = counters_for(ConvPass::backward_filter);
          const auto counters = [&](SimtBuffer& buffer) {
            return in_gemm ? reinterpret_cast<unsigned*>(buffer.ints()) : nullptr;
          };
          SimtBuffer y_workspace = SimtBuffer::f32(splits * outputs);
          SimtBuffer dx_workspace = SimtBuffer::f32(splits * inputs);
          SimtBuffer dw_workspace =
              SimtBuffer::f32(cuda::filter_grad_workspace_bytes(shape, splits) / 4);
          cuda::conv2d_forward({.shape = shape,
                                .dtype = dtype,
                                .x = in.x.data(),
                                .w = in.w.data(),
                                .y = out.y.data(),
                                .workspace = y_workspace.data(),
                                .split_counters = counters(forward_counters),
                                .fp32_math = engine.math},
                               nullptr, algo);
          cuda::conv2d_backward_data({.shape = shape,
                                      .dtype = dtype,
                                      .dy = in.dy.data(),
                                      .w = in.w.data(),
                                      .dx = out.dx.data(),
                                      .workspace = dx_workspace.data(),
                                      .split_counters = counters(data_counters),
                                      .fp32_math = engine.math},
                                     nullptr, algo);
          cuda::conv2d_backward_filter({.shape = shape,
                                        .dtype = dtype,
                                        .x = in.x.data(),
                                        .dy = in.dy.data(),
                                        .dw = out.dw.data(),
                                        .accumulate = true,
                                        .workspace = dw_workspace.data(),
                                        .split_counters = counters(filter_counters),
                                        .fp32_math = engine.math},
                                       nullptr, algo);
          for (const SimtBuffer* buffer : {&forward_counters, &data_counters, &filter_counters}) {
            const std::vector<int32_t> left = buffer->int_values();
            EXPECT_EQ(std::count(left.begin(), left.end(), 0), static_cast<int64_t>(left.size()))
                << "counters left non-zero";
          }
          return out;
        };
        const Run second_launch = run(false), in_gemm = run(true);
        EXPECT_EQ(in_gemm.y.values(), second_launch.y.values());
        EXPECT_EQ(in_gemm.dx.values(), second_launch.dx.values());
        EXPECT_EQ(in_gemm.dw.values(), second_launch.dw.values());
        // And both are the convolution: the forward against the CPU twin.
        std::vector<std::byte> expected_y(outputs * dtype_size(dtype));
        cpu::conv2d_forward({.shape = shape,
                             .dtype = dtype,
                             .x = in.cpu_x.data(),
                             .w = in.cpu_w.data(),
                             .y = expected_y.data()});
        EXPECT_LE(
            relative_difference(in_gemm.y.values(), decode(dtype, expected_y.data(), outputs)),
            engine.tolerance());
      }
    }
  }
}

// The order the split sums follow (split_sum_group): one level up to 8 splits, then groups of
// about sqrt(splits), at least 8; the counters a launch needs follow from it.
TEST(ConvSimt, SplitSumGroupsAndCounters) {
  EXPECT_EQ(cuda::split_sum_group(3), 8);
  EXPECT_EQ(cuda::split_sum_group(64), 8);
  EXPECT_EQ(cuda::split_sum_group(65), 9);
  EXPECT_EQ(cuda::split_sum_group(264), 17);
  EXPECT_EQ(cuda::split_sum_counters(100, 100, 1), 0);
  EXPECT_EQ(cuda::split_sum_counters(100, 100, 3), 4 * 2);   // 2 x 2 tiles, 1 group + 1
  EXPECT_EQ(cuda::split_sum_counters(64, 64, 264), 1 * 17);  // 16 groups + 1
  EXPECT_EQ(cuda::split_sum_counters(65, 200, 20), 8 * 4);   // 2 x 4 tiles, 3 groups + 1
}

TEST(ConvSimt, EntryPointsWriteBf16FilterGradients) {
  const Conv2dShape shape = conv_shape(2, 5, 7, 3, 5, 3, 3, 1, 1);
  Operands in(shape, Engine{DType::bf16, Fp32Math::exact});
  const int64_t filters = shape_numel(shape.filter_shape());
  std::vector<std::byte> expected(filters * 2);
  SimtBuffer actual(DType::bf16, std::vector<float>(filters, NAN));
  cpu::conv2d_backward_filter({.shape = shape,
                               .dtype = DType::bf16,
                               .x = in.x.data(),
                               .dy = in.dy.data(),
                               .dw_dtype = DType::bf16,
                               .dw = expected.data()});
  SimtBuffer workspace = SimtBuffer::f32(cuda::conv2d_backward_filter_workspace_bytes(shape) / 4);
  cuda::conv2d_backward_filter({.shape = shape,
                                .dtype = DType::bf16,
                                .x = in.x.data(),
                                .dy = in.dy.data(),
                                .dw_dtype = DType::bf16,
                                .dw = actual.data(),
                                .workspace = workspace.data()},
                               nullptr);
  EXPECT_LE(relative_difference(actual.values(), decode(DType::bf16, expected.data(), filters)),
            testing::kConvBf16Tolerance);
}

TEST(ConvSimt, GemmLaunchRefusesDimensionsPastThe32BitIndices) {
  // Refused before any launch, so null operands are never read.
  const auto gemm = [](int64_t m, int64_t n, int64_t k) {
    cuda::gemm_launch<float>(m, n, k, cuda::KContiguousOperand<float>{nullptr, k},
                             cuda::KContiguousOperand<float>{nullptr, k},
                             cuda::StoreToMatrix<float>{nullptr, n, nullptr, false}, 1, nullptr);
  };
  const int64_t limit = cuda::kGemmDimLimit;
  EXPECT_THROW(gemm(limit, 1, 1), std::invalid_argument);
  EXPECT_THROW(gemm(1, limit, 1), std::invalid_argument);
  EXPECT_THROW(gemm(1, 1, limit), std::invalid_argument);
}

TEST(ConvSimt, SplitKChoiceFillsTheGpuWithoutThinSplits) {
  // Few output tiles and a long reduction: split until ~264 blocks, never below 256 of K.
  EXPECT_EQ(cuda::choose_split_k(64, 576, 100352, 64, 64), 30);
  EXPECT_EQ(cuda::choose_split_k(64, 576, 1000, 64, 64), 3);
  EXPECT_EQ(cuda::choose_split_k(64, 64, 100, 64, 64), 1);              // short K
  EXPECT_EQ(cuda::choose_split_k(4096, 4096, 100000, 64, 64), 1);       // enough tiles
  EXPECT_EQ(cuda::choose_split_k(1, 1, int64_t{1} << 30, 64, 64), 32);  // capped
  // The filter gradient splits until the GPU is full: the stem at 224 px, batch 128 (64 x 147
  // over 1.6 M pixels, 2 tiles) gets 132 splits, not 32; layer1.0.conv1 (1 tile) 264.
  const Conv2dShape stem = make_conv2d_shape(128, 224, 3, 64, 7, 2, 3);
  EXPECT_EQ(cuda::filter_grad_splits(stem, {}), 132);
  const Conv2dShape pointwise = make_conv2d_shape(128, 56, 64, 64, 1, 1, 0);
  EXPECT_EQ(cuda::filter_grad_splits(pointwise, {}), 264);
  EXPECT_EQ(cuda::filter_grad_splits(pointwise, {.split_k = 3}), 3);
  for (int splits = 1; splits <= 7; ++splits) {
    const int64_t per_split = cuda::k_per_split(1000, splits, 16);
    EXPECT_EQ(per_split % 16, 0);
    EXPECT_GE(per_split * splits, 1000);
  }
}

}  // namespace
}  // namespace engine
