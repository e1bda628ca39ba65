// The CUDA conv2d kernels with K split over blockIdx.z (partials summed by a second launch or
// by each output tile's last split) and the filter gradients, through their launchers under the
// SIMT emulator against the CPU twins, on the shapes of conv_simt_cases.h; with the split-K
// choice and the launchers' limits. The forward and input-gradient suites: test_conv_simt.cpp.
// The kernels under test, compiled by g++ for the emulator in simt_conv_kernels.cpp.
#include "simt_conv_kernels.h"

#include <gtest/gtest.h>

#include <string>

#include "conv_engines.h"
#include "conv_reference.h"
#include "conv_simt_cases.h"
#include "kernels/cpu/conv.h"
#include "simt_buffer.h"

namespace engine {
namespace {

using testing::conv_shape;
using testing::ConvCase;
using testing::decode;
using testing::Operands;
using testing::random_values;
using testing::simt_cases;
using testing::simt_cases_named;
using testing::SimtBuffer;

using Engine = testing::ConvEngine;
using testing::conv_engines;
using testing::relative_difference;

// Forward and input gradient with K split over blockIdx.z into fp32 partials, summed by
// splitk_reduce_kernel: a few of the cases (tiles crossed in M and N, scalar and 16-byte
// loads, the pointwise path, a long K). A forward with a bias never splits (the reduction adds
// none), so its case checks that the bias still arrives.
TEST(ConvSimt, ForwardAndBackwardDataMatchCpuWithSplitK) {
  const std::vector<ConvCase> cases =
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
  const std::vector<ConvCase> cases = simt_cases_named({"pointwise, M and N over two tiles"});
#else
  const std::vector<ConvCase> cases =
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
