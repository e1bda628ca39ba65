// The CUDA conv2d kernels (implicit GEMM: fp32 SIMT for f32, tf32 tensor cores for f32 under
// Fp32Math::tf32, ldmatrix + mma.sync bf16 tensor cores for bf16) through their launchers
// under the SIMT emulator, against the CPU twins (for tf32, the CPU's fp32 conv of the
// operands rounded to tf32, whose products are exact in fp32): the forward and the input
// gradient (with the residual's gradient added in its epilogue, and strided without the
// stride's zeros) on the shapes of conv_simt_cases.h, which cross every tile edge: M, N and K
// not multiples of the tiles, several tiles in each direction, padding, stride, dilation and
// the pointwise fast path. K split and the filter gradients: test_conv_simt_split_k.cpp.
// The kernels under test, compiled by g++ for the emulator in simt_conv_kernels.cpp.
#include "simt_conv_kernels.h"

#include <gtest/gtest.h>

#include <string>

#include "conv_engines.h"
#include "conv_reference.h"
#include "conv_simt_cases.h"
#include "elementwise_cases.h"
#include "kernels/cpu/activation.h"
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
  const std::vector<ConvCase> cases =
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
std::vector<ConvCase> strided_data_grad_cases() {
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

}  // namespace
}  // namespace engine
