// The element-wise ops on a CUDA device against the CPU backend, through the op API: the
// same cases as the emulator suite, on real hardware. Skipped, with the reason, when this
// process has no usable CUDA device.
#include <gtest/gtest.h>

#include "elementwise_cases.h"
#include "kernels/cpu/activation.h"
#include "kernels/ops.h"
#include "kernels/runtime.h"
#if ENGINE_HAVE_CUDA
#include "kernels/cuda/activation.h"
#endif

namespace engine {
namespace {

using testing::case_name;
using testing::kDTypes;
using testing::kElementwiseSizes;
using testing::make_inputs;
using testing::same_values;

class ElementwiseGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) {
      GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
    }
  }
  Device gpu = Device::cuda(0);
};

// Runs op on the CPU and on the GPU with the same inputs and expects the same bits.
template <typename Op>
void expect_gpu_matches_cpu(const std::vector<std::vector<float>>& inputs, DType dtype, int64_t n,
                            Op&& op) {
  Stream cpu_stream;
  Stream gpu_stream(Device::cuda(0));
  std::vector<Tensor> cpu_inputs, gpu_inputs;
  for (const auto& values : inputs) {
    cpu_inputs.push_back(Tensor::from_floats({n}, values, dtype));
    gpu_inputs.push_back(cpu_inputs.back().to(Device::cuda(0), gpu_stream));
  }
  Tensor cpu_out = Tensor::empty({n}, dtype);
  Tensor gpu_out = Tensor::empty({n}, dtype, Device::cuda(0));
  op(cpu_inputs, cpu_out, cpu_stream);
  op(gpu_inputs, gpu_out, gpu_stream);
  EXPECT_TRUE(same_values(cpu_out.to_floats(cpu_stream), gpu_out.to_floats(gpu_stream)));
}

TEST_F(ElementwiseGpu, ReluForwardBackwardAddRelu) {
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      SCOPED_TRACE(case_name(dtype, n));
      const auto x = make_inputs(n, 21, dtype);
      const auto d = make_inputs(n, 22, dtype);
      expect_gpu_matches_cpu({x}, dtype, n,
                             [](auto& in, Tensor& out, Stream& s) { relu_forward(in[0], out, s); });
      expect_gpu_matches_cpu({x, d}, dtype, n, [](auto& in, Tensor& out, Stream& s) {
        relu_backward(in[0], in[1], out, s);
      });
      expect_gpu_matches_cpu({x, d}, dtype, n, [](auto& in, Tensor& out, Stream& s) {
        add_relu_forward(in[0], in[1], out, s);
      });
      expect_gpu_matches_cpu({x, d}, dtype, n,
                             [](auto& in, Tensor& out, Stream& s) { add(in[0], in[1], out, s); });
    }
  }
}

TEST_F(ElementwiseGpu, FillCastCopy) {
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      SCOPED_TRACE(case_name(dtype, n));
      const auto x = make_inputs(n, 23, DType::f32);
      expect_gpu_matches_cpu({x}, dtype, n,
                             [](auto&, Tensor& out, Stream& s) { fill(out, 1.00390625f, s); });
      Stream cpu_stream;
      Stream gpu_stream(gpu);
      Tensor src = Tensor::from_floats({n}, x, DType::f32);
      Tensor cpu_out = Tensor::empty({n}, dtype);
      cast(src, cpu_out, cpu_stream);
      Tensor gpu_src = src.to(gpu, gpu_stream);
      Tensor gpu_out = Tensor::empty({n}, dtype, gpu);
      cast(gpu_src, gpu_out, gpu_stream);
      EXPECT_TRUE(same_values(cpu_out.to_floats(cpu_stream), gpu_out.to_floats(gpu_stream)));
      Tensor round_trip = gpu_out.clone(gpu_stream);  // device-to-device copy
      EXPECT_TRUE(same_values(cpu_out.to_floats(cpu_stream), round_trip.to_floats(gpu_stream)));
    }
  }
}

#if ENGINE_HAVE_CUDA
TEST_F(ElementwiseGpu, MisalignedPointersUseTheScalarPath) {
  // One element past a 256-byte aligned allocation breaks the 16-byte vector alignment.
  Stream cpu_stream;
  Stream gpu_stream(gpu);
  for (DType dtype : kDTypes) {
    const int64_t n = 1001;
    const auto x = make_inputs(n + 1, 24, dtype);
    Tensor host_in = Tensor::from_floats({n + 1}, x, dtype);
    Tensor host_out = Tensor::empty({n + 1}, dtype);
    cpu::relu_forward({.dtype = dtype,
                       .x = static_cast<const std::byte*>(host_in.raw_data()) + dtype_size(dtype),
                       .y = static_cast<std::byte*>(host_out.raw_data()) + dtype_size(dtype),
                       .n = n});
    Tensor device_in = host_in.to(gpu, gpu_stream);
    Tensor device_out = Tensor::zeros({n + 1}, dtype, gpu, gpu_stream);
    cuda::relu_forward(
        {.dtype = dtype,
         .x = static_cast<const std::byte*>(device_in.raw_data()) + dtype_size(dtype),
         .y = static_cast<std::byte*>(device_out.raw_data()) + dtype_size(dtype),
         .n = n},
        gpu_stream.native());
    std::vector<float> expected = host_out.to_floats(cpu_stream);
    std::vector<float> actual = device_out.to_floats(gpu_stream);
    expected.erase(expected.begin());
    actual.erase(actual.begin());
    EXPECT_TRUE(same_values(expected, actual)) << dtype_name(dtype);
  }
}
#endif

}  // namespace
}  // namespace engine
