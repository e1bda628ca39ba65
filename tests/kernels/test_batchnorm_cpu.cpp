// The CPU batchnorm phases through the op API against naive double-precision references:
// statistics (also for mean 1e3, std 1), their fp64 sums, finalize and running statistics as
// PyTorch, the SyncBN sum of per-rank sums (also at mean 1e3 and 1e4, std 1), normalize with its
// fused epilogues, evaluation, and the backward against centered finite differences. The
// loops and thread counts that must not change the results: test_batchnorm_cpu_loops.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "batchnorm_cpu_ops.h"
#include "kernels/ops.h"
#include "tests/dtype_bytes.h"

namespace engine {
namespace {

using testing::all_close;
using testing::all_close_scaled;
using testing::BnShape;
using testing::kBf16Ulp;
using testing::kBnShapes;
using testing::normal_values;
using testing::to_double;

using testing::kDTypes;
using namespace testing::bn_cpu;

// stats -> fp64 sums through the op API.
std::vector<double> sums_of(const std::vector<float>& stats, Stream& stream) {
  Tensor sums = Tensor::empty({static_cast<int64_t>(stats.size())}, DType::f64);
  batchnorm_stats_to_sums(f32_tensor(stats), sums, stream);
  return sums.to_doubles(stream);
}

TEST(BatchNormCpu, StatsAndFinalizeMatchReference) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (const BnShape& s : kBnShapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str());
      const std::vector<float> x = normal_values(s.numel(), 1, dtype, 0.5, 2.0);
      const testing::ReferenceStats ref = testing::reference_stats(x, s.rows(), s.c);
      const std::vector<float> stats = stats_of(activation(s, x, dtype), stream);
      // Mean to fp32 rounding of the data's scale; m2 relative (inputs are exact in both).
      EXPECT_TRUE(all_close(ref.mean, slice(stats, 0, s.c), 1e-6, 2.0));
      EXPECT_TRUE(m2_matches(ref, stats, s));
      EXPECT_EQ(stats[2 * s.c], static_cast<float>(s.rows()));

      const std::vector<float> rm0 = normal_values(s.c, 2, DType::f32);
      std::vector<float> rv0 = normal_values(s.c, 3, DType::f32);
      for (float& v : rv0)
        v = std::abs(v) + 0.5f;
      Tensor running_mean = f32_tensor(rm0), running_var = f32_tensor(rv0);
      Tensor batch_stats = Tensor::empty({batchnorm_stats_numel(s.c)}, DType::f32);
      finalize(f32_tensor(stats), running_mean, running_var, batch_stats, stream);
      const std::vector<float> out = batch_stats.to_floats(stream);
      std::vector<double> invstd(s.c), expect_rm(s.c), expect_rv(s.c);
      const double n = static_cast<double>(s.rows());
      for (int64_t c = 0; c < s.c; ++c) {
        invstd[c] = 1.0 / std::sqrt(ref.var[c] + kEps);
        // torch.nn.BatchNorm2d: running = (1 - momentum) * running + momentum * batch, with
        // the unbiased variance.
        expect_rm[c] = (1 - kMomentum) * rm0[c] + kMomentum * ref.mean[c];
        expect_rv[c] = (1 - kMomentum) * rv0[c] + kMomentum * ref.var[c] * n / (n - 1);
      }
      EXPECT_TRUE(all_close(ref.mean, slice(out, 0, s.c), 1e-6, 2.0));
      EXPECT_TRUE(all_close(invstd, slice(out, s.c, s.c), 1e-5));
      EXPECT_EQ(out[2 * s.c], static_cast<float>(s.rows()));
      EXPECT_TRUE(all_close(expect_rm, running_mean.to_floats(stream), 1e-6, 1.0));
      EXPECT_TRUE(all_close(expect_rv, running_var.to_floats(stream), 1e-5));
    }
  }
}

TEST(BatchNormCpu, StatsStayAccurateForLargeMean) {
  // Mean 1e3, std 1: a fp32 sum/sum-of-squares formula loses the variance completely here.
  Stream stream;
  const BnShape s{8, 32, 32, 3};
  for (DType dtype : kDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::vector<float> x = normal_values(s.numel(), 4, dtype, 1e3, 1.0);
    const testing::ReferenceStats ref = testing::reference_stats(x, s.rows(), s.c);
    const std::vector<float> stats = stats_of(activation(s, x, dtype), stream);
    EXPECT_TRUE(all_close(ref.mean, slice(stats, 0, s.c), 1e-7, 1e3));
    EXPECT_TRUE(m2_matches(ref, stats, s));

    // The input is hard enough: the naive fp32 formula is far off on the same data.
    float sum = 0.f, sum_sq = 0.f;
    for (int64_t r = 0; r < s.rows(); ++r) {
      sum += x[r * s.c];
      sum_sq += x[r * s.c] * x[r * s.c];
    }
    const float n = static_cast<float>(s.rows());
    const double naive_var = sum_sq / n - (sum / n) * (sum / n);
    EXPECT_GT(std::abs(naive_var - ref.var[0]), 0.01 * ref.var[0]);
  }
}

TEST(BatchNormCpu, StatsToSumsMatchesNaiveDoubleSums) {
  // sum and sumsq against the plain fp64 sums of the data: they differ by the fp32 rounding of
  // the mean only (half an ulp, relative); count exactly.
  Stream stream;
  for (double mean : {0.5, 1e3, 1e4}) {
    for (const BnShape& s : {BnShape{2, 4, 4, 7}, BnShape{3, 5, 1, 17}, BnShape{1, 1, 3, 2048}}) {
      SCOPED_TRACE(s.str() + " mean " + std::to_string(mean));
      const std::vector<float> x = normal_values(s.numel(), 40, DType::f32, mean, 1.0);
      const std::vector<double> sums =
          sums_of(stats_of(activation(s, x, DType::f32), stream), stream);
      std::vector<double> sum(s.c, 0.0), sumsq(s.c, 0.0);
      for (size_t i = 0; i < x.size(); ++i) {
        sum[i % s.c] += x[i];
        sumsq[i % s.c] += static_cast<double>(x[i]) * x[i];
      }
      // The sums carry the fp32 statistics' errors, no more: the mean's (1e-6 of the data's
      // scale |mean| + std, as in StatsAndFinalizeMatchReference) times rows, and m2's (1e-5).
      const testing::ReferenceStats ref = testing::reference_stats(x, s.rows(), s.c);
      std::vector<double> sum_scales(s.c);
      for (int64_t c = 0; c < s.c; ++c)
        sum_scales[c] = static_cast<double>(s.rows()) * (std::abs(ref.mean[c]) + 1.0);
      EXPECT_TRUE(all_close_scaled(sum, std::vector<double>(sums.begin(), sums.begin() + s.c), 1e-6,
                                   sum_scales));
      EXPECT_TRUE(all_close_scaled(sumsq, std::vector<double>(sums.begin() + s.c, sums.end() - 1),
                                   1e-5, sumsq));
      EXPECT_EQ(sums[2 * s.c], static_cast<double>(s.rows()));
    }
  }
  // The conversion itself is exact where fp64 can be: sum = count * mean, and sumsq rounds once.
  const std::vector<float> stats = {1000.123f, 2.5f, 77.f};
  const std::vector<double> sums = sums_of(stats, stream);
  EXPECT_EQ(sums[0], 77.0 * static_cast<double>(1000.123f));
  EXPECT_EQ(sums[1], std::fma(sums[0], static_cast<double>(1000.123f), 2.5));
  EXPECT_EQ(sums[2], 77.0);
}

// SyncBN without ranks: the stats of unequal slices of the rows (one a single row), converted
// to sums and added in fp64 as the all-reduce adds them, finalize to the statistics of the
// whole batch. Also at mean 1e3 and 1e4 (std 1), where the same sums in fp32 lose the variance.
TEST(BatchNormCpu, FinalizeOfSummedPerRankSumsIsTheWholeBatch) {
  Stream stream;
  const int64_t channels = 6;
  const int64_t slice_rows[] = {37, 1, 90};
  const int64_t rows = 37 + 1 + 90;
  for (double mean : {3.0, 1e3, 1e4}) {
    SCOPED_TRACE("mean " + std::to_string(mean));
    const std::vector<float> x = normal_values(rows * channels, 5, DType::f32, mean, 1.0);
    std::vector<double> total(batchnorm_stats_numel(channels), 0.0);
    std::vector<float> total_f32(total.size(), 0.f);
    int64_t begin = 0;
    for (int64_t part_rows : slice_rows) {
      Tensor part = Tensor::from_floats({part_rows, channels},
                                        slice(x, begin * channels, part_rows * channels));
      const std::vector<double> sums = sums_of(stats_of(part, stream), stream);
      for (size_t i = 0; i < total.size(); ++i) {
        total[i] += sums[i];
        total_f32[i] += static_cast<float>(sums[i]);
      }
      begin += part_rows;
    }
    const std::vector<float> rm0(channels, 0.f), rv0(channels, 1.f);
    Tensor running_mean = f32_tensor(rm0), running_var = f32_tensor(rv0);
    Tensor merged = Tensor::empty({batchnorm_stats_numel(channels)}, DType::f32);
    batchnorm_finalize_sums({.sums = Tensor::from_doubles({batchnorm_stats_numel(channels)}, total),
                             .running_mean = running_mean,
                             .running_var = running_var,
                             .batch_stats = merged,
                             .constants = {.momentum = kMomentum, .eps = kEps}},
                            stream);
    const std::vector<float> out = merged.to_floats(stream);
    const testing::ReferenceStats ref = testing::reference_stats(x, rows, channels);
    std::vector<double> invstd(channels), expect_rm(channels), expect_rv(channels);
    const double n = static_cast<double>(rows);
    for (int64_t c = 0; c < channels; ++c) {
      invstd[c] = 1.0 / std::sqrt(ref.var[c] + kEps);
      expect_rm[c] = kMomentum * ref.mean[c];
      expect_rv[c] = (1 - kMomentum) + kMomentum * ref.var[c] * n / (n - 1);
    }
    // Means to fp32 rounding of their size; invstd within the rounding of each slice's fp32
    // mean (half an ulp of 1e4 is 5e-4 std, moving the variance by ~1e-5 here).
    const double spread_rel = mean > 1e3 ? 1e-4 : 1e-5;
    EXPECT_TRUE(all_close(ref.mean, slice(out, 0, channels), 1e-7, mean)) << "mean";
    EXPECT_TRUE(all_close(invstd, slice(out, channels, channels), spread_rel)) << "invstd";
    EXPECT_EQ(out[2 * channels], static_cast<float>(rows));
    EXPECT_TRUE(all_close(expect_rm, running_mean.to_floats(stream), 1e-7, mean)) << "running";
    EXPECT_TRUE(all_close(expect_rv, running_var.to_floats(stream), spread_rel)) << "running";

    // The data is hard enough: the same sums reduced in fp32 miss the variance by far more
    // than the tolerances above (here by 7% at mean 1e3, several times over at 1e4).
    const double n_f32 = total_f32[2 * channels];
    const double mean_f32 = total_f32[0] / n_f32;
    const double var_f32 = total_f32[channels] / n_f32 - mean_f32 * mean_f32;
    if (mean >= 1e3) {
      EXPECT_GT(std::abs(var_f32 - ref.var[0]), 0.01 * ref.var[0]) << var_f32;
    }
  }
}

TEST(BatchNormCpu, FinalizeSumsEdgeCases) {
  Stream stream;
  Tensor none;
  // A constant channel: rounding may leave sumsq/n - mean^2 slightly negative; clamped to 0,
  // so invstd is 1/sqrt(eps). A NaN input stays NaN. One value: the unbiased variance is NaN.
  const float constant = 1234.567f;
  const int64_t rows = 3;
  const double exact_sumsq = 3.0 * static_cast<double>(constant) * constant;
  std::vector<double> sums = {3.0 * constant, std::nan(""), std::nextafter(exact_sumsq, 0.0), 1.0,
                              static_cast<double>(rows)};
  Tensor batch_stats = Tensor::empty({5}, DType::f32);
  batchnorm_finalize_sums({.sums = Tensor::from_doubles({5}, sums),
                           .running_mean = none,
                           .running_var = none,
                           .batch_stats = batch_stats,
                           .constants = {.momentum = kMomentum, .eps = kEps}},
                          stream);
  const std::vector<float> out = batch_stats.to_floats(stream);
  EXPECT_EQ(out[0], constant);
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], static_cast<float>(1.0 / std::sqrt(static_cast<double>(kEps))));
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_EQ(out[4], 3.f);
  Tensor rm = f32_tensor({0.f}), rv = f32_tensor({1.f}), one = Tensor::empty({3}, DType::f32);
  batchnorm_finalize_sums({.sums = Tensor::from_doubles({3}, {2.0, 4.0, 1.0}),
                           .running_mean = rm,
                           .running_var = rv,
                           .batch_stats = one,
                           .constants = {.momentum = kMomentum, .eps = kEps}},
                          stream);
  EXPECT_FLOAT_EQ(rm.to_floats(stream)[0], 0.2f);
  EXPECT_TRUE(std::isnan(rv.to_floats(stream)[0]));
}

TEST(BatchNormCpu, NormalizeWithEpiloguesMatchesReference) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (const BnShape& s : kBnShapes) {
      for (int variant = 0; variant < 4; ++variant) {
        // 0: plain, 1: ReLU, 2: residual + ReLU, 3: no affine, residual without ReLU, in place.
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " variant " +
                     std::to_string(variant));
        const std::vector<float> x = normal_values(s.numel(), 6, dtype, -1.0, 3.0);
        const std::vector<float> res = normal_values(s.numel(), 7, dtype);
        Affine affine = make_affine(s.c, 8);
        if (variant == 3) affine = {std::vector<float>(s.c, 1.f), std::vector<float>(s.c, 0.f)};
        Tensor tx = activation(s, x, dtype);
        const Tensor batch_stats = batch_stats_from(stats_of(tx, stream), stream);

        BatchNormEpilogue epilogue;
        epilogue.relu = variant == 1 || variant == 2;
        if (variant >= 2) epilogue.residual = activation(s, res, dtype);
        Tensor w = variant == 3 ? Tensor() : f32_tensor(affine.weight);
        Tensor b = variant == 3 ? Tensor() : f32_tensor(affine.bias);
        Tensor y = variant == 3 ? tx : Tensor::empty(tx.shape(), dtype);
        batchnorm_normalize({.x = tx, .batch_stats = batch_stats, .weight = w, .bias = b, .y = y},
                            stream, epilogue);

        const testing::ReferenceStats ref = testing::reference_stats(x, s.rows(), s.c);
        const std::vector<double> expected =
            testing::reference_bn_apply(to_double(x), ref.mean, ref.var, kEps, affine.weight,
                                        affine.bias, variant >= 2 ? &res : nullptr, epilogue.relu);
        EXPECT_TRUE(
            all_close(expected, y.to_floats(stream), dtype == DType::f32 ? 1e-5 : kBf16Ulp));
      }
    }
  }
}

TEST(BatchNormCpu, EvalForwardUsesRunningStats) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (const BnShape& s : kBnShapes) {
      for (bool fused : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + (fused ? " add+relu" : ""));
        const std::vector<float> x = normal_values(s.numel(), 9, dtype, 2.0, 1.5);
        const std::vector<float> res = normal_values(s.numel(), 10, dtype);
        const std::vector<float> rm = normal_values(s.c, 11, DType::f32, 2.0, 0.5);
        std::vector<float> rv = normal_values(s.c, 12, DType::f32);
        for (float& v : rv)
          v = v * v + 0.1f;
        const Affine affine = make_affine(s.c, 13);
        BatchNormEpilogue epilogue;
        epilogue.relu = fused;
        if (fused) epilogue.residual = activation(s, res, dtype);
        Tensor y = Tensor::empty({s.n, s.h, s.w, s.c}, dtype);
        batchnorm_eval_forward({.x = activation(s, x, dtype),
                                .running_mean = f32_tensor(rm),
                                .running_var = f32_tensor(rv),
                                .weight = f32_tensor(affine.weight),
                                .bias = f32_tensor(affine.bias),
                                .y = y,
                                .eps = kEps},
                               stream, epilogue);
        const std::vector<double> expected =
            testing::reference_bn_apply(to_double(x), to_double(rm), to_double(rv), kEps,
                                        affine.weight, affine.bias, fused ? &res : nullptr, fused);
        EXPECT_TRUE(
            all_close(expected, y.to_floats(stream), dtype == DType::f32 ? 1e-5 : kBf16Ulp));
      }
    }
  }
}

TEST(BatchNormCpu, BackwardMatchesFiniteDifferences) {
  // L = sum(dy * BN_train(x; w, b)) in double; centered differences for x, w and b.
  Stream stream;
  for (const BnShape& s : kBnShapes) {
    if (s.numel() > 400) continue;
    SCOPED_TRACE(s.str());
    const std::vector<float> x = normal_values(s.numel(), 14, DType::f32, 0.3, 1.2);
    const std::vector<float> dy = normal_values(s.numel(), 15, DType::f32);
    const Affine affine = make_affine(s.c, 16);
    const BackwardResult got = run_backward(s, DType::f32, x, dy, affine.weight, stream);

    auto loss = [&](const std::vector<double>& in, const Affine& a) {
      const std::vector<double> y = testing::reference_bn_train(in, s.c, kEps, a.weight, a.bias);
      double total = 0;
      for (size_t i = 0; i < y.size(); ++i)
        total += dy[i] * y[i];
      return total;
    };
    const double h = 1e-3;
    std::vector<double> xd = to_double(x), fd_dx(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double saved = xd[i];
      xd[i] = saved + h;
      const double up = loss(xd, affine);
      xd[i] = saved - h;
      const double down = loss(xd, affine);
      xd[i] = saved;
      fd_dx[i] = (up - down) / (2 * h);
    }
    std::vector<double> fd_dw(s.c), fd_db(s.c);
    for (int64_t c = 0; c < s.c; ++c) {
      Affine a = affine;
      a.weight[c] = affine.weight[c] + static_cast<float>(h);
      const double w_up = loss(xd, a);
      a.weight[c] = affine.weight[c] - static_cast<float>(h);
      fd_dw[c] = (w_up - loss(xd, a)) / (2 * h);
      a = affine;
      a.bias[c] = affine.bias[c] + static_cast<float>(h);
      const double b_up = loss(xd, a);
      a.bias[c] = affine.bias[c] - static_cast<float>(h);
      fd_db[c] = (b_up - loss(xd, a)) / (2 * h);
    }
    // Finite differences in double are good to ~1e-7 here; the rest is fp32.
    EXPECT_TRUE(all_close_scaled(fd_dx, got.dx, 1e-5, term_scales(s, x, dy, affine.weight)));
    EXPECT_TRUE(all_close(fd_db, slice(got.grad_sums, 0, s.c), 1e-4));
    EXPECT_TRUE(all_close(fd_dw, slice(got.grad_sums, s.c, s.c), 1e-4));
  }
}

TEST(BatchNormCpu, BackwardMatchesReferenceForEveryShape) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (const BnShape& s : kBnShapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str());
      const std::vector<float> x = normal_values(s.numel(), 17, dtype, 0.5, 2.0);
      const std::vector<float> dy = normal_values(s.numel(), 18, dtype);
      const Affine affine = make_affine(s.c, 19);
      const BackwardResult got = run_backward(s, dtype, x, dy, affine.weight, stream);
      const testing::ReferenceBnGrads ref =
          testing::reference_bn_backward(x, dy, s.c, kEps, affine.weight);
      EXPECT_TRUE(all_close_scaled(ref.dx, got.dx, dtype == DType::f32 ? 1e-5 : kBf16Ulp,
                                   term_scales(s, x, dy, affine.weight)));
      EXPECT_TRUE(all_close(ref.dbias, slice(got.grad_sums, 0, s.c), 1e-5));
      EXPECT_TRUE(all_close(ref.dweight, slice(got.grad_sums, s.c, s.c), 1e-5));
    }
  }
}

TEST(BatchNormCpu, BackwardStaysAccurateForLargeMean) {
  // Mean 1e3, std 1: x - mean is formed before any product, so only the fp32 rounding of the
  // mean (half an ulp of 1e3, 3e-5 of a standard deviation) reaches the gradients.
  Stream stream;
  const BnShape s{8, 16, 16, 3};
  for (DType dtype : kDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::vector<float> x = normal_values(s.numel(), 20, dtype, 1e3, 1.0);
    const std::vector<float> dy = normal_values(s.numel(), 21, dtype);
    const Affine affine = make_affine(s.c, 22);
    const BackwardResult got = run_backward(s, dtype, x, dy, affine.weight, stream);
    const testing::ReferenceBnGrads ref =
        testing::reference_bn_backward(x, dy, s.c, kEps, affine.weight);
    // Error budget: 3e-5 (mean) * |sum dy| (~sqrt(rows) = 45) against |sum dy xhat| (~45).
    const std::vector<double> scales = term_scales(s, x, dy, affine.weight);
    EXPECT_TRUE(all_close_scaled(ref.dx, got.dx, dtype == DType::f32 ? 1e-4 : kBf16Ulp, scales));
    EXPECT_TRUE(all_close(ref.dbias, slice(got.grad_sums, 0, s.c), 1e-5));
    EXPECT_TRUE(all_close(ref.dweight, slice(got.grad_sums, s.c, s.c), 3e-4));
  }
}

TEST(BatchNormCpu, ArgumentErrorsNameTheTensor) {
  Stream stream;
  Tensor x = Tensor::empty({2, 3, 3, 4}, DType::f32);
  Tensor workspace = Tensor::empty({0}, DType::f32);
  Tensor short_stats = Tensor::empty({8}, DType::f32);
  try {
    batchnorm_stats({.x = x, .stats = short_stats, .workspace = workspace}, stream);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("batchnorm_stats: stats is f32[8] on cpu"),
              std::string::npos)
        << error.what();
  }
  Tensor batch_stats = Tensor::empty({9}, DType::f32);
  Tensor y = Tensor::empty({2, 3, 3, 4}, DType::f32);
  Tensor bf16_weight = Tensor::empty({4}, DType::bf16);
  Tensor none;
  try {
    batchnorm_normalize(
        {.x = x, .batch_stats = batch_stats, .weight = bf16_weight, .bias = none, .y = y}, stream);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("batchnorm_normalize: weight is bf16[4]"),
              std::string::npos)
        << error.what();
  }
  BatchNormEpilogue bad_residual;
  bad_residual.residual = Tensor::empty({2, 3, 3, 5}, DType::f32);
  EXPECT_THROW(batchnorm_normalize(
                   {.x = x, .batch_stats = batch_stats, .weight = none, .bias = none, .y = y},
                   stream, bad_residual),
               Error);
  Tensor sums = Tensor::empty({9}, DType::f64);
  Tensor even = Tensor::empty({10}, DType::f32);  // not 2C+1
  EXPECT_THROW(batchnorm_stats_to_sums(even, sums, stream), Error);
  EXPECT_THROW(batchnorm_finalize_sums({.sums = sums,
                                        .running_mean = none,
                                        .running_var = none,
                                        .batch_stats = batch_stats,
                                        .constants = {.momentum = 1.5f, .eps = kEps}},
                                       stream),
               Error);
  Tensor f32_sums = Tensor::empty({9}, DType::f32);
  try {
    batchnorm_stats_to_sums(batch_stats, f32_sums, stream);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("batchnorm_stats_to_sums: sums is f32[9] on cpu, expected f64 with 9 "
                        "elements on cpu"),
              std::string::npos)
        << error.what();
  }
  try {
    batchnorm_finalize_sums({.sums = f32_sums,
                             .running_mean = none,
                             .running_var = none,
                             .batch_stats = batch_stats,
                             .constants = {.momentum = 0.1f, .eps = kEps}},
                            stream);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("batchnorm_finalize_sums: sums is f32[9]"),
              std::string::npos)
        << error.what();
  }
  Tensor short_running = Tensor::empty({3}, DType::f32);
  EXPECT_THROW(batchnorm_finalize_sums({.sums = sums,
                                        .running_mean = short_running,
                                        .running_var = none,
                                        .batch_stats = batch_stats,
                                        .constants = {.momentum = 0.1f, .eps = kEps}},
                                       stream),
               Error);
  Tensor grad_sums = Tensor::empty({9}, DType::f32);
  EXPECT_THROW(batchnorm_backward_reduce({.dy = x,
                                          .x = x,
                                          .batch_stats = batch_stats,
                                          .grad_sums = grad_sums,
                                          .workspace = workspace},
                                         stream),
               Error);
  Tensor flat = Tensor::empty({5}, DType::f32);
  EXPECT_THROW(batchnorm_workspace_numel(flat), Error);
}

}  // namespace
}  // namespace engine
