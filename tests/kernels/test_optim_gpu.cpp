// The fused SGD step on a CUDA device against the CPU backend, through the op API. Skipped,
// with the reason, when there is no usable CUDA device.
#include <gtest/gtest.h>

#include <string>

#include "close_values.h"
#include "gpu_fixture.h"
#include "kernels/ops.h"
#include "optim_cases.h"

namespace engine {
namespace {

using testing::all_close;

class OptimGpu : public testing::GpuOpTest {};

TEST_F(OptimGpu, SgdStepsMatchCpu) {
  for (const testing::SgdCase& c : testing::kSgdCases) {
    for (int64_t n : testing::kSgdSizes) {
      SCOPED_TRACE(c.name + " n=" + std::to_string(n));
      Tensor params = Tensor::from_floats({n}, testing::normal_values(n, 1, DType::f32));
      Tensor buffer = Tensor::from_floats({n}, std::vector<float>(n, 0.f));
      Tensor gpu_params = on_gpu(params), gpu_buffer = on_gpu(buffer);
      for (int step = 0; step < 5; ++step) {
        Tensor grads = Tensor::from_floats({n}, testing::normal_values(n, 10 + step, DType::f32));
        sgd_step(c.options, params, grads, buffer, step == 0, cpu_stream);
        sgd_step(c.options, gpu_params, on_gpu(grads), gpu_buffer, step == 0, gpu_stream());
      }
      // nvcc fuses multiply-adds that the CPU rounds twice: a few ulps of the O(1) operands
      // over five steps, also where the update cancels a parameter down to 1e-2 (an H200 parted
      // by 3e-7 there: bench/results/gpu-check-h200-2026-12-04). Hence the scale of 1.
      EXPECT_TRUE(all_close(host_values(params), host_values(gpu_params), 1e-6, 1.0));
      EXPECT_TRUE(all_close(host_values(buffer), host_values(gpu_buffer), 1e-6, 1.0));
    }
  }
}

}  // namespace
}  // namespace engine
