// conv2d and linear on the CPU against the naive double-precision reference, over every
// case of conv_cases() (the edge cases, then ResNet-50's layers) in f32 and bf16, plus
// finite-difference checks of the gradients and the argument errors. The tap classes (the
// products that skip the padding) have their own file, test_conv_tap_classes_cpu.cpp.
#include <gtest/gtest.h>

#include "conv_cpu_fixtures.h"
#include "conv_reference.h"
#include "kernels/cpu/isa.h"
#include "kernels/ops.h"
#include "portable_loops.h"

namespace engine {
namespace {

using testing::conv_cases;
using testing::ConvTensors;
using testing::kBf16Tolerance;
using testing::kF32Tolerance;
using testing::on_1_2_and_3_threads;
using testing::random_values;
using testing::relative_error;
using testing::tolerance;

TEST(ConvCpu, ForwardMatchesNaiveReference) {
  Stream stream;
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const auto& [name, shape] : conv_cases()) {
      SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + std::string(dtype_name(dtype)));
      ConvTensors t(shape, dtype);
      Tensor y = Tensor::empty(shape.output_shape(), dtype);
      fill(y, NAN, stream);  // overwritten, never read
      conv2d_forward(shape, {.x = t.x, .w = t.w, .bias = t.bias, .y = y, .workspace = {}}, stream);
      const auto expected =
          testing::reference_conv_forward(shape, t.x_values, t.w_values, &t.bias_values);
      EXPECT_LE(relative_error(y.to_floats(stream), expected), tolerance(dtype));
    }
  }
}

TEST(ConvCpu, BackwardDataMatchesNaiveReference) {
  Stream stream;
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const auto& [name, shape] : conv_cases()) {
      SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + std::string(dtype_name(dtype)));
      ConvTensors t(shape, dtype);
      Tensor dx = Tensor::empty(shape.input_shape(), dtype);
      fill(dx, NAN, stream);  // overwritten, never read
      conv2d_backward_data(shape, {.dy = t.dy, .w = t.w, .dx = dx, .workspace = {}}, stream);
      const auto expected = testing::reference_conv_backward_data(shape, t.dy_values, t.w_values);
      EXPECT_LE(relative_error(dx.to_floats(stream), expected), tolerance(dtype));
    }
  }
}

// The bf16 filter gradient (accumulated onto dW: fp32 sums of exact products, so held to fp32's
// tolerance), forward and input gradient on each way of multiplying bf16 this CPU has (AMX
// tiles, AVX512_BF16, widened to fp32): every case, including the channel counts that the
// bf16 kernels take with a zero channel (odd C) or an im2col (C not a multiple of 32), and a
// stem whose filter gradient sums two 1024-pixel steps and an odd last pixel.
TEST(ConvCpu, Bf16OnEveryWayOfMultiplyingMatchesNaiveReference) {
  Stream stream;
  std::vector<testing::ConvCase> cases = conv_cases();
  cases.push_back({"stem, 1125 pixels", testing::conv_shape(5, 30, 30, 3, 64, 7, 7, 2, 3)});
  std::vector<cpu::Bf16Products> ways = {cpu::Bf16Products::kWidened};
  if (cpu::cpu_has_avx512_bf16()) ways.push_back(cpu::Bf16Products::kAvx512Bf16);
  if (cpu::cpu_has_amx_bf16()) ways.push_back(cpu::Bf16Products::kAmx);
  for (cpu::Bf16Products way : ways) {
    const testing::ForcedBf16Products forced(way);
    ASSERT_EQ(cpu::bf16_products(), way);
    for (const auto& [name, shape] : cases) {
      SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + cpu::bf16_products_name(way));
      ConvTensors t(shape, DType::bf16);
      Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32);  // fp32 master gradient
      fill(dw, 0.5f, stream);
      conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::accumulate), stream);
      std::vector<double> expected_dw =
          testing::reference_conv_backward_filter(shape, t.x_values, t.dy_values);
      for (double& value : expected_dw)
        value += 0.5;  // accumulated onto what dW held
      EXPECT_LE(relative_error(dw.to_floats(stream), expected_dw), kF32Tolerance);
      Tensor y = Tensor::empty(shape.output_shape(), DType::bf16);
      fill(y, NAN, stream);
      conv2d_forward(shape, {.x = t.x, .w = t.w, .bias = t.bias, .y = y, .workspace = {}}, stream);
      EXPECT_LE(
          relative_error(y.to_floats(stream), testing::reference_conv_forward(
                                                  shape, t.x_values, t.w_values, &t.bias_values)),
          kBf16Tolerance);
      Tensor dx = Tensor::empty(shape.input_shape(), DType::bf16);
      fill(dx, NAN, stream);
      conv2d_backward_data(shape, {.dy = t.dy, .w = t.w, .dx = dx, .workspace = {}}, stream);
      EXPECT_LE(relative_error(dx.to_floats(stream), testing::reference_conv_backward_data(
                                                         shape, t.dy_values, t.w_values)),
                kBf16Tolerance);
    }
  }
}

TEST(ConvCpu, BackwardFilterAndBiasMatchNaiveReference) {
  Stream stream;
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const auto& [name, shape] : conv_cases()) {
      SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + std::string(dtype_name(dtype)));
      ConvTensors t(shape, dtype);
      Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32);  // fp32 master gradient
      Tensor dbias = Tensor::empty({shape.out_channels}, DType::f32);
      conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::overwrite, dbias), stream);
      const auto expected = testing::reference_conv_backward_filter(shape, t.x_values, t.dy_values);
      EXPECT_LE(relative_error(dw.to_floats(stream), expected), kF32Tolerance);
      EXPECT_LE(
          relative_error(dbias.to_floats(stream), testing::reference_bias_grad(shape, t.dy_values)),
          kF32Tolerance);
    }
  }
}

// Forward (with bias), input gradient and filter gradient (overwriting, then accumulating onto
// what dW held) of one f32 case against the naive reference.
void expect_f32_passes_match_reference(const Conv2dShape& shape, Stream& stream) {
  ConvTensors t(shape, DType::f32);
  Tensor y = Tensor::empty(shape.output_shape(), DType::f32);
  fill(y, NAN, stream);
  conv2d_forward(shape, {.x = t.x, .w = t.w, .bias = t.bias, .y = y, .workspace = {}}, stream);
  EXPECT_LE(relative_error(y.to_floats(stream), testing::reference_conv_forward(
                                                    shape, t.x_values, t.w_values, &t.bias_values)),
            kF32Tolerance);
  Tensor dx = Tensor::empty(shape.input_shape(), DType::f32);
  fill(dx, NAN, stream);
  conv2d_backward_data(shape, {.dy = t.dy, .w = t.w, .dx = dx, .workspace = {}}, stream);
  EXPECT_LE(relative_error(dx.to_floats(stream),
                           testing::reference_conv_backward_data(shape, t.dy_values, t.w_values)),
            kF32Tolerance);
  Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32);
  fill(dw, NAN, stream);  // overwritten, never read
  conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::overwrite), stream);
  std::vector<double> expected_dw =
      testing::reference_conv_backward_filter(shape, t.x_values, t.dy_values);
  EXPECT_LE(relative_error(dw.to_floats(stream), expected_dw), kF32Tolerance);
  fill(dw, 0.5f, stream);
  conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::accumulate), stream);
  for (double& value : expected_dw)
    value += 0.5;
  EXPECT_LE(relative_error(dw.to_floats(stream), expected_dw), kF32Tolerance) << "accumulated";
}

TEST(ConvCpu, ManyColumnChunksMatchNaiveReference) {
  // 969 output rows: the fused forward (and the stride-1 input gradient, a forward of the
  // flipped filters) splits them into four chunks of 252 rows with a short last one, spread
  // over the threads; the filter gradient sums two whole-image chunks.
  Stream stream;
  expect_f32_passes_match_reference(testing::conv_shape(3, 17, 19, 24, 40, 3, 3, 1, 1), stream);
}

TEST(ConvCpu, DirectFilterGradientMatchesNaiveReference) {
  // On AVX-512 machines a filter gradient with 32 or more input channels reads the input in
  // place, one product per tap over runs of output pixels, in chunks of at most 384 output
  // rows that may start and end inside an image and inside an output row.
  Stream stream;
  for (const Conv2dShape& shape : {
           // taps * C = 720: chunks shared by the threads, 585 rows in two chunks of 293, the
           // second starting in image 1's row 7 at column 7.
           testing::conv_shape(3, 15, 13, 80, 40, 3, 3, 1, 1),
           // Stride 2: 780 rows in three chunks of 260, each input pixel run 2 apart.
           testing::conv_shape(5, 24, 26, 80, 24, 3, 3, 2, 1),
           // taps * C = 288: groups of images, each thread summing its own.
           testing::conv_shape(4, 12, 10, 32, 16, 3, 3, 1, 1),
           // Dilated taps, strided groups, a 5x3 filter without padding.
           testing::conv_shape(2, 9, 9, 32, 8, 3, 3, 1, 2, 2),
           testing::conv_shape(3, 10, 12, 48, 20, 3, 3, 2, 1),
           testing::conv_shape(2, 9, 7, 40, 12, 5, 3, 1, 0),
           // Padding 2 on a 3x3 filter: a tap's input runs are whole input rows, which follow
           // each other in the input but not in the output, two pixels wider.
           testing::conv_shape(2, 6, 5, 32, 8, 3, 3, 1, 2),
       }) {
    SCOPED_TRACE(shape.str());
    ConvTensors t(shape, DType::f32);
    Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32);
    conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::overwrite), stream);
    EXPECT_LE(relative_error(dw.to_floats(stream), testing::reference_conv_backward_filter(
                                                       shape, t.x_values, t.dy_values)),
              kF32Tolerance);
  }
}

TEST(ConvCpu, FilterGradientDoesNotDependOnTheThreadCount) {
  // Its summation order must not follow the threads, on AVX-512 machines: taps * C = 144 and
  // 20 images is the grouped filter gradient (10 groups of 2 images); taps * C = 288, the
  // direct one in groups; taps * C = 864 on a 4x4 map, the direct one with the channels
  // shared out, as at stride 2 on a 12x12 map.
  // In bf16 (on the bf16 GEMM where the CPU has one), 64 channels over 1105 output pixels:
  // two steps of 1024 pixels and an odd count.
  const std::vector<std::pair<Conv2dShape, DType>> cases = {
      {testing::conv_shape(20, 8, 8, 16, 32, 3, 3, 1, 1), DType::f32},
      {testing::conv_shape(20, 8, 8, 32, 32, 3, 3, 1, 1), DType::f32},
      {testing::conv_shape(4, 4, 4, 96, 40, 3, 3, 1, 1), DType::f32},
      {testing::conv_shape(3, 12, 12, 96, 40, 3, 3, 2, 1), DType::f32},
      {testing::conv_shape(5, 13, 17, 64, 40, 3, 3, 1, 1), DType::bf16}};
  for (const auto& [shape, dtype] : cases) {
    SCOPED_TRACE(shape.str() + " " + std::string(dtype_name(dtype)));
    ConvTensors t(shape, dtype);
    Stream stream;
    const std::vector<std::vector<float>> results = on_1_2_and_3_threads([&] {
      Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32);
      conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::overwrite), stream);
      return dw.to_floats(stream);
    });
    EXPECT_EQ(results[0], results[1]);
    EXPECT_EQ(results[0], results[2]);
    EXPECT_LE(relative_error(results[0], testing::reference_conv_backward_filter(shape, t.x_values,
                                                                                 t.dy_values)),
              kF32Tolerance);
  }
}

TEST(ConvCpu, PortableLoopsMatchNaiveReference) {
  // On a CPU with AVX-512 the tests above run the fused AVX-512 paths; these are the ones a
  // CPU without it takes (OpenBLAS or the blocked loop), in f32, each way for every case: per
  // tap class (classes without a tap inside included), over im2col's full rows, and the
  // estimate's choice.
  const testing::PortableLoops portable;
  Stream stream;
  for (const std::optional<bool> classes :
       {std::optional<bool>{true}, std::optional<bool>{false}, std::optional<bool>{}}) {
    const testing::ForcedTapClasses forced(classes);
    for (const auto& [name, shape] : conv_cases()) {
      SCOPED_TRACE(std::string(name) + " " + shape.str() + " tap classes " +
                   (classes ? (*classes ? "on" : "off") : "auto"));
      expect_f32_passes_match_reference(shape, stream);
    }
  }
}

TEST(ConvCpu, BackwardFilterAccumulatesAndRoundsToBf16) {
  Stream stream;
  const Conv2dShape shape = testing::conv_shape(2, 6, 6, 5, 7, 3, 3, 1, 1);
  ConvTensors t(shape, DType::bf16);
  auto expected = testing::reference_conv_backward_filter(shape, t.x_values, t.dy_values);
  auto expected_bias = testing::reference_bias_grad(shape, t.dy_values);
  Tensor dw = Tensor::empty(shape.filter_shape(), DType::bf16);
  Tensor dbias = Tensor::empty({shape.out_channels}, DType::f32);
  conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::overwrite, dbias), stream);
  conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::accumulate, dbias),
                         stream);  // second micro-batch
  for (double& v : expected)
    v *= 2;
  for (double& v : expected_bias)
    v *= 2;
  EXPECT_LE(relative_error(dw.to_floats(stream), expected), 2 * kBf16Tolerance);
  EXPECT_LE(relative_error(dbias.to_floats(stream), expected_bias), kF32Tolerance);
}

// Centered finite differences of L = sum(y * g) with respect to a few x and w elements. The
// convolution is linear in each argument, so the difference is exact up to fp32 rounding.
TEST(ConvCpu, GradientsMatchFiniteDifferences) {
  Stream stream;
  const Conv2dShape shape = testing::conv_shape(2, 5, 6, 3, 4, 3, 3, 2, 1);
  ConvTensors t(shape, DType::f32);
  auto loss = [&](const Tensor& x, const Tensor& w) {
    Tensor y = Tensor::empty(shape.output_shape(), DType::f32);
    conv2d_forward(shape, {.x = x, .w = w, .bias = Tensor{}, .y = y, .workspace = {}}, stream);
    double sum = 0;
    for (int64_t i = 0; i < y.numel(); ++i)
      sum += double(y.data<float>()[i]) * t.dy_values[i];
    return sum;
  };
  Tensor dx = Tensor::empty(shape.input_shape(), DType::f32);
  Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32);
  conv2d_backward_data(shape, {.dy = t.dy, .w = t.w, .dx = dx, .workspace = {}}, stream);
  conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::overwrite), stream);
  const float h = 1e-2f;
  for (int64_t i = 0; i < t.x.numel(); i += 17) {
    Tensor plus = t.x.clone(stream), minus = t.x.clone(stream);
    plus.data<float>()[i] += h;
    minus.data<float>()[i] -= h;
    const double numeric = (loss(plus, t.w) - loss(minus, t.w)) / (2 * h);
    EXPECT_NEAR(dx.data<float>()[i], numeric, 1e-3 * std::max(1.0, std::abs(numeric)))
        << "x[" << i << "]";
  }
  for (int64_t i = 0; i < t.w.numel(); i += 7) {
    Tensor plus = t.w.clone(stream), minus = t.w.clone(stream);
    plus.data<float>()[i] += h;
    minus.data<float>()[i] -= h;
    const double numeric = (loss(t.x, plus) - loss(t.x, minus)) / (2 * h);
    EXPECT_NEAR(dw.data<float>()[i], numeric, 1e-3 * std::max(1.0, std::abs(numeric)))
        << "w[" << i << "]";
  }
}

TEST(LinearCpu, MatchesReferenceGemm) {
  Stream stream;
  Tensor no_workspace;  // undefined: the CPU needs no workspace
  const int64_t rows = 5, in = 37, out = 10;
  const auto x = random_values(rows * in, 5), w = random_values(out * in, 6),
             b = random_values(out, 7);
  const auto dy = random_values(rows * out, 8);
  Tensor tx = Tensor::from_floats({rows, in}, x), tw = Tensor::from_floats({out, in}, w);
  Tensor tb = Tensor::from_floats({out}, b), tdy = Tensor::from_floats({rows, out}, dy);
  Tensor y = Tensor::empty({rows, out}, DType::f32), dx = Tensor::empty({rows, in}, DType::f32);
  Tensor dw = Tensor::empty({out, in}, DType::f32), db = Tensor::empty({out}, DType::f32);
  linear_forward({.x = tx, .w = tw, .bias = tb, .y = y}, stream);
  linear_backward_data({.dy = tdy, .w = tw, .dx = dx}, stream);
  linear_backward_weight({.x = tx,
                          .dy = tdy,
                          .dw = dw,
                          .dbias = db,
                          .workspace = no_workspace,
                          .write = GradWrite::overwrite},
                         stream);
  std::vector<double> y_ref(rows * out), dx_ref(rows * in, 0.0), dw_ref(out * in, 0.0),
      db_ref(out, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = b[o];
      for (int64_t i = 0; i < in; ++i) {
        sum += double(x[r * in + i]) * w[o * in + i];
        dx_ref[r * in + i] += double(dy[r * out + o]) * w[o * in + i];
        dw_ref[o * in + i] += double(dy[r * out + o]) * x[r * in + i];
      }
      y_ref[r * out + o] = sum;
      db_ref[o] += dy[r * out + o];
    }
  EXPECT_LE(relative_error(y.to_floats(stream), y_ref), kF32Tolerance);
  EXPECT_LE(relative_error(dx.to_floats(stream), dx_ref), kF32Tolerance);
  EXPECT_LE(relative_error(dw.to_floats(stream), dw_ref), kF32Tolerance);
  EXPECT_LE(relative_error(db.to_floats(stream), db_ref), kF32Tolerance);
}

TEST(ConvCpu, ArgumentErrorsNameTheTensorAndShape) {
  Stream stream;
  Tensor no_bias, no_workspace;  // undefined: no bias; the CPU needs no workspace
  const Conv2dShape shape = testing::conv_shape(1, 4, 4, 3, 8, 3, 3, 1, 1);
  Tensor x = Tensor::empty(shape.input_shape(), DType::f32);
  Tensor w = Tensor::empty({8, 3, 3, 4}, DType::f32);  // wrong in_channels
  Tensor y = Tensor::empty(shape.output_shape(), DType::f32);
  try {
    conv2d_forward(shape, {.x = x, .w = w, .bias = Tensor{}, .y = y, .workspace = {}}, stream);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("conv2d_forward: w is f32[8, 3, 3, 4] on cpu, expected f32[8, 3, 3, 3]"),
              std::string::npos)
        << error.what();
  }
  Tensor w_ok = Tensor::empty(shape.filter_shape(), DType::f32);
  Tensor bf16_y = Tensor::empty(shape.output_shape(), DType::bf16);
  EXPECT_THROW(
      conv2d_forward(shape, {.x = x, .w = w_ok, .bias = Tensor{}, .y = bf16_y, .workspace = {}},
                     stream),
      Error);
  Tensor wrong_bias = Tensor::empty({7}, DType::f32);
  EXPECT_THROW(conv2d_forward(
                   shape, {.x = x, .w = w_ok, .bias = wrong_bias, .y = y, .workspace = {}}, stream),
               Error);
  Conv2dShape empty_output = shape;
  empty_output.pad_h = 0;
  empty_output.in_h = 2;
  EXPECT_THROW(
      conv2d_forward(empty_output, {.x = x, .w = w_ok, .bias = Tensor{}, .y = y, .workspace = {}},
                     stream),
      Error);
  Tensor dw_bf16_for_f32 = Tensor::empty(shape.filter_shape(), DType::bf16);
  Tensor dy = Tensor::empty(shape.output_shape(), DType::f32);
  EXPECT_THROW(conv2d_backward_filter(shape,
                                      {.x = x,
                                       .dy = dy,
                                       .dw = dw_bf16_for_f32,
                                       .dbias = no_bias,
                                       .workspace = no_workspace,
                                       .write = GradWrite::overwrite},
                                      stream),
               Error);
}

}  // namespace
}  // namespace engine
