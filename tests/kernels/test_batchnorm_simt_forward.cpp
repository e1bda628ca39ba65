// The CUDA batchnorm kernels' training step and statistics through their launchers under the
// SIMT emulator, against the CPU twins: a whole step (statistics, SyncBN's fp64 sums and
// finalize, normalize, evaluation, backward), the fp64 sum phases bit for bit (also at mean
// 1e3 and 1e4), the statistics at a large mean and the DType entry points; f32 and bf16, the
// 16-byte vector path (C a multiple of the width) and the scalar path (odd C, or pointers one
// element off), the default grid and small grids that force several partials per channel,
// several channel tiles and the row-stride loop.
#include "sim/simt/simt.h"
// The kernels under test, compiled here by g++ for the emulator.
#include "kernels/cuda/batchnorm.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "batchnorm_cases.h"
#include "batchnorm_simt_helpers.h"
#include "kernels/cpu/batchnorm.h"
#include "simt_buffer.h"
#include "tests/dtype_bytes.h"

namespace engine {
namespace {

using testing::all_close;
using testing::BnShape;
using testing::kBf16Ulp;
using testing::normal_values;
using testing::SimtBuffer;

using testing::expect_stats_close;
using testing::kDTypes;
using testing::kEps;
using testing::kLaunchShapes;
using testing::LaunchShapes;
using testing::same_bits;
using testing::slice;
using testing::zeroed_workspace;

// stats -> sums through the launcher, bit for bit against the CPU twin; returns the sums.
std::vector<double> sums_checked(const std::vector<float>& stats, int64_t c,
                                 const cuda::PerChannelLaunch& shape) {
  std::vector<double> expected(2 * c + 1);
  cpu::batchnorm_stats_to_sums({.stats = stats.data(), .channels = c, .sums = expected.data()});
  SimtBuffer in(DType::f32, stats), out = SimtBuffer::f64(2 * c + 1);
  cuda::batchnorm_stats_to_sums({.stats = in.floats(), .channels = c, .sums = out.doubles()},
                                nullptr, shape);
  EXPECT_TRUE(same_bits(expected, out.double_values())) << "stats_to_sums";
  return expected;
}

// Runs one whole training step of the batchnorm phases on the emulator and on the CPU.
void check_training_step(const BnShape& s, DType dtype, const LaunchShapes& launch, int offset,
                         double mean, double std) {
  const int64_t rows = s.rows(), c = s.c;
  const std::vector<float> x = normal_values(s.numel(), 1, dtype, mean, std);
  const std::vector<float> dy = normal_values(s.numel(), 2, dtype);
  const std::vector<float> res = normal_values(s.numel(), 3, dtype);
  const std::vector<float> weight = normal_values(c, 4, DType::f32, 1.0, 0.5);
  const std::vector<float> bias = normal_values(c, 5, DType::f32);
  SimtBuffer dx_in(dtype, x, offset), ddy(dtype, dy, offset), dres(dtype, res, offset);
  SimtBuffer dw(DType::f32, weight), db(DType::f32, bias);
  const double rel = dtype == DType::f32 ? 1e-5 : kBf16Ulp;

  // Statistics.
  SimtBuffer workspace = zeroed_workspace(cuda::batchnorm_workspace_numel(rows, c, launch.reduce));
  SimtBuffer stats = SimtBuffer::f32(2 * c + 1);
  std::vector<float> cpu_stats(2 * c + 1);
  cpu::batchnorm_stats(
      {.dtype = dtype, .x = dx_in.data(), .rows = rows, .channels = c, .stats = cpu_stats.data()});
  cuda::batchnorm_stats({.dtype = dtype,
                         .x = dx_in.data(),
                         .rows = rows,
                         .channels = c,
                         .stats = stats.floats(),
                         .workspace = workspace.floats()},
                        nullptr, launch.reduce);
  expect_stats_close(cpu_stats, stats.values(), c, std::abs(mean) + std);

  // Finalize as SyncBN over two ranks: these stats and another rank's, over more rows with a
  // different mean and spread, so the between-rank term of the variance is a large part of
  // it; each rank's sums, added in fp64 as the all-reduce adds them; then the running
  // statistics. Bit for bit against the CPU twin (shared arithmetic), and against the
  // double-precision statistics of both ranks' rows together.
  const int64_t other_rows = rows + 3;
  const std::vector<float> x_other =
      normal_values(other_rows * c, 10, dtype, mean + 3.0 * std, 0.5 * std);
  SimtBuffer other(dtype, x_other);
  std::vector<float> other_stats(2 * c + 1);
  cpu::batchnorm_stats({.dtype = dtype,
                        .x = other.data(),
                        .rows = other_rows,
                        .channels = c,
                        .stats = other_stats.data()});
  std::vector<double> reduced = sums_checked(cpu_stats, c, launch.channel);
  const std::vector<double> other_sums = sums_checked(other_stats, c, launch.channel);
  for (size_t i = 0; i < reduced.size(); ++i)
    reduced[i] += other_sums[i];
  SimtBuffer parts(reduced);
  const std::vector<float> rm0 = normal_values(c, 6, DType::f32);
  const std::vector<float> rv0(c, 1.5f);
  SimtBuffer rm(DType::f32, rm0), rv(DType::f32, rv0), batch_stats = SimtBuffer::f32(2 * c + 1);
  std::vector<float> cpu_rm = rm0, cpu_rv = rv0, cpu_batch(2 * c + 1);
  cpu::batchnorm_finalize_sums({.sums = reduced.data(),
                                .channels = c,
                                .momentum = 0.1f,
                                .eps = kEps,
                                .running_mean = cpu_rm.data(),
                                .running_var = cpu_rv.data(),
                                .batch_stats = cpu_batch.data()});
  cuda::batchnorm_finalize_sums({.sums = parts.doubles(),
                                 .channels = c,
                                 .momentum = 0.1f,
                                 .eps = kEps,
                                 .running_mean = rm.floats(),
                                 .running_var = rv.floats(),
                                 .batch_stats = batch_stats.floats()},
                                nullptr, launch.channel);
  const double merged_scale = std::abs(mean) + 4.0 * std;
  EXPECT_TRUE(same_bits(cpu_batch, batch_stats.values())) << "batch_stats";
  EXPECT_TRUE(same_bits(cpu_rm, rm.values())) << "running_mean";
  EXPECT_TRUE(same_bits(cpu_rv, rv.values())) << "running_var";

  std::vector<float> both_ranks = x;
  both_ranks.insert(both_ranks.end(), x_other.begin(), x_other.end());
  const double count = static_cast<double>(rows + other_rows);
  const testing::ReferenceStats ref = testing::reference_stats(both_ranks, rows + other_rows, c);
  std::vector<double> ref_invstd(c), ref_rm(c), ref_rv(c);
  for (int64_t i = 0; i < c; ++i) {
    ref_invstd[i] = 1.0 / std::sqrt(ref.var[i] + kEps);
    ref_rm[i] = 0.1 * ref.mean[i] + 0.9 * rm0[i];
    ref_rv[i] = 0.1 * ref.var[i] * count / (count - 1.0) + 0.9 * rv0[i];
  }
  const std::vector<float> merged = batch_stats.values();
  EXPECT_TRUE(all_close(ref.mean, slice(merged, 0, c), 1e-6, merged_scale)) << "merged mean";
  EXPECT_TRUE(all_close(ref_invstd, slice(merged, c, c), 1e-5)) << "merged invstd";
  EXPECT_EQ(merged[2 * c], static_cast<float>(count)) << "merged count";
  EXPECT_TRUE(all_close(ref_rm, rm.values(), 1e-6, merged_scale)) << "running mean";
  EXPECT_TRUE(all_close(ref_rv, rv.values(), 1e-5)) << "running var";

  // Normalize: plain, ReLU, residual + ReLU (in place over the residual), no affine.
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE("normalize variant " + std::to_string(variant));
    const bool relu = variant == 1 || variant == 2;
    const bool with_res = variant == 2;
    const float* w = variant == 3 ? nullptr : dw.floats();
    const float* b = variant == 3 ? nullptr : db.floats();
    SimtBuffer out(dtype, std::vector<float>(s.numel(), 7.f), offset);
    SimtBuffer res_inout(dtype, res, offset);
    std::vector<float> expected_values(s.numel());
    SimtBuffer expected(dtype, expected_values);
    cpu::batchnorm_normalize({.dtype = dtype,
                              .x = dx_in.data(),
                              .batch_stats = batch_stats.floats(),
                              .weight = w,
                              .bias = b,
                              .residual = with_res ? dres.data() : nullptr,
                              .relu = relu,
                              .y = expected.data(),
                              .rows = rows,
                              .channels = c});
    cuda::batchnorm_normalize({.dtype = dtype,
                               .x = dx_in.data(),
                               .batch_stats = batch_stats.floats(),
                               .weight = w,
                               .bias = b,
                               .residual = with_res ? res_inout.data() : nullptr,
                               .relu = relu,
                               .y = with_res ? res_inout.data() : out.data(),
                               .rows = rows,
                               .channels = c},
                              nullptr, launch.tile);
    EXPECT_TRUE(all_close(expected.values(), (with_res ? res_inout : out).values(), rel));
  }

  // Evaluation with the updated running statistics, fused residual + ReLU.
  {
    SimtBuffer out(dtype, std::vector<float>(s.numel(), 7.f), offset);
    SimtBuffer expected(dtype, std::vector<float>(s.numel()));
    BatchNormEvalForwardArgs args{.dtype = dtype,
                                  .x = dx_in.data(),
                                  .running_mean = rm.floats(),
                                  .running_var = rv.floats(),
                                  .weight = dw.floats(),
                                  .bias = db.floats(),
                                  .eps = kEps,
                                  .residual = dres.data(),
                                  .relu = true,
                                  .y = expected.data(),
                                  .rows = rows,
                                  .channels = c};
    cpu::batchnorm_eval_forward(args);
    args.y = out.data();
    cuda::batchnorm_eval_forward(args, nullptr, launch.tile);
    EXPECT_TRUE(all_close(expected.values(), out.values(), rel)) << "eval";
  }

  // Backward: the sums, then dx (in place over dy).
  SimtBuffer grad_sums = SimtBuffer::f32(2 * c);
  std::vector<float> cpu_sums(2 * c);
  BatchNormBackwardReduceArgs reduce{.dtype = dtype,
                                     .dy = ddy.data(),
                                     .x = dx_in.data(),
                                     .batch_stats = batch_stats.floats(),
                                     .grad_sums = cpu_sums.data(),
                                     .rows = rows,
                                     .channels = c};
  cpu::batchnorm_backward_reduce(reduce);
  reduce.grad_sums = grad_sums.floats();
  reduce.workspace = workspace.floats();
  cuda::batchnorm_backward_reduce(reduce, nullptr, launch.reduce);
  // Sums of rows * |dy| terms: relative to the RMS of the sums.
  EXPECT_TRUE(all_close(cpu_sums, grad_sums.values(), 1e-5)) << "grad_sums";

  SimtBuffer expected_dx(dtype, std::vector<float>(s.numel()));
  BatchNormBackwardElementwiseArgs elementwise{.dtype = dtype,
                                               .dy = ddy.data(),
                                               .x = dx_in.data(),
                                               .batch_stats = batch_stats.floats(),
                                               .weight = dw.floats(),
                                               .grad_sums = grad_sums.floats(),
                                               .dx = expected_dx.data(),
                                               .rows = rows,
                                               .channels = c};
  cpu::batchnorm_backward_elementwise(elementwise);
  elementwise.dx = ddy.data();  // in place over dy
  cuda::batchnorm_backward_elementwise(elementwise, nullptr, launch.tile);
  EXPECT_TRUE(all_close(expected_dx.values(), ddy.values(), rel)) << "dx";
}

TEST(BatchNormSimt, TrainingStepMatchesCpu) {
  for (DType dtype : kDTypes) {
    // The CPU suite's table: the scalar path (odd C), the vector path for both widths (C a
    // multiple of 8), many channel tiles (C = 2048), 286 rows (several partials).
    for (const BnShape& s : testing::kBnShapes) {
      for (const LaunchShapes& launch : kLaunchShapes) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " " + launch.str());
        check_training_step(s, dtype, launch, 0, 0.5, 2.0);
      }
    }
  }
}

TEST(BatchNormSimt, MisalignedPointersUseTheScalarPath) {
  // C = 64 would take the vector path; one element off it cannot.
  for (DType dtype : kDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    check_training_step({2, 2, 3, 64}, dtype, kLaunchShapes[1], 1, 0.5, 2.0);
  }
}

TEST(BatchNormSimt, LargeMeanStatsMatchReference) {
  // Mean 1e3, std 1, 2048 rows over 32 partials: each partial's shift keeps it exact.
  const BnShape s{2, 32, 32, 3};
  for (DType dtype : kDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::vector<float> x = normal_values(s.numel(), 7, dtype, 1e3, 1.0);
    SimtBuffer dx_in(dtype, x);
    SimtBuffer workspace = zeroed_workspace(cuda::batchnorm_workspace_numel(s.rows(), s.c, {}));
    SimtBuffer stats = SimtBuffer::f32(2 * s.c + 1);
    cuda::batchnorm_stats({.dtype = dtype,
                           .x = dx_in.data(),
                           .rows = s.rows(),
                           .channels = s.c,
                           .stats = stats.floats(),
                           .workspace = workspace.floats()},
                          nullptr);
    const testing::ReferenceStats ref = testing::reference_stats(x, s.rows(), s.c);
    const std::vector<float> got = stats.values();
    std::vector<double> m2(ref.var);
    for (double& v : m2)
      v *= static_cast<double>(s.rows());
    EXPECT_TRUE(all_close(ref.mean, slice(got, 0, s.c), 1e-7, 1e3));
    EXPECT_TRUE(all_close(m2, slice(got, s.c, s.c), 1e-5));
    EXPECT_EQ(got[2 * s.c], static_cast<float>(s.rows()));
  }
}

TEST(BatchNormSimt, SumPhasesKeepTheVarianceAtLargeMeans) {
  // The fp64 phases from the emulated stats kernels of three unequal "ranks" (one a single
  // row), at mean 0.5, 1e3 and 1e4 with std 1, against the double-precision statistics of all
  // rows together; C = 1, 5, 300 (the small grid's stride loop) and 2049.
  for (int64_t c : {int64_t{1}, int64_t{5}, int64_t{300}, int64_t{2049}}) {
    for (double mean : {0.5, 1e3, 1e4}) {
      for (const LaunchShapes& launch : kLaunchShapes) {
        SCOPED_TRACE("C " + std::to_string(c) + " mean " + std::to_string(mean) + " " +
                     launch.str());
        const int64_t rank_rows[] = {c > 300 ? 3 : 40, 1, c > 300 ? 5 : 70};
        std::vector<float> all;
        std::vector<double> reduced(2 * c + 1, 0.0);
        for (int r = 0; r < 3; ++r) {
          const int64_t rows = rank_rows[r];
          const std::vector<float> x =
              normal_values(rows * c, 50 + r, DType::f32, mean + 0.3 * r, 1.0);
          all.insert(all.end(), x.begin(), x.end());
          SimtBuffer in(DType::f32, x);
          SimtBuffer workspace =
              zeroed_workspace(cuda::batchnorm_workspace_numel(rows, c, launch.reduce));
          SimtBuffer stats = SimtBuffer::f32(2 * c + 1);
          cuda::batchnorm_stats({.dtype = DType::f32,
                                 .x = in.data(),
                                 .rows = rows,
                                 .channels = c,
                                 .stats = stats.floats(),
                                 .workspace = workspace.floats()},
                                nullptr, launch.reduce);
          const std::vector<double> sums = sums_checked(stats.values(), c, launch.channel);
          for (size_t i = 0; i < reduced.size(); ++i)
            reduced[i] += sums[i];
        }
        const int64_t total_rows = rank_rows[0] + rank_rows[1] + rank_rows[2];
        SimtBuffer sums(reduced), batch = SimtBuffer::f32(2 * c + 1);
        SimtBuffer rm(DType::f32, std::vector<float>(c, 0.f));
        SimtBuffer rv(DType::f32, std::vector<float>(c, 1.f));
        cuda::batchnorm_finalize_sums({.sums = sums.doubles(),
                                       .channels = c,
                                       .momentum = 0.1f,
                                       .eps = kEps,
                                       .running_mean = rm.floats(),
                                       .running_var = rv.floats(),
                                       .batch_stats = batch.floats()},
                                      nullptr, launch.channel);
        const testing::ReferenceStats ref = testing::reference_stats(all, total_rows, c);
        std::vector<double> invstd(c), ref_rm(c), ref_rv(c);
        const double n = static_cast<double>(total_rows);
        for (int64_t i = 0; i < c; ++i) {
          invstd[i] = 1.0 / std::sqrt(ref.var[i] + kEps);
          ref_rm[i] = 0.1 * ref.mean[i];
          ref_rv[i] = 0.9 + 0.1 * ref.var[i] * n / (n - 1.0);
        }
        // The sums are exact for each rank's fp32 (count, mean, m2); what remains is the fp32
        // rounding of each rank's mean (an ulp or two of 1e4 is 1e-3 std), which shifts that
        // rank's rows: the variance moves by 2 * (rank mean - global mean) * shift / var, up
        // to 7e-4 here, where the ranks' means differ by 0.3 and 0.6 std over 9 rows. The
        // mean: two ulps.
        const double spread = mean > 1e3 ? 1.5e-3 : mean > 1.0 ? 1.5e-4 : 1e-5;
        const double mean_rel = mean > 1.0 ? 3e-7 : 1e-6;
        const std::vector<float> got = batch.values();
        EXPECT_TRUE(all_close(ref.mean, slice(got, 0, c), mean_rel, mean + 1.0)) << "mean";
        EXPECT_TRUE(all_close(invstd, slice(got, c, c), spread)) << "invstd";
        EXPECT_EQ(got[2 * c], static_cast<float>(total_rows));
        EXPECT_TRUE(all_close(ref_rm, rm.values(), mean_rel, mean + 1.0)) << "running_mean";
        EXPECT_TRUE(all_close(ref_rv, rv.values(), spread)) << "running_var";
      }
    }
  }
}

TEST(BatchNormSimt, EntryPointsDispatchOnDtype) {
  // The DType entry points the op API calls on a GPU, with the default workspace size.
  const BnShape s{2, 3, 3, 16};
  for (DType dtype : kDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::vector<float> x = normal_values(s.numel(), 8, dtype);
    SimtBuffer dx_in(dtype, x);
    SimtBuffer workspace = zeroed_workspace(cuda::batchnorm_workspace_numel(s.rows(), s.c));
    SimtBuffer stats = SimtBuffer::f32(2 * s.c + 1), batch = SimtBuffer::f32(2 * s.c + 1);
    SimtBuffer stat_sums = SimtBuffer::f64(2 * s.c + 1);
    // Each phase on the emulator, then its CPU twin on the same struct with the outputs (and
    // the inputs the previous phase wrote) moved to host vectors.
    BatchNormStatsArgs stats_args{.dtype = dtype,
                                  .x = dx_in.data(),
                                  .rows = s.rows(),
                                  .channels = s.c,
                                  .stats = stats.floats(),
                                  .workspace = workspace.floats()};
    BatchNormStatsToSumsArgs sums_args{
        .stats = stats.floats(), .channels = s.c, .sums = stat_sums.doubles()};
    BatchNormFinalizeSumsArgs finalize_args{.sums = stat_sums.doubles(),
                                            .channels = s.c,
                                            .momentum = 0.1f,
                                            .eps = kEps,
                                            .batch_stats = batch.floats()};
    cuda::batchnorm_stats(stats_args, nullptr);
    cuda::batchnorm_stats_to_sums(sums_args, nullptr);
    cuda::batchnorm_finalize_sums(finalize_args, nullptr);
    std::vector<float> cpu_stats(2 * s.c + 1), cpu_batch(2 * s.c + 1);
    std::vector<double> cpu_stat_sums(2 * s.c + 1);
    stats_args.stats = cpu_stats.data();
    sums_args.stats = cpu_stats.data();
    sums_args.sums = cpu_stat_sums.data();
    finalize_args.sums = cpu_stat_sums.data();
    finalize_args.batch_stats = cpu_batch.data();
    cpu::batchnorm_stats(stats_args);
    cpu::batchnorm_stats_to_sums(sums_args);
    cpu::batchnorm_finalize_sums(finalize_args);
    expect_stats_close(cpu_batch, batch.values(), s.c, 1.0);

    SimtBuffer y(dtype, std::vector<float>(s.numel(), 7.f)), expected(dtype, y.values());
    BatchNormNormalizeArgs normalize{.dtype = dtype,
                                     .x = dx_in.data(),
                                     .batch_stats = batch.floats(),
                                     .relu = true,
                                     .y = y.data(),
                                     .rows = s.rows(),
                                     .channels = s.c};
    cuda::batchnorm_normalize(normalize, nullptr);
    normalize.y = expected.data();
    cpu::batchnorm_normalize(normalize);
    EXPECT_TRUE(all_close(expected.values(), y.values(), dtype == DType::f32 ? 1e-5 : kBf16Ulp));

    // dy independent of x: with dy = x the input gradient cancels to ~1e-5 of its terms and
    // the comparison would measure rounding order.
    SimtBuffer dy_in(dtype, normal_values(s.numel(), 9, dtype));
    SimtBuffer sums = SimtBuffer::f32(2 * s.c), dx = SimtBuffer(dtype, x);
    BatchNormBackwardReduceArgs reduce{.dtype = dtype,
                                       .dy = dy_in.data(),
                                       .x = dx_in.data(),
                                       .batch_stats = batch.floats(),
                                       .grad_sums = sums.floats(),
                                       .rows = s.rows(),
                                       .channels = s.c,
                                       .workspace = workspace.floats()};
    cuda::batchnorm_backward_reduce(reduce, nullptr);
    BatchNormBackwardElementwiseArgs elementwise{.dtype = dtype,
                                                 .dy = dy_in.data(),
                                                 .x = dx_in.data(),
                                                 .batch_stats = batch.floats(),
                                                 .grad_sums = sums.floats(),
                                                 .dx = dx.data(),
                                                 .rows = s.rows(),
                                                 .channels = s.c};
    cuda::batchnorm_backward_elementwise(elementwise, nullptr);
    std::vector<float> cpu_sums(2 * s.c);
    reduce.grad_sums = cpu_sums.data();
    cpu::batchnorm_backward_reduce(reduce);
    EXPECT_TRUE(all_close(cpu_sums, sums.values(), 1e-5));
    SimtBuffer cpu_dx(dtype, x);
    elementwise.dx = cpu_dx.data();
    cpu::batchnorm_backward_elementwise(elementwise);
    EXPECT_TRUE(all_close(cpu_dx.values(), dx.values(), dtype == DType::f32 ? 1e-5 : kBf16Ulp));

    SimtBuffer eval_y(dtype, y.values()), eval_expected(dtype, y.values());
    const std::vector<float> ones(s.c, 1.f);
    SimtBuffer rm(DType::f32, slice(cpu_batch, 0, s.c)), rv(DType::f32, ones);
    BatchNormEvalForwardArgs eval{.dtype = dtype,
                                  .x = dx_in.data(),
                                  .running_mean = rm.floats(),
                                  .running_var = rv.floats(),
                                  .eps = kEps,
                                  .y = eval_y.data(),
                                  .rows = s.rows(),
                                  .channels = s.c};
    cuda::batchnorm_eval_forward(eval, nullptr);
    eval.y = eval_expected.data();
    cpu::batchnorm_eval_forward(eval);
    EXPECT_TRUE(
        all_close(eval_expected.values(), eval_y.values(), dtype == DType::f32 ? 1e-5 : kBf16Ulp));
  }
}

}  // namespace
}  // namespace engine
