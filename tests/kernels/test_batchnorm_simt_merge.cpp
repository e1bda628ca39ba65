// The CUDA batchnorm statistics' merge under the SIMT emulator: the one call that also writes
// the fp64 sums and finalizes them gives the bits of the separate phases, on the emulator and
// on the CPU twin; f32 and bf16, the BN shapes (vector and scalar paths), the default grid and
// small grids that force several partials per channel and several channel tiles.
#include "sim/simt/simt.h"
// The kernels under test, compiled here by g++ for the emulator.
#include "kernels/cuda/batchnorm.cuh"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "batchnorm_cases.h"
#include "batchnorm_simt_helpers.h"
#include "kernels/conv_input_value.h"
#include "kernels/cpu/batchnorm.h"
#include "simt_buffer.h"
#include "tests/dtype_bytes.h"

namespace engine {
namespace {

using testing::BnShape;
using testing::normal_values;
using testing::SimtBuffer;

using testing::expect_counters_reset;
using testing::expect_stats_close;
using testing::kDTypes;
using testing::kEps;
using testing::kLaunchShapes;
using testing::LaunchShapes;
using testing::same_bits;
using testing::zeroed_workspace;

// The statistics' merge that also writes the fp64 sums and finalizes them gives the bits of
// the separate phases (stats, stats_to_sums, finalize_sums), on the emulator and on the CPU
// twin; also with the sums alone (SyncBN's forward). Either finalize also writes the next
// convolution's input coefficients with conv_input_from_batchnorm's bits (its expression,
// conv_input_coefficients_at, on the batch statistics written).
TEST(BatchNormSimt, StatsMergeFinishesSumsAndFinalizeBitForBit) {
  for (DType dtype : kDTypes) {
    for (const BnShape& s : testing::kBnShapes) {
      for (const LaunchShapes& launch : kLaunchShapes) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " " + launch.str());
        const int64_t rows = s.rows(), c = s.c;
        SimtBuffer x(dtype, normal_values(s.numel(), 31, dtype, 0.5, 2.0));
        const std::vector<float> rm0 = normal_values(c, 32, DType::f32);
        const std::vector<float> rv0(c, 1.5f);
        SimtBuffer weight(DType::f32, normal_values(c, 33, DType::f32, 1.0, 0.5));
        SimtBuffer bias(DType::f32, normal_values(c, 34, DType::f32));
        SimtBuffer scale = SimtBuffer::f32(c), shift = SimtBuffer::f32(c);
        SimtBuffer f_scale = SimtBuffer::f32(c), f_shift = SimtBuffer::f32(c);
        SimtBuffer workspace =
            zeroed_workspace(cuda::batchnorm_workspace_numel(rows, c, launch.reduce));
        // The separate phases.
        SimtBuffer stats = SimtBuffer::f32(2 * c + 1), sums = SimtBuffer::f64(2 * c + 1);
        SimtBuffer batch = SimtBuffer::f32(2 * c + 1);
        SimtBuffer rm(DType::f32, rm0), rv(DType::f32, rv0);
        const BatchNormStatsArgs plain{.dtype = dtype,
                                       .x = x.data(),
                                       .rows = rows,
                                       .channels = c,
                                       .stats = stats.floats(),
                                       .workspace = workspace.floats()};
        cuda::batchnorm_stats(plain, nullptr, launch.reduce);
        cuda::batchnorm_stats_to_sums(
            {.stats = stats.floats(), .channels = c, .sums = sums.doubles()}, nullptr,
            launch.channel);
        const BatchNormFinalizeSumsArgs finalize{.sums = sums.doubles(),
                                                 .channels = c,
                                                 .momentum = 0.1f,
                                                 .eps = kEps,
                                                 .running_mean = rm.floats(),
                                                 .running_var = rv.floats(),
                                                 .batch_stats = batch.floats(),
                                                 .input_scale = scale.floats(),
                                                 .input_shift = shift.floats(),
                                                 .weight = weight.floats(),
                                                 .bias = bias.floats()};
        cuda::batchnorm_finalize_sums(finalize, nullptr, launch.channel);
        const std::vector<float> batch_values = batch.values();
        std::vector<float> expected_scale(c), expected_shift(c);
        for (int64_t i = 0; i < c; ++i) {
          const ConvInputCoefficients k =
              conv_input_coefficients_at({.batch_stats = batch_values.data(),
                                          .weight = weight.floats(),
                                          .bias = bias.floats(),
                                          .channels = c},
                                         i);
          expected_scale[i] = k.scale;
          expected_shift[i] = k.shift;
        }
        EXPECT_TRUE(same_bits(scale.values(), expected_scale)) << "input scale";
        EXPECT_TRUE(same_bits(shift.values(), expected_shift)) << "input shift";
        // One statistics call.
        SimtBuffer f_stats = SimtBuffer::f32(2 * c + 1), f_sums = SimtBuffer::f64(2 * c + 1);
        SimtBuffer f_batch = SimtBuffer::f32(2 * c + 1);
        SimtBuffer f_rm(DType::f32, rm0), f_rv(DType::f32, rv0);
        BatchNormStatsArgs fused = plain;
        fused.stats = f_stats.floats();
        fused.sums = f_sums.doubles();
        fused.finalize = {.momentum = 0.1f,
                          .eps = kEps,
                          .running_mean = f_rm.floats(),
                          .running_var = f_rv.floats(),
                          .batch_stats = f_batch.floats(),
                          .input_scale = f_scale.floats(),
                          .input_shift = f_shift.floats(),
                          .weight = weight.floats(),
                          .bias = bias.floats()};
        cuda::batchnorm_stats(fused, nullptr, launch.reduce);
        EXPECT_TRUE(same_bits(scale.values(), f_scale.values())) << "fused input scale";
        EXPECT_TRUE(same_bits(shift.values(), f_shift.values())) << "fused input shift";
        EXPECT_TRUE(same_bits(stats.values(), f_stats.values())) << "stats";
        EXPECT_TRUE(same_bits(sums.double_values(), f_sums.double_values())) << "sums";
        EXPECT_TRUE(same_bits(batch.values(), f_batch.values())) << "batch_stats";
        EXPECT_TRUE(same_bits(rm.values(), f_rm.values())) << "running_mean";
        EXPECT_TRUE(same_bits(rv.values(), f_rv.values())) << "running_var";

        // Sums only (SyncBN's forward, which all-reduces them before the finalize).
        SimtBuffer s_sums = SimtBuffer::f64(2 * c + 1);
        BatchNormStatsArgs sums_only = plain;
        sums_only.sums = s_sums.doubles();
        cuda::batchnorm_stats(sums_only, nullptr, launch.reduce);
        EXPECT_TRUE(same_bits(sums.double_values(), s_sums.double_values())) << "sums only";
        expect_counters_reset(workspace, c);

        // The CPU twin: the same folding, the same bits as its separate phases.
        std::vector<float> cpu_stats(2 * c + 1), cpu_batch(2 * c + 1), cpu_rm = rm0, cpu_rv = rv0;
        std::vector<double> cpu_sums(2 * c + 1);
        cpu::batchnorm_stats({.dtype = dtype,
                              .x = x.data(),
                              .rows = rows,
                              .channels = c,
                              .stats = cpu_stats.data(),
                              .sums = cpu_sums.data(),
                              .finalize = {.momentum = 0.1f,
                                           .eps = kEps,
                                           .running_mean = cpu_rm.data(),
                                           .running_var = cpu_rv.data(),
                                           .batch_stats = cpu_batch.data()}});
        std::vector<float> sep_stats(2 * c + 1), sep_batch(2 * c + 1), sep_rm = rm0, sep_rv = rv0;
        std::vector<double> sep_sums(2 * c + 1);
        cpu::batchnorm_stats({.dtype = dtype,
                              .x = x.data(),
                              .rows = rows,
                              .channels = c,
                              .stats = sep_stats.data()});
        cpu::batchnorm_stats_to_sums(
            {.stats = sep_stats.data(), .channels = c, .sums = sep_sums.data()});
        cpu::batchnorm_finalize_sums({.sums = sep_sums.data(),
                                      .channels = c,
                                      .momentum = 0.1f,
                                      .eps = kEps,
                                      .running_mean = sep_rm.data(),
                                      .running_var = sep_rv.data(),
                                      .batch_stats = sep_batch.data()});
        EXPECT_TRUE(same_bits(sep_sums, cpu_sums)) << "cpu sums";
        EXPECT_TRUE(same_bits(sep_batch, cpu_batch)) << "cpu batch_stats";
        EXPECT_TRUE(same_bits(sep_rm, cpu_rm)) << "cpu running_mean";
        EXPECT_TRUE(same_bits(sep_rv, cpu_rv)) << "cpu running_var";
        // And the emulator against the CPU (different merge orders: close).
        expect_stats_close(cpu_batch, f_batch.values(), c, 2.5);
      }
    }
  }
}

}  // namespace
}  // namespace engine
