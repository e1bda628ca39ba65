// The CPU loss ops through the op API against naive double-precision references: softmax
// cross-entropy with and without label smoothing (also for logits large enough to overflow
// exp without the max shift), its backward against centered finite differences, invalid
// labels, and top-1/top-5 counts with ties.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "close_values.h"
#include "kernels/ops.h"
#include "loss_cases.h"
#include "tests/dtype_bytes.h"
#include "tests/error_text.h"

namespace engine {
namespace {

using testing::all_close;
using testing::kBf16Ulp;
using testing::kLossShapes;
using testing::LossShape;

using testing::kDTypes;
const float kSmoothings[] = {0.f, 0.1f};

struct ForwardResult {
  std::vector<float> sample_loss;
  float loss;
};
ForwardResult run_forward(const LossShape& s, const std::vector<float>& logits,
                          const std::vector<int32_t>& labels, float smoothing, DType dtype,
                          Stream& stream) {
  Tensor sample_loss = Tensor::empty({s.n}, DType::f32);
  Tensor loss = Tensor::empty({1}, DType::f32);
  cross_entropy_forward({.logits = Tensor::from_floats({s.n, s.k}, logits, dtype),
                         .labels = Tensor::from_ints({s.n}, labels),
                         .sample_loss = sample_loss,
                         .loss = loss,
                         .label_smoothing = smoothing},
                        stream);
  return {sample_loss.to_floats(stream), loss.to_floats(stream)[0]};
}

TEST(LossCpu, CrossEntropyForwardMatchesReference) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (float smoothing : kSmoothings) {
      for (const LossShape& s : kLossShapes) {
        for (double offset : {0.0, 200.0}) {
          // offset 200: exp(z) overflows fp32 unless the max is subtracted first.
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " smoothing " +
                       std::to_string(smoothing) + " offset " + std::to_string(offset));
          const std::vector<float> z = testing::normal_values(s.n * s.k, 1, dtype, offset, 3.0);
          const std::vector<int32_t> labels = testing::make_labels(s.n, s.k, 2);
          const std::vector<double> ref =
              testing::reference_cross_entropy(z, labels, s.k, smoothing);
          const ForwardResult got = run_forward(s, z, labels, smoothing, dtype, stream);
          // The inputs are exact in both; fp32 log-sum-exp is good to a few ulps of the
          // largest logit (the scale).
          const double scale = std::max(1.0, offset + 10.0);
          EXPECT_TRUE(all_close(ref, got.sample_loss, 1e-6, scale));
          EXPECT_TRUE(all_close(std::vector<double>{testing::mean_of(ref)},
                                std::vector<float>{got.loss}, 1e-6, scale));
        }
      }
    }
  }
}

TEST(LossCpu, CrossEntropyBackwardMatchesFiniteDifferences) {
  // L = grad_loss * mean cross-entropy, in double; centered differences for every logit.
  Stream stream;
  const float grad_loss = 0.75f;
  for (float smoothing : kSmoothings) {
    for (const LossShape& s : kLossShapes) {
      if (s.n * s.k > 2000) continue;
      SCOPED_TRACE(s.str() + " smoothing " + std::to_string(smoothing));
      std::vector<float> z = testing::normal_values(s.n * s.k, 3, DType::f32, 0.0, 2.0);
      const std::vector<int32_t> labels = testing::make_labels(s.n, s.k, 4);
      Tensor dz = Tensor::empty({s.n, s.k}, DType::f32);
      cross_entropy_backward({.logits = Tensor::from_floats({s.n, s.k}, z),
                              .labels = Tensor::from_ints({s.n}, labels),
                              .dlogits = dz,
                              .label_smoothing = smoothing,
                              .grad_loss = grad_loss},
                             stream);
      std::vector<double> fd(z.size());
      for (size_t i = 0; i < z.size(); ++i) {
        const float saved = z[i];
        const float up = saved + 1e-2f, down = saved - 1e-2f;
        z[i] = up;
        const double l_up =
            testing::mean_of(testing::reference_cross_entropy(z, labels, s.k, smoothing));
        z[i] = down;
        const double l_down =
            testing::mean_of(testing::reference_cross_entropy(z, labels, s.k, smoothing));
        z[i] = saved;
        fd[i] = grad_loss * (l_up - l_down) / (static_cast<double>(up) - down);
      }
      // Entries are (p - q) / n with |p - q| <= 1: the scale is 1 / n. The O(h^2) error of
      // the differences is below 1e-5 of it.
      EXPECT_TRUE(all_close(fd, dz.to_floats(stream), 1e-4, grad_loss / static_cast<double>(s.n)));
    }
  }
}

TEST(LossCpu, SoftCrossEntropyForwardMatchesReference) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (const LossShape& s : kLossShapes) {
      for (double offset : {0.0, 200.0}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " offset " +
                     std::to_string(offset));
        const std::vector<float> z = testing::normal_values(s.n * s.k, 1, dtype, offset, 3.0);
        const std::vector<float> t = testing::make_soft_targets(s.n, s.k, 2);
        const std::vector<double> ref = testing::reference_soft_cross_entropy(z, t, s.k);
        Tensor sample_loss = Tensor::empty({s.n}, DType::f32);
        Tensor loss = Tensor::empty({1}, DType::f32);
        soft_cross_entropy_forward({.logits = Tensor::from_floats({s.n, s.k}, z, dtype),
                                    .targets = Tensor::from_floats({s.n, s.k}, t),
                                    .sample_loss = sample_loss,
                                    .loss = loss},
                                   stream);
        // fp32 sums over k of terms up to the largest logit: a few ulps of it per term.
        const double scale = std::max(1.0, offset + 10.0);
        EXPECT_TRUE(all_close(ref, sample_loss.to_floats(stream), 1e-5, scale));
        EXPECT_TRUE(all_close(std::vector<double>{testing::mean_of(ref)}, loss.to_floats(stream),
                              1e-5, scale));
      }
    }
  }
}

// Soft targets that are one-hot and smoothed give the hard-label loss and gradient: the two
// ops agree where their definitions meet.
TEST(LossCpu, SoftCrossEntropyOfSmoothedOneHotIsCrossEntropy) {
  Stream stream;
  const LossShape s{5, 1000};
  const std::vector<float> z = testing::normal_values(s.n * s.k, 7, DType::f32, 0.0, 3.0);
  const std::vector<int32_t> labels = testing::make_labels(s.n, s.k, 8);
  std::vector<float> t(static_cast<size_t>(s.n * s.k), 0.1f / static_cast<float>(s.k));
  for (int64_t i = 0; i < s.n; ++i)
    t[static_cast<size_t>(i * s.k + labels[static_cast<size_t>(i)])] += 0.9f;
  const Tensor logits = Tensor::from_floats({s.n, s.k}, z);
  Tensor hard = Tensor::empty({s.n}, DType::f32), soft = Tensor::empty({s.n}, DType::f32);
  Tensor hard_mean = Tensor::empty({1}, DType::f32), soft_mean = Tensor::empty({1}, DType::f32);
  cross_entropy_forward({.logits = logits,
                         .labels = Tensor::from_ints({s.n}, labels),
                         .sample_loss = hard,
                         .loss = hard_mean,
                         .label_smoothing = 0.1f},
                        stream);
  soft_cross_entropy_forward({.logits = logits,
                              .targets = Tensor::from_floats({s.n, s.k}, t),
                              .sample_loss = soft,
                              .loss = soft_mean},
                             stream);
  EXPECT_TRUE(all_close(hard.to_floats(stream), soft.to_floats(stream), 1e-5));
  Tensor dhard = Tensor::empty({s.n, s.k}, DType::f32),
         dsoft = Tensor::empty({s.n, s.k}, DType::f32);
  cross_entropy_backward({.logits = logits,
                          .labels = Tensor::from_ints({s.n}, labels),
                          .dlogits = dhard,
                          .label_smoothing = 0.1f,
                          .grad_loss = 1.f},
                         stream);
  soft_cross_entropy_backward({.logits = logits,
                               .targets = Tensor::from_floats({s.n, s.k}, t),
                               .dlogits = dsoft,
                               .grad_loss = 1.f},
                              stream);
  // The soft side scales softmax by the targets' mass, an fp32 sum of 1000 values that may
  // miss 1 by ~1e-7: up to ~1e-7 absolute on entries whose RMS is ~6e-3.
  EXPECT_TRUE(all_close(dhard.to_floats(stream), dsoft.to_floats(stream), 1e-4));
}

TEST(LossCpu, SoftCrossEntropyBackwardMatchesFiniteDifferences) {
  Stream stream;
  const float grad_loss = 0.75f;
  for (const LossShape& s : kLossShapes) {
    if (s.n * s.k > 2000) continue;
    SCOPED_TRACE(s.str());
    std::vector<float> z = testing::normal_values(s.n * s.k, 3, DType::f32, 0.0, 2.0);
    const std::vector<float> t = testing::make_soft_targets(s.n, s.k, 4);
    Tensor dz = Tensor::empty({s.n, s.k}, DType::f32);
    soft_cross_entropy_backward({.logits = Tensor::from_floats({s.n, s.k}, z),
                                 .targets = Tensor::from_floats({s.n, s.k}, t),
                                 .dlogits = dz,
                                 .grad_loss = grad_loss},
                                stream);
    std::vector<double> fd(z.size());
    for (size_t i = 0; i < z.size(); ++i) {
      const float saved = z[i];
      const float up = saved + 1e-2f, down = saved - 1e-2f;
      z[i] = up;
      const double l_up = testing::mean_of(testing::reference_soft_cross_entropy(z, t, s.k));
      z[i] = down;
      const double l_down = testing::mean_of(testing::reference_soft_cross_entropy(z, t, s.k));
      z[i] = saved;
      fd[i] = grad_loss * (l_up - l_down) / (static_cast<double>(up) - down);
    }
    EXPECT_TRUE(all_close(fd, dz.to_floats(stream), 1e-4, grad_loss / static_cast<double>(s.n)));
  }
}

TEST(LossCpu, SoftCrossEntropyRefusesTargetsOfAnotherShape) {
  Stream stream;
  Tensor sample_loss = Tensor::empty({2}, DType::f32), loss = Tensor::empty({1}, DType::f32);
  try {
    soft_cross_entropy_forward({.logits = Tensor::empty({2, 10}, DType::f32),
                                .targets = Tensor::empty({2, 9}, DType::f32),
                                .sample_loss = sample_loss,
                                .loss = loss},
                               stream);
    FAIL() << "targets [2, 9] for logits [2, 10] were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("soft_cross_entropy_forward: targets is"),
              std::string::npos)
        << e.what();
  }
}

TEST(LossCpu, CrossEntropyBackwardMatchesReferenceInPlace) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (float smoothing : kSmoothings) {
      for (const LossShape& s : kLossShapes) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str());
        const std::vector<float> z = testing::normal_values(s.n * s.k, 5, dtype, 50.0, 4.0);
        const std::vector<int32_t> labels = testing::make_labels(s.n, s.k, 6);
        Tensor tz = Tensor::from_floats({s.n, s.k}, z, dtype);
        cross_entropy_backward({.logits = tz,
                                .labels = Tensor::from_ints({s.n}, labels),
                                .dlogits = tz,
                                .label_smoothing = smoothing,
                                .grad_loss = 2.f},
                               stream);
        const std::vector<double> ref =
            testing::reference_cross_entropy_grad(z, labels, s.k, smoothing, 2.0);
        EXPECT_TRUE(all_close(ref, tz.to_floats(stream), dtype == DType::f32 ? 1e-5 : kBf16Ulp,
                              2.0 / static_cast<double>(s.n)));
      }
    }
  }
}

TEST(LossCpu, InvalidLabelsGiveNaNAndNeverCount) {
  Stream stream;
  const LossShape s{4, 5};
  const std::vector<float> z = testing::normal_values(s.n * s.k, 7, DType::f32);
  // One valid, three not: negative, k, and far above k.
  const std::vector<int32_t> labels = {2, -3, 5, 1 << 30};
  const ForwardResult got = run_forward(s, z, labels, 0.f, DType::f32, stream);
  EXPECT_FALSE(std::isnan(got.sample_loss[0]));
  for (int i = 1; i < 4; ++i)
    EXPECT_TRUE(std::isnan(got.sample_loss[i])) << i;
  EXPECT_TRUE(std::isnan(got.loss));
  Tensor dz = Tensor::empty({s.n, s.k}, DType::f32);
  cross_entropy_backward({.logits = Tensor::from_floats({s.n, s.k}, z),
                          .labels = Tensor::from_ints({s.n}, labels),
                          .dlogits = dz,
                          .label_smoothing = 0.f,
                          .grad_loss = 1.f},
                         stream);
  const std::vector<float> grad = dz.to_floats(stream);
  for (int64_t j = 0; j < s.k; ++j) {
    EXPECT_FALSE(std::isnan(grad[j]));
    EXPECT_TRUE(std::isnan(grad[s.k + j]));
  }
  Tensor correct = Tensor::empty({2}, DType::f32);
  // Make the valid sample a top-1 hit: only it can count.
  std::vector<float> winner = z;
  winner[2] = 100.f;
  topk_correct({.logits = Tensor::from_floats({s.n, s.k}, winner),
                .labels = Tensor::from_ints({s.n}, labels),
                .correct = correct},
               stream);
  EXPECT_EQ(correct.to_floats(stream), (std::vector<float>{1.f, 1.f}));
}

TEST(LossCpu, TopkCountsMatchSortReference) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (const LossShape& s : kLossShapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str());
      // Coarse values (multiples of 0.5 in [-2, 2]) make ties with the label common.
      std::vector<float> z = testing::normal_values(s.n * s.k, 8, DType::f32);
      for (float& v : z)
        v = std::round(std::clamp(v, -2.f, 2.f) * 2.f) / 2.f;
      const std::vector<int32_t> labels = testing::make_labels(s.n, s.k, 9);
      Tensor correct = Tensor::empty({2}, DType::f32);
      topk_correct({.logits = Tensor::from_floats({s.n, s.k}, z, dtype),
                    .labels = Tensor::from_ints({s.n}, labels),
                    .correct = correct},
                   stream);
      EXPECT_EQ(testing::reference_topk(z, labels, s.k), correct.to_floats(stream));
    }
  }
}

TEST(LossCpu, TopkRanksAtTheBoundaries) {
  // One row per rank 0..6 of the label among 10 distinct logits: top-1 hits 1, top-5 hits 5.
  Stream stream;
  const int64_t n = 7, k = 10;
  std::vector<float> z(n * k);
  std::vector<int32_t> labels(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < k; ++j)
      z[i * k + j] = static_cast<float>((j * 7 + i) % k);  // a permutation of 0..9 per row
    // The label is the class holding the value 9 - i, which has exactly i classes above it.
    for (int64_t j = 0; j < k; ++j)
      if (z[i * k + j] == static_cast<float>(9 - i)) labels[i] = static_cast<int32_t>(j);
  }
  Tensor correct = Tensor::empty({2}, DType::f32);
  topk_correct({.logits = Tensor::from_floats({n, k}, z),
                .labels = Tensor::from_ints({n}, labels),
                .correct = correct},
               stream);
  EXPECT_EQ(correct.to_floats(stream), (std::vector<float>{1.f, 5.f}));
}

using testing::error_of;

TEST(LossCpu, ArgumentErrorsNameTheTensor) {
  Stream stream;
  Tensor logits = Tensor::empty({4, 10}, DType::f32);
  Tensor labels = Tensor::from_ints({4}, {0, 1, 2, 3});
  Tensor sample_loss = Tensor::empty({4}, DType::f32);
  Tensor loss = Tensor::empty({1}, DType::f32);
  // Labels are i32: the f32 class indices of before are refused, as is any other dtype.
  for (DType wrong : {DType::f32, DType::bf16}) {
    Tensor float_labels = Tensor::empty({4}, wrong);
    const std::string message = error_of([&] {
      cross_entropy_forward({.logits = logits,
                             .labels = float_labels,
                             .sample_loss = sample_loss,
                             .loss = loss,
                             .label_smoothing = 0.f},
                            stream);
    });
    EXPECT_NE(message.find("cross_entropy_forward: labels is " + std::string(dtype_name(wrong)) +
                           "[4] on cpu, expected i32[4] (class indices) on cpu"),
              std::string::npos)
        << message;
  }
  Tensor long_loss = Tensor::empty({2}, DType::f32);
  EXPECT_THROW(cross_entropy_forward({.logits = logits,
                                      .labels = labels,
                                      .sample_loss = sample_loss,
                                      .loss = long_loss,
                                      .label_smoothing = 0.f},
                                     stream),
               Error);
  EXPECT_THROW(cross_entropy_forward({.logits = logits,
                                      .labels = labels,
                                      .sample_loss = sample_loss,
                                      .loss = loss,
                                      .label_smoothing = 1.5f},
                                     stream),
               Error);
  Tensor wrong_grad = Tensor::empty({4, 10}, DType::bf16);
  EXPECT_THROW(cross_entropy_backward({.logits = logits,
                                       .labels = labels,
                                       .dlogits = wrong_grad,
                                       .label_smoothing = 0.f,
                                       .grad_loss = 1.f},
                                      stream),
               Error);
  Tensor flat = Tensor::empty({40}, DType::f32);
  Tensor correct = Tensor::empty({2}, DType::f32);
  EXPECT_THROW(topk_correct({.logits = flat, .labels = labels, .correct = correct}, stream), Error);
}

TEST(LossCpu, IntegerLogitsAreRefused) {
  // i32 logits would otherwise be read as bf16 by the kernels.
  Stream stream;
  Tensor logits = Tensor::from_ints({4, 10}, std::vector<int32_t>(40, 1));
  Tensor labels = Tensor::from_ints({4}, {0, 1, 2, 3});
  Tensor sample_loss = Tensor::empty({4}, DType::f32);
  Tensor loss = Tensor::empty({1}, DType::f32);
  Tensor dlogits = Tensor::empty({4, 10}, DType::i32);
  Tensor correct = Tensor::empty({2}, DType::f32);
  const std::string expected =
      ": logits is i32[4, 10] on cpu, expected a float dtype (f32 or bf16)";
  const std::string forward = error_of([&] {
    cross_entropy_forward({.logits = logits,
                           .labels = labels,
                           .sample_loss = sample_loss,
                           .loss = loss,
                           .label_smoothing = 0.f},
                          stream);
  });
  EXPECT_EQ(forward, "cross_entropy_forward" + expected);
  const std::string backward = error_of([&] {
    cross_entropy_backward({.logits = logits,
                            .labels = labels,
                            .dlogits = dlogits,
                            .label_smoothing = 0.f,
                            .grad_loss = 1.f},
                           stream);
  });
  EXPECT_EQ(backward, "cross_entropy_backward" + expected);
  const std::string topk = error_of(
      [&] { topk_correct({.logits = logits, .labels = labels, .correct = correct}, stream); });
  EXPECT_EQ(topk, "topk_correct" + expected);
}

}  // namespace
}  // namespace engine
