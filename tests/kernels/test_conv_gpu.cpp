// conv2d's behaviour on a CUDA device beyond its results (which the op harness, tests/ops,
// checks against the CPU on every layer): the stream's fp32 math reaches the kernels, and a
// workspace shorter than a split needs is refused by name. Skipped, with the reason, without a
// usable CUDA device.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "conv_reference.h"
#include "gpu_fixture.h"
#include "kernels/ops.h"
#include "kernels/runtime.h"

namespace engine {
namespace {

using testing::random_values;

double relative_difference(const std::vector<float>& actual, const std::vector<float>& expected) {
  return testing::relative_error(actual, std::vector<double>(expected.begin(), expected.end()));
}

// Skipped, with the reason, without a usable CUDA device.
class ConvGpu : public testing::GpuOpTest {};

// The stream's math reaches the kernels: a tf32 forward moves away from the exact one by about
// tf32's rounding (2^-11 relative per operand), an exact one stays within summation order.
TEST_F(ConvGpu, Tf32StreamsRoundTheOperandsAndExactOnesDoNot) {
  const Device gpu = Device::cuda(0);
  Stream host;
  const Conv2dShape shape = testing::conv_shape(2, 8, 8, 16, 32, 3, 3, 1, 1);
  const Tensor x =
      Tensor::from_floats(shape.input_shape(), random_values(shape_numel(shape.input_shape()), 1));
  const Tensor w = Tensor::from_floats(shape.filter_shape(),
                                       random_values(shape_numel(shape.filter_shape()), 2));
  Tensor y = Tensor::empty(shape.output_shape(), DType::f32);
  conv2d_forward(shape, {.x = x, .w = w, .bias = Tensor(), .y = y, .workspace = {}}, host);
  const std::vector<float> exact = y.to_floats(host);
  for (const Fp32Math math : {Fp32Math::exact, Fp32Math::tf32}) {
    Stream stream(gpu);
    stream.set_fp32_math(math);
    const Tensor gx = x.to(gpu, stream), gw = w.to(gpu, stream);
    Tensor gy = Tensor::empty(shape.output_shape(), DType::f32, gpu);
    conv2d_forward(shape, {.x = gx, .w = gw, .bias = Tensor(), .y = gy, .workspace = {}}, stream);
    const double difference = relative_difference(gy.to_floats(stream), exact);
    std::printf("[ measured ] %s forward against exact fp32: relative difference %.3g\n",
                std::string(fp32_math_name(math)).c_str(), difference);
    if (math == Fp32Math::tf32) {
      EXPECT_GT(difference, 5e-5) << "a tf32 stream computed exact fp32";
      EXPECT_LT(difference, 5e-3);
    } else {
      EXPECT_LE(difference, 1e-5);
    }
  }
}

TEST_F(ConvGpu, WorkspaceSmallerThanTheSplitNeedsIsAnError) {
  const Device gpu = Device::cuda(0);
  Stream stream(gpu);
  const Conv2dShape shape = testing::conv_shape(1, 2, 2, 512, 512, 3, 3, 1, 1);  // 4 pixels
  ASSERT_GT(conv2d_forward_workspace_numel(shape, gpu), 0);
  Tensor x = Tensor::zeros(shape.input_shape(), DType::f32, gpu, stream);
  Tensor w = Tensor::zeros(shape.filter_shape(), DType::f32, gpu, stream);
  Tensor y = Tensor::empty(shape.output_shape(), DType::f32, gpu);
  Tensor small = Tensor::empty({conv2d_forward_workspace_numel(shape, gpu) - 1}, DType::f32, gpu);
  try {
    conv2d_forward(shape, {.x = x, .w = w, .bias = Tensor(), .y = y, .workspace = small}, stream);
    FAIL() << "a short workspace was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("conv2d_forward_workspace_numel"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace engine
