// Shared cases for the loss ops: shapes, inputs and naive double-precision references (the
// log-sum-exp with the max subtracted, PyTorch's label smoothing, a sort-based top-k), used
// by the CPU and SIMT suites. On CUDA devices the loss ops run in the op harness (tests/ops).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace engine::testing {

struct LossShape {
  int64_t n, k;
  // Appends piece by piece: GCC 12 warns (-Wrestrict, falsely) on "[" + std::to_string(..).
  std::string str() const {
    std::string text = "[";
    text += std::to_string(n);
    text += ", ";
    text += std::to_string(k);
    return text + "]";
  }
};

// One class, fewer classes than a warp, odd sizes, ImageNet's 1000 classes, batch 1.
inline const std::vector<LossShape> kLossShapes = {{1, 1},   {1, 10},   {3, 7}, {5, 1000},
                                                   {17, 33}, {64, 100}, {2, 65}};

// Labels in [0, k) as the i32 class indices the ops take.
inline std::vector<int32_t> make_labels(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, k - 1);
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int32_t& label : labels)
    label = static_cast<int32_t>(pick(rng));
  return labels;
}

// log sum_j exp(z_j) of one row, in double, with the max subtracted first.
inline double reference_log_sum_exp(const float* z, int64_t k) {
  const double max = *std::max_element(z, z + k);
  double sum = 0;
  for (int64_t j = 0; j < k; ++j)
    sum += std::exp(z[j] - max);
  return max + std::log(sum);
}

// -sum_j q_j log softmax(z)_j with q = (1 - s) onehot + s / k, per row, in double.
inline std::vector<double> reference_cross_entropy(const std::vector<float>& logits,
                                                   const std::vector<int32_t>& labels, int64_t k,
                                                   double smoothing) {
  const int64_t n = static_cast<int64_t>(labels.size());
  std::vector<double> loss(n);
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits.data() + i * k;
    const double lse = reference_log_sum_exp(z, k);
    double total = 0;
    for (int64_t j = 0; j < k; ++j) {
      const double q = smoothing / k + (j == labels[i] ? 1 - smoothing : 0);
      total -= q * (z[j] - lse);
    }
    loss[i] = total;
  }
  return loss;
}

inline double mean_of(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

// d(mean loss)/dz * grad_loss = (softmax - q) * grad_loss / n, in double.
inline std::vector<double> reference_cross_entropy_grad(const std::vector<float>& logits,
                                                        const std::vector<int32_t>& labels,
                                                        int64_t k, double smoothing,
                                                        double grad_loss) {
  const int64_t n = static_cast<int64_t>(labels.size());
  std::vector<double> grad(logits.size());
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits.data() + i * k;
    const double max = *std::max_element(z, z + k);
    double sum = 0;
    for (int64_t j = 0; j < k; ++j)
      sum += std::exp(z[j] - max);
    for (int64_t j = 0; j < k; ++j) {
      const double q = smoothing / k + (j == labels[i] ? 1 - smoothing : 0);
      grad[i * k + j] = (std::exp(z[j] - max) / sum - q) * grad_loss / n;
    }
  }
  return grad;
}

// Top-1 and top-5 hits by a stable sort of the class indices by descending logit (ties keep
// the lower index first).
inline std::vector<float> reference_topk(const std::vector<float>& logits,
                                         const std::vector<int32_t>& labels, int64_t k) {
  const int64_t n = static_cast<int64_t>(labels.size());
  float top1 = 0, top5 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits.data() + i * k;
    std::vector<int64_t> order(k);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return z[a] > z[b]; });
    const auto rank = std::find(order.begin(), order.end(), int64_t{labels[i]}) - order.begin();
    top1 += rank < 1 ? 1.f : 0.f;
    top5 += rank < 5 ? 1.f : 0.f;
  }
  return {top1, top5};
}

// Soft targets as mixup makes them: each row the blend lam * q(a) + (1 - lam) * q(b) of two
// smoothed one-hot targets (smoothing 0.1), lam drawn per row; rows sum to 1 (up to fp32).
inline std::vector<float> make_soft_targets(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, k - 1);
  std::uniform_real_distribution<double> mix(0.0, 1.0);
  std::vector<float> targets(static_cast<size_t>(n * k));
  const double smoothing = 0.1;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t a = pick(rng), b = pick(rng);
    const double lam = mix(rng);
    for (int64_t j = 0; j < k; ++j) {
      const double q = smoothing / static_cast<double>(k) +
                       (1 - smoothing) * (lam * (j == a) + (1 - lam) * (j == b));
      targets[static_cast<size_t>(i * k + j)] = static_cast<float>(q);
    }
  }
  return targets;
}

// -sum_j t_j log softmax(z)_j per row, in double.
inline std::vector<double> reference_soft_cross_entropy(const std::vector<float>& logits,
                                                        const std::vector<float>& targets,
                                                        int64_t k) {
  const int64_t n = static_cast<int64_t>(logits.size()) / k;
  std::vector<double> loss(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits.data() + i * k;
    const double lse = reference_log_sum_exp(z, k);
    double l = 0;
    for (int64_t j = 0; j < k; ++j)
      l -= targets[static_cast<size_t>(i * k + j)] * (z[j] - lse);
    loss[static_cast<size_t>(i)] = l;
  }
  return loss;
}

}  // namespace engine::testing
