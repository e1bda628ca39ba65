// The CUDA loss kernels through their launchers under the SIMT emulator, against the CPU
// twins: cross-entropy forward (per-sample and mean) and backward with and without label
// smoothing, invalid labels, top-1/top-5 counts with ties; default grids and a 2-block grid
// that makes warps stride over rows.
#include "sim/simt/simt.h"
// The kernels under test, compiled here by g++ for the emulator.
#include "kernels/cuda/loss.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "close_values.h"
#include "kernels/cpu/loss.h"
#include "kernels/error.h"
#include "loss_cases.h"
#include "simt_buffer.h"
#include "tests/dtype_bytes.h"
#include "tests/error_text.h"

namespace engine {
namespace {

using testing::all_close;
using testing::kBf16Ulp;
using testing::LossShape;
using testing::SimtBuffer;

using testing::kDTypes;
const cuda::RowLaunch kGrids[] = {{8, 1024}, {2, 2}};

TEST(LossSimt, CrossEntropyMatchesCpu) {
  for (DType dtype : kDTypes) {
    for (const LossShape& s : testing::kLossShapes) {
      for (float smoothing : {0.f, 0.1f}) {
        for (const cuda::RowLaunch& grid : kGrids) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " smoothing " +
                       std::to_string(smoothing) + " blocks<=" + std::to_string(grid.max_blocks));
          const std::vector<float> z = testing::normal_values(s.n * s.k, 1, dtype, 100.0, 3.0);
          std::vector<int32_t> labels = testing::make_labels(s.n, s.k, 2);
          if (s.n > 2) labels[1] = static_cast<int32_t>(s.k);  // out of range: NaN row
          SimtBuffer logits(dtype, z), dlabels(labels);
          SimtBuffer sample = SimtBuffer::f32(s.n), loss = SimtBuffer::f32(1);
          std::vector<float> cpu_sample(s.n), cpu_loss(1);
          cpu::cross_entropy_forward({.dtype = dtype,
                                      .logits = logits.data(),
                                      .labels = labels.data(),
                                      .n = s.n,
                                      .k = s.k,
                                      .label_smoothing = smoothing,
                                      .sample_loss = cpu_sample.data(),
                                      .loss = cpu_loss.data()});
          cuda::cross_entropy_forward({.dtype = dtype,
                                       .logits = logits.data(),
                                       .labels = dlabels.ints(),
                                       .n = s.n,
                                       .k = s.k,
                                       .label_smoothing = smoothing,
                                       .sample_loss = sample.floats(),
                                       .loss = loss.floats()},
                                      nullptr, grid);
          // fp32 log-sum-exp of logits near 100: a few ulps of 100.
          EXPECT_TRUE(all_close(cpu_sample, sample.values(), 1e-6, 100.0));
          EXPECT_TRUE(all_close(cpu_loss, loss.values(), 1e-6, 100.0));

          SimtBuffer dz(dtype, std::vector<float>(s.n * s.k, 7.f));
          SimtBuffer cpu_dz(dtype, std::vector<float>(s.n * s.k));
          cpu::cross_entropy_backward({.dtype = dtype,
                                       .logits = logits.data(),
                                       .labels = labels.data(),
                                       .n = s.n,
                                       .k = s.k,
                                       .label_smoothing = smoothing,
                                       .grad_loss = 1.5f,
                                       .dlogits = cpu_dz.data()});
          cuda::cross_entropy_backward({.dtype = dtype,
                                        .logits = logits.data(),
                                        .labels = dlabels.ints(),
                                        .n = s.n,
                                        .k = s.k,
                                        .label_smoothing = smoothing,
                                        .grad_loss = 1.5f,
                                        .dlogits = dz.data()},
                                       nullptr, grid);
          // Entries (p - q) * 1.5 / n: relative to 1.5 / n.
          EXPECT_TRUE(all_close(cpu_dz.values(), dz.values(), dtype == DType::f32 ? 1e-5 : kBf16Ulp,
                                1.5 / s.n));
        }
      }
    }
  }
}

TEST(LossSimt, SoftCrossEntropyMatchesCpu) {
  for (DType dtype : kDTypes) {
    for (const LossShape& s : testing::kLossShapes) {
      for (const cuda::RowLaunch& grid : kGrids) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() +
                     " blocks<=" + std::to_string(grid.max_blocks));
        const std::vector<float> z = testing::normal_values(s.n * s.k, 1, dtype, 100.0, 3.0);
        const std::vector<float> t = testing::make_soft_targets(s.n, s.k, 2);
        SimtBuffer logits(dtype, z), targets(DType::f32, t);
        SimtBuffer sample = SimtBuffer::f32(s.n), loss = SimtBuffer::f32(1);
        std::vector<float> cpu_sample(s.n), cpu_loss(1);
        cpu::soft_cross_entropy_forward({.dtype = dtype,
                                         .logits = logits.data(),
                                         .targets = t.data(),
                                         .n = s.n,
                                         .k = s.k,
                                         .sample_loss = cpu_sample.data(),
                                         .loss = cpu_loss.data()});
        cuda::soft_cross_entropy_forward({.dtype = dtype,
                                          .logits = logits.data(),
                                          .targets = targets.floats(),
                                          .n = s.n,
                                          .k = s.k,
                                          .sample_loss = sample.floats(),
                                          .loss = loss.floats()},
                                         nullptr, grid);
        // fp32 sums over k of t_j z_j in another order, logits near 100.
        EXPECT_TRUE(all_close(cpu_sample, sample.values(), 1e-5, 100.0));
        EXPECT_TRUE(all_close(cpu_loss, loss.values(), 1e-5, 100.0));

        // In place, as the trainer runs it: dlogits aliases logits.
        SimtBuffer dz(dtype, z);
        SimtBuffer cpu_dz(dtype, std::vector<float>(s.n * s.k));
        cpu::soft_cross_entropy_backward({.dtype = dtype,
                                          .logits = logits.data(),
                                          .targets = t.data(),
                                          .n = s.n,
                                          .k = s.k,
                                          .grad_loss = 1.5f,
                                          .dlogits = cpu_dz.data()});
        cuda::soft_cross_entropy_backward({.dtype = dtype,
                                           .logits = dz.data(),
                                           .targets = targets.floats(),
                                           .n = s.n,
                                           .k = s.k,
                                           .grad_loss = 1.5f,
                                           .dlogits = dz.data()},
                                          nullptr, grid);
        EXPECT_TRUE(all_close(cpu_dz.values(), dz.values(), dtype == DType::f32 ? 1e-5 : kBf16Ulp,
                              1.5 / s.n));
      }
    }
  }
}

TEST(LossSimt, MeanOfManyValidRowsMatchesCpu) {
  // More rows than the mean kernel's threads and not a multiple of them: threads sum several
  // samples each, and the tree adds every partial. All labels valid, so the mean is a number
  // (the cases above with an invalid label only check that it is NaN). One sample missed or
  // counted twice moves the mean by ~1/n of it, far above the fp32 summation error.
  static_assert(cuda::kMeanThreads == 256);
  for (DType dtype : kDTypes) {
    for (int64_t n : {257, 777}) {
      for (const cuda::RowLaunch& grid : kGrids) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " n " + std::to_string(n) +
                     " blocks<=" + std::to_string(grid.max_blocks));
        const int64_t k = 10;
        const std::vector<float> z = testing::normal_values(n * k, 21, dtype, 0.0, 3.0);
        const std::vector<int32_t> labels = testing::make_labels(n, k, 22);
        SimtBuffer logits(dtype, z), dlabels(labels);
        SimtBuffer sample = SimtBuffer::f32(n), loss = SimtBuffer::f32(1);
        std::vector<float> cpu_sample(n), cpu_loss(1);
        cpu::cross_entropy_forward({.dtype = dtype,
                                    .logits = logits.data(),
                                    .labels = labels.data(),
                                    .n = n,
                                    .k = k,
                                    .sample_loss = cpu_sample.data(),
                                    .loss = cpu_loss.data()});
        ASSERT_TRUE(std::isfinite(cpu_loss[0]) && cpu_loss[0] > 0.f) << cpu_loss[0];
        cuda::cross_entropy_forward({.dtype = dtype,
                                     .logits = logits.data(),
                                     .labels = dlabels.ints(),
                                     .n = n,
                                     .k = k,
                                     .sample_loss = sample.floats(),
                                     .loss = loss.floats()},
                                    nullptr, grid);
        EXPECT_TRUE(all_close(cpu_sample, sample.values(), 1e-6, 10.0));
        EXPECT_TRUE(all_close(cpu_loss, loss.values(), testing::kF32Rel)) << cpu_loss[0];
      }
    }
  }
}

TEST(LossSimt, BackwardInPlaceMatchesCpu) {
  const LossShape s{4, 70};
  const std::vector<float> z = testing::normal_values(s.n * s.k, 3, DType::f32);
  const std::vector<int32_t> labels = testing::make_labels(s.n, s.k, 4);
  SimtBuffer inout(DType::f32, z), dlabels(labels);
  std::vector<float> expected(z.size());
  cpu::cross_entropy_backward({.logits = z.data(),
                               .labels = labels.data(),
                               .n = s.n,
                               .k = s.k,
                               .label_smoothing = 0.1f,
                               .dlogits = expected.data()});
  cuda::cross_entropy_backward({.logits = inout.data(),
                                .labels = dlabels.ints(),
                                .n = s.n,
                                .k = s.k,
                                .label_smoothing = 0.1f,
                                .dlogits = inout.data()},
                               nullptr);
  EXPECT_TRUE(all_close(expected, inout.values(), 1e-5, 1.0 / s.n));
}

TEST(LossSimt, TopkMatchesCpu) {
  for (DType dtype : kDTypes) {
    for (const LossShape& s : testing::kLossShapes) {
      for (const cuda::RowLaunch& grid : kGrids) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str());
        // Multiples of 0.5: many ties with the label.
        std::vector<float> z = testing::normal_values(s.n * s.k, 5, DType::f32);
        for (float& v : z)
          v = std::round(v * 2.f) / 2.f;
        std::vector<int32_t> labels = testing::make_labels(s.n, s.k, 6);
        if (s.n > 2) labels[2] = -3;  // never counts
        SimtBuffer logits(dtype, z), dlabels(labels);
        SimtBuffer correct(DType::f32, {7.f, 7.f});
        std::vector<float> expected(2);
        cpu::topk_correct({.dtype = dtype,
                           .logits = logits.data(),
                           .labels = labels.data(),
                           .n = s.n,
                           .k = s.k,
                           .correct = expected.data()});
        cuda::topk_correct({.dtype = dtype,
                            .logits = logits.data(),
                            .labels = dlabels.ints(),
                            .n = s.n,
                            .k = s.k,
                            .correct = correct.floats()},
                           nullptr, grid);
        EXPECT_EQ(expected, correct.values());
      }
    }
  }
}

TEST(LossSimt, EntryPointsDispatchOnDtype) {
  const LossShape s{6, 40};
  for (DType dtype : kDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::vector<float> z = testing::normal_values(s.n * s.k, 7, dtype);
    const std::vector<int32_t> labels = testing::make_labels(s.n, s.k, 8);
    SimtBuffer logits(dtype, z), dlabels(labels);
    SimtBuffer sample = SimtBuffer::f32(s.n), loss = SimtBuffer::f32(1);
    std::vector<float> cpu_sample(s.n), cpu_loss(1);
    // Each entry point on the emulator, then its CPU twin on the same struct with only the
    // outputs moved to host vectors.
    CrossEntropyForwardArgs forward{.dtype = dtype,
                                    .logits = logits.data(),
                                    .labels = dlabels.ints(),
                                    .n = s.n,
                                    .k = s.k,
                                    .sample_loss = sample.floats(),
                                    .loss = loss.floats()};
    cuda::cross_entropy_forward(forward, nullptr);
    forward.sample_loss = cpu_sample.data();
    forward.loss = cpu_loss.data();
    cpu::cross_entropy_forward(forward);
    EXPECT_TRUE(all_close(cpu_loss, loss.values(), 1e-6, 1.0));
    SimtBuffer dz(dtype, z), cpu_dz(dtype, z);
    CrossEntropyBackwardArgs backward{.dtype = dtype,
                                      .logits = logits.data(),
                                      .labels = dlabels.ints(),
                                      .n = s.n,
                                      .k = s.k,
                                      .dlogits = dz.data()};
    cuda::cross_entropy_backward(backward, nullptr);
    backward.dlogits = cpu_dz.data();
    cpu::cross_entropy_backward(backward);
    EXPECT_TRUE(
        all_close(cpu_dz.values(), dz.values(), dtype == DType::f32 ? 1e-5 : kBf16Ulp, 1.0 / s.n));
    SimtBuffer correct = SimtBuffer::f32(2);
    std::vector<float> cpu_correct(2);
    TopkCorrectArgs topk{.dtype = dtype,
                         .logits = logits.data(),
                         .labels = dlabels.ints(),
                         .n = s.n,
                         .k = s.k,
                         .correct = correct.floats()};
    cuda::topk_correct(topk, nullptr);
    topk.correct = cpu_correct.data();
    cpu::topk_correct(topk);
    EXPECT_EQ(cpu_correct, correct.values());
  }
}

using testing::error_of;

TEST(LossSimt, EntryPointsRefuseI32Logits) {
  // i32 logits are never taken for bf16: the entry points throw before any launch.
  const LossShape s{2, 4};
  SimtBuffer logits(std::vector<int32_t>(8, 1)), labels(std::vector<int32_t>{0, 1});
  SimtBuffer sample = SimtBuffer::f32(2), loss = SimtBuffer::f32(1), correct = SimtBuffer::f32(2);
  EXPECT_EQ(error_of([&] {
              cuda::cross_entropy_forward({.dtype = DType::i32,
                                           .logits = logits.data(),
                                           .labels = labels.ints(),
                                           .n = s.n,
                                           .k = s.k,
                                           .sample_loss = sample.floats(),
                                           .loss = loss.floats()},
                                          nullptr);
            }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(error_of([&] {
              cuda::cross_entropy_backward({.dtype = DType::i32,
                                            .logits = logits.data(),
                                            .labels = labels.ints(),
                                            .n = s.n,
                                            .k = s.k,
                                            .dlogits = logits.data()},
                                           nullptr);
            }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(error_of([&] {
              cuda::topk_correct({.dtype = DType::i32,
                                  .logits = logits.data(),
                                  .labels = labels.ints(),
                                  .n = s.n,
                                  .k = s.k,
                                  .correct = correct.floats()},
                                 nullptr);
            }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(logits.int_values(), std::vector<int32_t>(8, 1));
  EXPECT_TRUE(std::isnan(loss.values()[0]));  // untouched
}

}  // namespace
}  // namespace engine
