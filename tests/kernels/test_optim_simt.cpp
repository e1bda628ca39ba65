// The CUDA optimizer kernels through their launchers under the SIMT emulator, against the CPU
// twins: SGD (five steps for every option set and size, the 16-byte vector path and the
// scalar path one element off, the default grid and a 2-block grid), AdamW (five steps),
// the sums of squares per segment (one and two inputs, several blocks per segment, small
// blocks), clip_grad and LARS (four steps, a grid too small for the largest segment); each
// step's rate (and AdamW's bias corrections) read from device memory, as a CUDA graph's
// replay gives them, in place of decoys passed by value.
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

TEST(OptimSimt, AdamWStepsMatchCpu) {
  for (const testing::AdamWCase& c : testing::kAdamWCases) {
    for (int64_t n : {1, 7, 1000}) {
      for (const cuda::ElementwiseLaunch& grid : kGrids) {
        SCOPED_TRACE(c.name + " n=" + std::to_string(n) + " max_blocks " +
                     std::to_string(grid.max_blocks));
        std::vector<float> cpu_params = testing::normal_values(n, 1, DType::f32);
        std::vector<float> cpu_m(n, 0.f), cpu_v(n, 0.f);
        SimtBuffer params(DType::f32, cpu_params, 1), m(DType::f32, cpu_m), v(DType::f32, cpu_v);
        for (int step = 1; step <= 5; ++step) {
          const std::vector<float> grads = testing::normal_values(n, 10 + step, DType::f32);
          SimtBuffer dgrads(DType::f32, grads);
          cpu::adamw_step({.params = cpu_params.data(),
                           .grads = grads.data(),
                           .exp_avg = cpu_m.data(),
                           .exp_avg_sq = cpu_v.data(),
                           .n = n,
                           .options = c.options,
                           .step = step});
          cuda::adamw_step({.params = params.floats(),
                            .grads = dgrads.floats(),
                            .exp_avg = m.floats(),
                            .exp_avg_sq = v.floats(),
                            .n = n,
                            .options = c.options,
                            .step = step},
                           nullptr, grid);
        }
        EXPECT_TRUE(all_close(cpu_params, params.values(), 1e-6, 1e-2));
        EXPECT_TRUE(all_close(cpu_m, m.values(), 1e-6));
        EXPECT_TRUE(all_close(cpu_v, v.values(), 1e-6));
      }
    }
  }
}

// Segment lengths: tiny, a 4-vector, empty, longer than a block's threads, an odd tail.
const std::vector<int32_t> kSegmentLengths = {3, 4, 0, 1000, 33};

TEST(OptimSimt, SumSquaresMatchCpu) {
  const std::vector<int32_t> table = testing::segment_table(kSegmentLengths);
  const int64_t n = testing::segment_total(table);
  const int segments = static_cast<int>(kSegmentLengths.size());
  const std::vector<float> a = testing::normal_values(n, 4, DType::f32);
  const std::vector<float> b = testing::normal_values(n, 5, DType::f32);
  for (int blocks : {1, 5}) {
    for (int threads : {32, 256}) {
      for (bool two : {false, true}) {
        SCOPED_TRACE("blocks " + std::to_string(blocks) + " threads " + std::to_string(threads) +
                     (two ? " two inputs" : " one input"));
        const int inputs = two ? 2 : 1;
        const int64_t partial_count = int64_t{segments} * blocks * inputs;
        std::vector<double> cpu_partials(partial_count), cpu_sums(segments * inputs);
        cpu::sum_squares({.a = a.data(),
                          .b = two ? b.data() : nullptr,
                          .segments = table.data(),
                          .segment_count = segments,
                          .blocks_per_segment = blocks,
                          .partials = cpu_partials.data(),
                          .sums = cpu_sums.data()});
        SimtBuffer da(DType::f32, a), db(DType::f32, b), dtable(table);
        SimtBuffer partials = SimtBuffer::f64(partial_count),
                   sums = SimtBuffer::f64(cpu_sums.size());
        cuda::sum_squares({.a = da.floats(),
                           .b = two ? db.floats() : nullptr,
                           .segments = dtable.ints(),
                           .segment_count = segments,
                           .blocks_per_segment = blocks,
                           .partials = partials.doubles(),
                           .sums = sums.doubles()},
                          nullptr, threads);
        // The same elements per partial, summed in another order: rounding of doubles.
        const std::vector<double> got = sums.double_values();
        for (size_t i = 0; i < cpu_sums.size(); ++i)
          EXPECT_NEAR(got[i], cpu_sums[i], 1e-12 * (1 + cpu_sums[i])) << "sum " << i;
      }
    }
  }
}

TEST(OptimSimt, ClipGradMatchesCpu) {
  const int64_t n = 1001;
  const std::vector<float> grads = testing::normal_values(n, 8, DType::f32);
  for (double sum_squares : {0.0, 4.0, 1e6}) {
    SCOPED_TRACE("sum of squares " + std::to_string(sum_squares));
    std::vector<float> cpu_grads = grads;
    cpu::clip_grad(
        {.grads = cpu_grads.data(), .n = n, .sum_squares = &sum_squares, .max_norm = 5.f});
    SimtBuffer dgrads(DType::f32, grads, 1), dsum(std::vector<double>{sum_squares});
    cuda::clip_grad(
        {.grads = dgrads.floats(), .n = n, .sum_squares = dsum.doubles(), .max_norm = 5.f}, nullptr,
        kGrids[1]);
    EXPECT_EQ(cpu_grads, dgrads.values());  // one f32 multiply by the same coefficient
  }
}

// What a CUDA graph's replay of the optimizer step relies on (nn/optimizer.h): the kernels take
// each step's rate from device memory when given it, not the value captured with the launch.
// The by-value rate here is a decoy that would give other bits.
constexpr float kDecoyRate = 7.f;

// LARS's rate by value, then in device memory beside a decoy by value.
TEST(OptimSimt, LarsStepsMatchCpu) {
  const std::vector<int32_t> table = testing::segment_table(kSegmentLengths);
  const int64_t n = testing::segment_total(table);
  const int segments = static_cast<int>(kSegmentLengths.size());
  const LarsOptions options{
      .lr = 2.f, .momentum = 0.9f, .weight_decay = 1e-3f, .eta = 0.02f, .grad_scale = 0.5f};
  LarsOptions decoy = options;
  decoy.lr = kDecoyRate;
  for (const bool rate_in_memory : {false, true}) {
    SCOPED_TRACE(rate_in_memory ? "rate in memory" : "rate by value");
    std::vector<float> cpu_params = testing::normal_values(n, 6, DType::f32);
    std::vector<float> cpu_buffer(n, 0.f);
    SimtBuffer params(DType::f32, cpu_params), buffer(DType::f32, cpu_buffer), dtable(table);
    SimtBuffer rate(DType::f32, std::vector<float>{options.lr});
    for (int step = 0; step < 4; ++step) {
      const std::vector<float> grads = testing::normal_values(n, 20 + step, DType::f32);
      // Both backends step from the CPU's sums, so the update itself is compared exactly.
      std::vector<double> partials(segments * 2 * 2), sums(segments * 2);
      cpu::sum_squares({.a = cpu_params.data(),
                        .b = grads.data(),
                        .segments = table.data(),
                        .segment_count = segments,
                        .blocks_per_segment = 2,
                        .partials = partials.data(),
                        .sums = sums.data()});
      SimtBuffer dgrads(DType::f32, grads), dsums(sums);
      cpu::lars_step({.params = cpu_params.data(),
                      .grads = grads.data(),
                      .momentum_buffer = cpu_buffer.data(),
                      .segments = table.data(),
                      .segment_count = segments,
                      .sum_squares = sums.data(),
                      .options = options});
      cuda::lars_step({.params = params.floats(),
                       .grads = dgrads.floats(),
                       .momentum_buffer = buffer.floats(),
                       .segments = dtable.ints(),
                       .segment_count = segments,
                       .sum_squares = dsums.doubles(),
                       .options = rate_in_memory ? decoy : options,
                       .lr = rate_in_memory ? rate.floats() : nullptr},
                      nullptr, 2, 64);
    }
    EXPECT_TRUE(all_close(cpu_params, params.values(), 1e-6, 1e-2));
    EXPECT_TRUE(all_close(cpu_buffer, buffer.values(), 1e-6, 1e-2));
  }
}

TEST(OptimSimt, SgdReadsTheRateInMemory) {
  const int64_t n = 1001;
  const SgdOptions o{.lr = 0.f, .momentum = 0.9f, .weight_decay = 1e-4f};
  std::vector<float> cpu_params = testing::normal_values(n, 2, DType::f32), cpu_buffer(n, 0.f);
  SimtBuffer params(DType::f32, cpu_params), buffer(DType::f32, cpu_buffer);
  for (int step = 0; step < 3; ++step) {
    const float lr = 0.1f / static_cast<float>(step + 1);  // a schedule
    const std::vector<float> grads = testing::normal_values(n, 30 + step, DType::f32);
    SgdOptions by_value = o;
    by_value.lr = lr;
    cpu::sgd_step({.params = cpu_params.data(),
                   .grads = grads.data(),
                   .momentum_buffer = cpu_buffer.data(),
                   .n = n,
                   .options = by_value,
                   .first_step = step == 0});
    SgdOptions decoy = o;
    decoy.lr = kDecoyRate;
    SimtBuffer dgrads(DType::f32, grads), rate(DType::f32, std::vector<float>{lr});
    cuda::sgd_step({.params = params.floats(),
                    .grads = dgrads.floats(),
                    .momentum_buffer = buffer.floats(),
                    .n = n,
                    .options = decoy,
                    .first_step = step == 0,
                    .lr = rate.floats()},
                   nullptr, kGrids[1]);
  }
  EXPECT_TRUE(all_close(cpu_params, params.values(), 1e-6, 1e-2));
  EXPECT_TRUE(all_close(cpu_buffer, buffer.values(), 1e-6, 1e-2));
}

TEST(OptimSimt, AdamWReadsTheStepScalarsInMemory) {
  const int64_t n = 1001;
  for (const testing::AdamWCase& c : testing::kAdamWCases) {
    SCOPED_TRACE(c.name);
    std::vector<float> cpu_params = testing::normal_values(n, 3, DType::f32);
    std::vector<float> cpu_m(n, 0.f), cpu_v(n, 0.f);
    SimtBuffer params(DType::f32, cpu_params), m(DType::f32, cpu_m), v(DType::f32, cpu_v);
    for (int step = 1; step <= 3; ++step) {
      AdamWOptions real = c.options;
      real.lr = c.options.lr / static_cast<float>(step);
      const std::vector<float> grads = testing::normal_values(n, 40 + step, DType::f32);
      cpu::adamw_step({.params = cpu_params.data(),
                       .grads = grads.data(),
                       .exp_avg = cpu_m.data(),
                       .exp_avg_sq = cpu_v.data(),
                       .n = n,
                       .options = real,
                       .step = step});
      const AdamWScalars s = adamw_scalars(real, step);
      // Without weight decay the decay is 1 whatever the memory holds.
      const float decay = real.weight_decay != 0.f ? s.decay : 0.5f;
      SimtBuffer dgrads(DType::f32, grads),
          scalars(DType::f32, std::vector<float>{s.neg_step_size, s.bias_correction2_sqrt, decay});
      AdamWOptions decoy = real;
      decoy.lr = kDecoyRate * 1e-3f;
      cuda::adamw_step({.params = params.floats(),
                        .grads = dgrads.floats(),
                        .exp_avg = m.floats(),
                        .exp_avg_sq = v.floats(),
                        .n = n,
                        .options = decoy,
                        .step = 1,
                        .step_scalars = scalars.floats()},
                       nullptr, kGrids[1]);
    }
    EXPECT_TRUE(all_close(cpu_params, params.values(), 1e-6, 1e-2));
    EXPECT_TRUE(all_close(cpu_m, m.values(), 1e-6));
    EXPECT_TRUE(all_close(cpu_v, v.values(), 1e-6));
  }
}

}  // namespace
}  // namespace engine
