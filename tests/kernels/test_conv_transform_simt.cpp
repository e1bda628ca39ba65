// The conv2d kernels reading their activation operand through a ConvInputTransform
// (kernels/cuda/conv_input_transform.cuh: BatchNorm-apply and ReLU fused into the operand
// loads of the forward and the filter gradient) under the SIMT emulator, against the plain CPU
// convolution of x transformed into a tensor first, act(x * scale[c] + shift[c]) rounded to
// x's dtype, as the unfused BatchNorm -> ReLU -> conv would read it. Every shift is positive, so
// a padding element transformed like data (act(shift) > 0) would show at every border pixel.
// The cases cross the operand paths: bf16 16-byte cp.async (channels a multiple of 8) and
// element loads (odd channels), tf32 16-byte (multiples of 4) and element, exact fp32; 3x3
// padded, strided, pointwise 1x1, 1x1 strided (im2col), K tails, M over two tiles, split-K.
// The kernels under test, compiled by g++ for the emulator in simt_conv_kernels.cpp.
#include "simt_conv_kernels.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "conv_engines.h"
#include "conv_reference.h"
#include "kernels/conv_input_value.h"
#include "kernels/cpu/conv.h"
#include "kernels/error.h"
#include "kernels/ops.h"
#include "simt_buffer.h"

namespace engine {
namespace {

using testing::conv_shape;
using testing::decode;
using testing::random_values;
using testing::round_to_tf32;
using testing::SimtBuffer;

// The tolerances of test_conv_simt.cpp (conv_engines.h): the transformed operand has the same
// bits on both sides (one fused multiply-add, rounded once to the dtype; tf32 rounds it when
// the fragment is read, as the reference rounds it before its fp32 conv), so what differs is
// the summation order. Filter gradients are fp32 for every dtype.
using Engine = testing::ConvEngine;
using testing::conv_engines;
using testing::relative_difference;

struct TransformCase {
  const char* name;
  Conv2dShape shape;
};

std::vector<TransformCase> transform_cases() {
  return {
      // 16 channels: bf16 and tf32 16-byte cp.async, the padding zero-filled by cp.async.
      {"3x3 s1 p1, 16-byte loads", conv_shape(2, 6, 5, 16, 24, 3, 3, 1, 1)},
      // 5 channels: element loads everywhere, the padding returned as 0 by load().
      {"3x3 s2 p1, odd channels", conv_shape(1, 7, 6, 5, 8, 3, 3, 2, 1)},
      // 12 channels: tf32's 16-byte loads, bf16's element loads.
      {"3x3 s1 p1, vectors of 4", conv_shape(1, 5, 5, 12, 8, 3, 3, 1, 1)},
      {"3x3 s2 p1, 16-byte loads", conv_shape(1, 7, 7, 16, 16, 3, 3, 2, 1)},
      // K = 360: a partial last K tile; M = 162 rows: two row tiles (forward).
      {"3x3 p1, K tail", conv_shape(1, 4, 4, 40, 8, 3, 3, 1, 1)},
      {"3x3 p1, M over two tiles", conv_shape(2, 9, 9, 8, 20, 3, 3, 1, 1)},
      // The pointwise path (KContiguous / RowContiguous operands), 16-byte and element.
      {"pointwise, 16-byte loads", conv_shape(2, 5, 5, 24, 16, 1, 1, 1, 0)},
      {"pointwise, odd channels", conv_shape(1, 5, 5, 19, 10, 1, 1, 1, 0)},
      // 1x1 stride 2 goes through im2col.
      {"1x1 s2, 16-byte loads", conv_shape(1, 9, 9, 16, 8, 1, 1, 2, 0)},
  };
}

// The per-channel coefficients: scales of both signs, shifts all positive (see above).
struct Coefficients {
  Coefficients(int64_t channels, bool relu_) : relu(relu_) {
    std::mt19937 rng(static_cast<uint32_t>(channels) * 7 + 1);
    std::uniform_real_distribution<float> scales(-1.5f, 1.5f), shifts(0.1f, 0.6f);
    for (int64_t c = 0; c < channels; ++c) {
      scale_values.push_back(scales(rng));
      shift_values.push_back(shifts(rng));
    }
  }
  std::vector<float> scale_values, shift_values;
  bool relu;
};

// x, w, dy in the engine's dtype (bf16-exact values, or for tf32 values with more bits than
// tf32 keeps), the coefficients as device buffers, and what the reference convolution reads:
// x transformed into a tensor, each value rounded to the dtype (and for tf32 then to tf32).
struct Operands {
  Operands(const Conv2dShape& shape, const Engine& engine, bool relu)
      : coefficients(shape.in_channels, relu),
        x_values(values(shape_numel(shape.input_shape()), 1, engine)),
        x(engine.dtype, x_values),
        w(engine.dtype, values(shape_numel(shape.filter_shape()), 2, engine)),
        dy(engine.dtype, values(shape_numel(shape.output_shape()), 3, engine)),
        scale(DType::f32, coefficients.scale_values),
        shift(DType::f32, coefficients.shift_values) {
    std::vector<float> a(x_values.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const size_t c = i % static_cast<size_t>(shape.in_channels);
      float v = conv_input_value(x_values[i], coefficients.scale_values[c],
                                 coefficients.shift_values[c], relu);
      if (engine.dtype == DType::bf16) v = static_cast<float>(bf16(v));
      if (engine.math == Fp32Math::tf32) v = round_to_tf32(v);
      a[i] = v;
    }
    cpu_a = testing::encode(engine.dtype, a);
    std::vector<float> filters = w.values(), grads = dy.values();
    if (engine.math == Fp32Math::tf32) {
      for (float& v : filters)
        v = round_to_tf32(v);
      for (float& v : grads)
        v = round_to_tf32(v);
    }
    cpu_w = testing::encode(engine.dtype, filters);
    cpu_dy = testing::encode(engine.dtype, grads);
  }
  static std::vector<float> values(int64_t n, uint32_t seed, const Engine& engine) {
    return random_values(n, seed, engine.math != Fp32Math::tf32);
  }
  ConvInputTransform transform() {
    return {.scale = scale.floats(), .shift = shift.floats(), .relu = coefficients.relu};
  }
  Coefficients coefficients;
  std::vector<float> x_values;
  SimtBuffer x, w, dy, scale, shift;
  std::vector<std::byte> cpu_a, cpu_w, cpu_dy;
};

void expect_forward_matches(const Conv2dShape& shape, const Engine& engine, bool relu, int splits) {
  const DType dtype = engine.dtype;
  Operands in(shape, engine, relu);
  const int64_t outputs = shape_numel(shape.output_shape());
  std::vector<std::byte> expected(outputs * dtype_size(dtype));
  cpu::conv2d_forward({.shape = shape,
                       .dtype = dtype,
                       .x = in.cpu_a.data(),
                       .w = in.cpu_w.data(),
                       .y = expected.data()});
  SimtBuffer y(dtype, std::vector<float>(outputs, NAN));
  SimtBuffer workspace = SimtBuffer::f32(splits * outputs);
  cuda::conv2d_forward({.shape = shape,
                        .dtype = dtype,
                        .x = in.x.data(),
                        .w = in.w.data(),
                        .y = y.data(),
                        .workspace = splits > 1 ? workspace.data() : nullptr,
                        .fp32_math = engine.math,
                        .input_transform = in.transform()},
                       nullptr, {.split_k = splits});
  EXPECT_LE(relative_difference(y.values(), decode(dtype, expected.data(), outputs)),
            engine.tolerance());
}

void expect_filter_grad_matches(const Conv2dShape& shape, const Engine& engine, bool relu,
                                int splits) {
  const DType dtype = engine.dtype;
  Operands in(shape, engine, relu);
  const int64_t filters = shape_numel(shape.filter_shape());
  std::vector<float> expected(filters, 0.f);
  cpu::conv2d_backward_filter({.shape = shape,
                               .dtype = dtype,
                               .x = in.cpu_a.data(),
                               .dy = in.cpu_dy.data(),
                               .dw = expected.data()});
  SimtBuffer dw = SimtBuffer::f32(filters);
  SimtBuffer workspace = SimtBuffer::f32(cuda::filter_grad_workspace_bytes(shape, splits) / 4);
  cuda::conv2d_backward_filter({.shape = shape,
                                .dtype = dtype,
                                .x = in.x.data(),
                                .dy = in.dy.data(),
                                .dw = dw.data(),
                                .workspace = workspace.data(),
                                .fp32_math = engine.math,
                                .input_transform = in.transform()},
                               nullptr, {.split_k = splits});
  EXPECT_LE(relative_difference(dw.values(), expected), testing::kConvF32Tolerance);
}

TEST(ConvTransformSimt, ForwardMatchesCpuOfTheTransformedInput) {
  for (const Engine& engine : conv_engines()) {
    for (const auto& [name, shape] : transform_cases()) {
      SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + engine.name());
      expect_forward_matches(shape, engine, true, 1);
    }
  }
}

TEST(ConvTransformSimt, FilterGradientMatchesCpuOfTheTransformedInput) {
  for (const Engine& engine : conv_engines()) {
    for (const auto& [name, shape] : transform_cases()) {
      SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + engine.name());
      expect_filter_grad_matches(shape, engine, true, 1);
    }
  }
}

// Split K: each split's first K tile starts the transform's channel bookkeeping afresh.
TEST(ConvTransformSimt, SplitKMatchesCpuOfTheTransformedInput) {
  const std::vector<TransformCase> cases = {
      {"3x3 s1 p1, 16-byte loads", conv_shape(2, 6, 5, 16, 24, 3, 3, 1, 1)},
      {"3x3 s2 p1, odd channels", conv_shape(1, 7, 6, 5, 8, 3, 3, 2, 1)},
      {"pointwise, 16-byte loads", conv_shape(2, 5, 5, 24, 16, 1, 1, 1, 0)},
  };
  for (const Engine& engine : conv_engines()) {
    for (const auto& [name, shape] : cases) {
      SCOPED_TRACE(std::string(name) + " " + shape.str() + " " + engine.name());
      expect_forward_matches(shape, engine, true, 3);
      expect_filter_grad_matches(shape, engine, true, 3);
    }
  }
}

// Without the ReLU, negative values pass: the affine transform alone.
TEST(ConvTransformSimt, AffineWithoutReluMatchesCpu) {
  const Conv2dShape shape = conv_shape(2, 6, 5, 16, 24, 3, 3, 1, 1);
  for (const Engine& engine : conv_engines()) {
    SCOPED_TRACE(engine.name());
    expect_forward_matches(shape, engine, false, 1);
    expect_filter_grad_matches(shape, engine, false, 1);
  }
}

// The CPU twins with a transform read what the reference reads, bit for bit.
TEST(ConvTransformSimt, CpuTwinsTransformIntoScratch) {
  const Conv2dShape shape = conv_shape(1, 5, 5, 12, 8, 3, 3, 1, 1);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    const Engine engine{dtype, Fp32Math::exact};
    Operands in(shape, engine, true);
    const std::vector<std::byte> x = testing::encode(dtype, in.x_values);
    const int64_t outputs = shape_numel(shape.output_shape());
    std::vector<std::byte> expected(outputs * dtype_size(dtype)), actual(expected.size());
    cpu::conv2d_forward({.shape = shape,
                         .dtype = dtype,
                         .x = in.cpu_a.data(),
                         .w = in.cpu_w.data(),
                         .y = expected.data()});
    cpu::conv2d_forward({.shape = shape,
                         .dtype = dtype,
                         .x = x.data(),
                         .w = in.cpu_w.data(),
                         .y = actual.data(),
                         .input_transform = {.scale = in.coefficients.scale_values.data(),
                                             .shift = in.coefficients.shift_values.data(),
                                             .relu = true}});
    EXPECT_EQ(actual, expected) << dtype_name(dtype);
    const int64_t filters = shape_numel(shape.filter_shape());
    std::vector<float> expected_dw(filters), actual_dw(filters);
    cpu::conv2d_backward_filter({.shape = shape,
                                 .dtype = dtype,
                                 .x = in.cpu_a.data(),
                                 .dy = in.cpu_dy.data(),
                                 .dw = expected_dw.data()});
    cpu::conv2d_backward_filter({.shape = shape,
                                 .dtype = dtype,
                                 .x = x.data(),
                                 .dy = in.cpu_dy.data(),
                                 .dw = actual_dw.data(),
                                 .input_transform = {.scale = in.coefficients.scale_values.data(),
                                                     .shift = in.coefficients.shift_values.data(),
                                                     .relu = true}});
    EXPECT_EQ(actual_dw, expected_dw) << dtype_name(dtype);
  }
}

TEST(ConvTransformSimt, FilterGradientRefusesABf16GradientWithATransform) {
  const Conv2dShape shape = conv_shape(1, 5, 5, 16, 8, 3, 3, 1, 1);
  Operands in(shape, Engine{DType::bf16, Fp32Math::exact}, true);
  SimtBuffer dw(DType::bf16, std::vector<float>(shape_numel(shape.filter_shape()), 0.f));
  SimtBuffer workspace = SimtBuffer::f32(cuda::conv2d_backward_filter_workspace_bytes(shape) / 4);
  EXPECT_THROW(cuda::conv2d_backward_filter({.shape = shape,
                                             .dtype = DType::bf16,
                                             .x = in.x.data(),
                                             .dy = in.dy.data(),
                                             .dw_dtype = DType::bf16,
                                             .dw = dw.data(),
                                             .workspace = workspace.data(),
                                             .input_transform = in.transform()},
                                            nullptr),
               std::invalid_argument);
}

// The Tensor API on the CPU: conv(relu(batchnorm_normalize(x))) against the conv reading x
// through conv_input_from_batchnorm's transform. The two compute the same affine map in
// different roundings ((x - mean) * scale + bias against x * scale + (bias - mean * scale)):
// with means and inputs O(1), a few fp32 ulps of each input value, 1e-5 of the outputs.
TEST(ConvInputOps, BatchNormReluThenConvMatchesTheFusedRead) {
  const Conv2dShape shape = conv_shape(2, 5, 6, 8, 12, 3, 3, 1, 1);
  const int64_t channels = shape.in_channels;
  Stream stream;
  std::vector<float> stats = random_values(channels, 41);  // means
  for (int64_t c = 0; c < channels; ++c)
    stats.push_back(0.5f + 0.1f * static_cast<float>(c));  // invstd
  stats.push_back(60.f);                                   // count
  const Tensor batch_stats = Tensor::from_floats({2 * channels + 1}, stats);
  const Tensor weight = Tensor::from_floats({channels}, random_values(channels, 42));
  std::vector<float> shifts = random_values(channels, 43);
  for (float& v : shifts)
    v = 0.3f + 0.5f * std::abs(v);  // positive: a transformed padding would show
  const Tensor bias = Tensor::from_floats({channels}, shifts);
  const Tensor x =
      Tensor::from_floats(shape.input_shape(), random_values(shape_numel(shape.input_shape()), 44));
  const Tensor w = Tensor::from_floats(shape.filter_shape(),
                                       random_values(shape_numel(shape.filter_shape()), 45));
  Tensor normalized = Tensor::empty(shape.input_shape(), DType::f32);
  batchnorm_normalize(
      {.x = x, .batch_stats = batch_stats, .weight = weight, .bias = bias, .y = normalized}, stream,
      {.residual = Tensor(), .relu = true});
  Tensor expected = Tensor::empty(shape.output_shape(), DType::f32);
  conv2d_forward(shape, {.x = normalized, .w = w, .bias = Tensor(), .y = expected, .workspace = {}},
                 stream);

  Tensor scale = Tensor::empty({channels}, DType::f32),
         shift = Tensor::empty({channels}, DType::f32);
  conv_input_from_batchnorm(
      {.batch_stats = batch_stats, .weight = weight, .bias = bias, .scale = scale, .shift = shift},
      stream);
  Tensor actual = Tensor::empty(shape.output_shape(), DType::f32), none;
  conv2d_forward(shape, {.x = x, .w = w, .bias = Tensor(), .y = actual, .workspace = none}, stream,
                 {}, {.input = {.scale = scale, .shift = shift, .relu = true}});
  const std::vector<float> want = expected.to_floats(stream);
  EXPECT_LE(relative_difference(actual.to_floats(stream), want), 1e-5);

  // The filter gradient reads the same transformed input.
  const Tensor dy = Tensor::from_floats(shape.output_shape(),
                                        random_values(shape_numel(shape.output_shape()), 46));
  Tensor dw_expected = Tensor::empty(shape.filter_shape(), DType::f32);
  Tensor dw_actual = Tensor::empty(shape.filter_shape(), DType::f32);
  conv2d_backward_filter(shape,
                         {.x = normalized,
                          .dy = dy,
                          .dw = dw_expected,
                          .dbias = none,
                          .workspace = none,
                          .write = GradWrite::overwrite},
                         stream);
  conv2d_backward_filter(shape,
                         {.x = x,
                          .dy = dy,
                          .dw = dw_actual,
                          .dbias = none,
                          .workspace = none,
                          .write = GradWrite::overwrite},
                         stream, {}, {.scale = scale, .shift = shift, .relu = true});
  EXPECT_LE(relative_difference(dw_actual.to_floats(stream), dw_expected.to_floats(stream)), 1e-5);
}

// Evaluation's: conv(relu(batchnorm_eval_forward(x))) against the conv reading x through
// conv_input_from_running_stats' transform, within the same roundings as above.
TEST(ConvInputOps, EvalBatchNormReluThenConvMatchesTheFusedRead) {
  const Conv2dShape shape = conv_shape(2, 5, 6, 8, 12, 3, 3, 1, 1);
  const int64_t channels = shape.in_channels;
  constexpr float kEps = 1e-5f;
  Stream stream;
  const Tensor running_mean = Tensor::from_floats({channels}, random_values(channels, 51));
  std::vector<float> variances = random_values(channels, 52);
  for (float& v : variances)
    v = 0.2f + std::abs(v);
  const Tensor running_var = Tensor::from_floats({channels}, variances);
  const Tensor weight = Tensor::from_floats({channels}, random_values(channels, 53));
  std::vector<float> shifts = random_values(channels, 54);
  for (float& v : shifts)
    v = 0.3f + 0.5f * std::abs(v);
  const Tensor bias = Tensor::from_floats({channels}, shifts);
  const Tensor x =
      Tensor::from_floats(shape.input_shape(), random_values(shape_numel(shape.input_shape()), 55));
  const Tensor w = Tensor::from_floats(shape.filter_shape(),
                                       random_values(shape_numel(shape.filter_shape()), 56));
  Tensor normalized = Tensor::empty(shape.input_shape(), DType::f32);
  batchnorm_eval_forward({.x = x,
                          .running_mean = running_mean,
                          .running_var = running_var,
                          .weight = weight,
                          .bias = bias,
                          .y = normalized,
                          .eps = kEps},
                         stream, {.residual = Tensor(), .relu = true});
  Tensor expected = Tensor::empty(shape.output_shape(), DType::f32);
  conv2d_forward(shape, {.x = normalized, .w = w, .bias = Tensor(), .y = expected, .workspace = {}},
                 stream);

  Tensor scale = Tensor::empty({channels}, DType::f32),
         shift = Tensor::empty({channels}, DType::f32);
  conv_input_from_running_stats({.running_mean = running_mean,
                                 .running_var = running_var,
                                 .weight = weight,
                                 .bias = bias,
                                 .scale = scale,
                                 .shift = shift,
                                 .eps = kEps},
                                stream);
  Tensor actual = Tensor::empty(shape.output_shape(), DType::f32), none;
  conv2d_forward(shape, {.x = x, .w = w, .bias = Tensor(), .y = actual, .workspace = none}, stream,
                 {}, {.input = {.scale = scale, .shift = shift, .relu = true}});
  EXPECT_LE(relative_difference(actual.to_floats(stream), expected.to_floats(stream)), 1e-5);
}

// The checks name the tensor at fault.
TEST(ConvInputOps, ChecksNameTheTensor) {
  const Conv2dShape shape = conv_shape(1, 4, 4, 8, 4, 3, 3, 1, 1);
  Stream stream;
  const Tensor x = Tensor::empty(shape.input_shape(), DType::f32);
  const Tensor w = Tensor::empty(shape.filter_shape(), DType::f32);
  Tensor y = Tensor::empty(shape.output_shape(), DType::f32), none;
  const Tensor seven = Tensor::empty({7}, DType::f32), eight = Tensor::empty({8}, DType::f32);
  const auto message = [&](auto&& call) {
    try {
      call();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] {
              conv2d_forward(shape, {.x = x, .w = w, .bias = Tensor(), .y = y, .workspace = none},
                             stream, {}, {.input = {.scale = seven, .shift = eight}});
            }).find("input.scale"),
            std::string::npos);
  EXPECT_NE(message([&] {
              conv2d_forward(shape, {.x = x, .w = w, .bias = Tensor(), .y = y, .workspace = none},
                             stream, {}, {.input = {.scale = eight, .shift = seven}});
            }).find("input.shift"),
            std::string::npos);
  Tensor dw_bf16 = Tensor::empty(shape.filter_shape(), DType::bf16);
  const Tensor dy = Tensor::empty(shape.output_shape(), DType::f32);
  EXPECT_NE(message([&] {
              conv2d_backward_filter(shape,
                                     {.x = x,
                                      .dy = dy,
                                      .dw = dw_bf16,
                                      .dbias = none,
                                      .workspace = none,
                                      .write = GradWrite::overwrite},
                                     stream, {}, {.scale = eight, .shift = eight});
            }).find("dw"),
            std::string::npos);
  Tensor scale = Tensor::empty({8}, DType::f32), shift = Tensor::empty({8}, DType::f32);
  EXPECT_NE(message([&] {
              conv_input_from_batchnorm({.batch_stats = Tensor::empty({16}, DType::f32),
                                         .weight = Tensor(),
                                         .bias = Tensor(),
                                         .scale = scale,
                                         .shift = shift},
                                        stream);
            }).find("batch_stats"),
            std::string::npos);
  EXPECT_NE(message([&] {
              conv_input_from_running_stats({.running_mean = eight,
                                             .running_var = seven,
                                             .weight = Tensor(),
                                             .bias = Tensor(),
                                             .scale = scale,
                                             .shift = shift,
                                             .eps = 1e-5f},
                                            stream);
            }).find("running_var"),
            std::string::npos);
}

}  // namespace
}  // namespace engine
