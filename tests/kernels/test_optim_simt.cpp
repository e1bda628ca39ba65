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
          std::vector<float> cpu_params = testing::normal_values(n, 1, DType::f32);
          std::vector<float> cpu_buffer(n, 0.f);
          SimtBuffer params(DType::f32, cpu_params, offset);
          SimtBuffer buffer(DType::f32, std::vector<float>(n, 0.f), offset);
          for (int step = 0; step < 5; ++step) {
            const std::vector<float> grads = testing::normal_values(n, 10 + step, DType::f32);
            SimtBuffer dgrads(DType::f32, grads, offset);
            cpu::sgd_step({.params = cpu_params.data(),
                           .grads = grads.data(),
                           .momentum_buffer = o.momentum != 0.f ? cpu_buffer.data() : nullptr,
                           .n = n,
                           .options = o,
                           .first_step = step == 0});
            cuda::sgd_step({.params = params.floats(),
                            .grads = dgrads.floats(),
                            .momentum_buffer = o.momentum != 0.f ? buffer.floats() : nullptr,
                            .n = n,
                            .options = o,
                            .first_step = step == 0},
                           nullptr, grid);
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
    const SgdOptions nesterov{
        .lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-4f, .nesterov = true};
    cpu::sgd_step({.params = cpu_params.data(),
                   .grads = grads.data(),
                   .momentum_buffer = cpu_buffer.data(),
                   .n = n,
                   .options = nesterov,
                   .first_step = first});
    cuda::sgd_step({.params = params.floats(),
                    .grads = dgrads.floats(),
                    .momentum_buffer = buffer.floats(),
                    .n = n,
                    .options = nesterov,
                    .first_step = first},
                   nullptr);
  }
  EXPECT_TRUE(all_close(cpu_params, params.values(), 1e-6, 1e-2));
  EXPECT_TRUE(all_close(cpu_buffer, buffer.values(), 1e-6, 1e-2));
}

}  // namespace
}  // namespace engine
