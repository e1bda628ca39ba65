// The CUDA fused SGD kernel through its launcher under the SIMT emulator, against the CPU
// twin: five steps for every option set and size, the 16-byte vector path (aligned) and the
// scalar path (one element off), the default grid and a 2-block grid (grid-stride loop).
#include "sim/simt/simt.h"
// The kernel under test, compiled here by g++ for the emulator.
#include "kernels/cuda/optim.cuh"

#include <gtest/gtest.h>

#include <string>

#include "close_values.h"
#include "kernels/cpu/optim.h"
#include "optim_cases.h"
#include "simt_buffer.h"

namespace engine {
namespace {

using testing::all_close;
using testing::SimtBuffer;

const cuda::ElementwiseLaunch kGrids[] = {{256, 2048}, {64, 2}};

TEST(OptimSimt, SgdStepsMatchCpu) {
  for (const testing::SgdCase& c : testing::kSgdCases) {
    for (int64_t n : {1, 7, 33, 1000}) {
      for (int offset : {0, 1}) {
        for (const cuda::ElementwiseLaunch& grid : kGrids) {
          SCOPED_TRACE(c.name + " n=" + std::to_string(n) + " offset " + std::to_string(offset) +
                       " max_blocks " + std::to_string(grid.max_blocks));
          const SgdOptions& o = c.options;
          const cuda::SgdHyper h{o.lr,         o.momentum, o.dampening, o.weight_decay,
                                 o.grad_scale, o.nesterov, false};
          std::vector<float> cpu_params = testing::normal_values(n, 1, DType::f32);
          std::vector<float> cpu_buffer(n, 0.f);
          SimtBuffer params(DType::f32, cpu_params, offset);
          SimtBuffer buffer(DType::f32, std::vector<float>(n, 0.f), offset);
          for (int step = 0; step < 5; ++step) {
            const std::vector<float> grads = testing::normal_values(n, 10 + step, DType::f32);
            SimtBuffer dgrads(DType::f32, grads, offset);
            cpu::sgd_step(cpu_params.data(), grads.data(),
                          o.momentum != 0.f ? cpu_buffer.data() : nullptr, n, o.lr, o.momentum,
                          o.dampening, o.weight_decay, o.nesterov, o.grad_scale, step == 0);
            cuda::SgdHyper step_h = h;
            step_h.first_step = step == 0;
            cuda::sgd_step_launch(params.floats(), dgrads.floats(),
                                  o.momentum != 0.f ? buffer.floats() : nullptr, n, step_h, nullptr,
                                  grid);
          }
          // Same fp32 operations in the same order (g++ does not fuse them; nvcc may, which the
          // GPU suite's tolerance allows).
          EXPECT_TRUE(all_close(cpu_params, params.values(), 1e-6, 1e-2));
          if (o.momentum != 0.f) {
            EXPECT_TRUE(all_close(cpu_buffer, buffer.values(), 1e-6, 1e-2));
          }
        }
      }
    }
  }
}

TEST(OptimSimt, EntryPointMatchesCpu) {
  const int64_t n = 99;
  std::vector<float> cpu_params = testing::normal_values(n, 2, DType::f32);
  std::vector<float> cpu_buffer(n, 0.f);
  const std::vector<float> grads = testing::normal_values(n, 3, DType::f32);
  SimtBuffer params(DType::f32, cpu_params), buffer(DType::f32, cpu_buffer),
      dgrads(DType::f32, grads);
  for (bool first : {true, false}) {
    cpu::sgd_step(cpu_params.data(), grads.data(), cpu_buffer.data(), n, 0.1f, 0.9f, 0.f, 1e-4f,
                  true, 1.f, first);
    cuda::sgd_step(params.floats(), dgrads.floats(), buffer.floats(), n, 0.1f, 0.9f, 0.f, 1e-4f,
                   true, 1.f, first, nullptr);
  }
  EXPECT_TRUE(all_close(cpu_params, params.values(), 1e-6, 1e-2));
  EXPECT_TRUE(all_close(cpu_buffer, buffer.values(), 1e-6, 1e-2));
}

}  // namespace
}  // namespace engine
