// The batchnorm phases run through the op API on the CPU, for the CPU suites
// (test_batchnorm_cpu.cpp: against the references; test_batchnorm_cpu_loops.cpp: the same
// results whichever loops and threads run them).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "batchnorm_cases.h"
#include "kernels/ops.h"

namespace engine::testing::bn_cpu {

constexpr float kEps = 1e-5f;
constexpr float kMomentum = 0.1f;

inline Tensor f32_tensor(const std::vector<float>& values) {
  return Tensor::from_floats({static_cast<int64_t>(values.size())}, values, DType::f32);
}

inline Tensor activation(const BnShape& s, const std::vector<float>& values, DType dtype) {
  return Tensor::from_floats({s.n, s.h, s.w, s.c}, values, dtype);
}

// batchnorm_stats of x through the op API.
inline std::vector<float> stats_of(const Tensor& x, Stream& stream) {
  const int64_t channels = x.size(x.dim() - 1);
  Tensor stats = Tensor::empty({batchnorm_stats_numel(channels)}, DType::f32);
  Tensor workspace = Tensor::empty({batchnorm_workspace_numel(x)}, DType::f32);
  batchnorm_stats({.x = x, .stats = stats, .workspace = workspace}, stream);
  return stats.to_floats(stream);
}

inline std::vector<float> slice(const std::vector<float>& v, int64_t begin, int64_t count) {
  return {v.begin() + begin, v.begin() + begin + count};
}

// What BatchNorm2d runs between the statistics and normalize: stats -> sums -> finalize.
inline void finalize(const Tensor& stats, Tensor& running_mean, Tensor& running_var,
                     Tensor& batch_stats, Stream& stream) {
  Tensor sums = Tensor::empty({stats.numel()}, DType::f64);
  batchnorm_stats_to_sums(stats, sums, stream);
  batchnorm_finalize_sums({.sums = sums,
                           .running_mean = running_mean,
                           .running_var = running_var,
                           .batch_stats = batch_stats,
                           .constants = {.momentum = kMomentum, .eps = kEps}},
                          stream);
}

// The batch statistics (mean, invstd, count) that normalize and backward read, finalized from
// `stats` without running statistics.
inline Tensor batch_stats_from(const std::vector<float>& stats, Stream& stream) {
  Tensor batch_stats = Tensor::empty({static_cast<int64_t>(stats.size())}, DType::f32);
  Tensor none;
  finalize(f32_tensor(stats), none, none, batch_stats, stream);
  return batch_stats;
}

// The m2 half of a stats block against the reference variance times the row count, relative
// 1e-5 (the inputs are exact in both).
inline ::testing::AssertionResult m2_matches(const ReferenceStats& ref,
                                             const std::vector<float>& stats, const BnShape& s) {
  std::vector<double> ref_m2(ref.var);
  for (double& v : ref_m2)
    v *= static_cast<double>(s.rows());
  return all_close(ref_m2, slice(stats, s.c, s.c), 1e-5);
}

struct Affine {
  std::vector<float> weight, bias;
};
inline Affine make_affine(int64_t channels, uint32_t seed) {
  return {normal_values(channels, seed, DType::f32, 1.0, 0.5),
          normal_values(channels, seed + 1, DType::f32, 0.0, 0.5)};
}

// Runs stats -> finalize -> backward_reduce -> backward_elementwise on the CPU.
struct BackwardResult {
  std::vector<float> dx, grad_sums;
};
inline BackwardResult run_backward(const BnShape& s, DType dtype, const std::vector<float>& x,
                                   const std::vector<float>& dy, const std::vector<float>& weight,
                                   Stream& stream) {
  Tensor tx = activation(s, x, dtype);
  Tensor tdy = activation(s, dy, dtype);
  const Tensor batch_stats = batch_stats_from(stats_of(tx, stream), stream);
  Tensor grad_sums = Tensor::empty({2 * s.c}, DType::f32);
  Tensor workspace = Tensor::empty({batchnorm_workspace_numel(tx)}, DType::f32);
  batchnorm_backward_reduce({.dy = tdy,
                             .x = tx,
                             .batch_stats = batch_stats,
                             .grad_sums = grad_sums,
                             .workspace = workspace},
                            stream);
  Tensor dx = Tensor::empty(tx.shape(), dtype);
  batchnorm_backward_elementwise({.dy = tdy,
                                  .x = tx,
                                  .batch_stats = batch_stats,
                                  .weight = f32_tensor(weight),
                                  .grad_sums = grad_sums,
                                  .dx = dx},
                                 stream);
  return {dx.to_floats(stream), grad_sums.to_floats(stream)};
}

// Per element: |w| * invstd * RMS(dy) of its channel, the size of the terms whose difference
// is dx (with few rows they nearly cancel: with two rows dx is almost 0).
inline std::vector<double> term_scales(const BnShape& s, const std::vector<float>& x,
                                       const std::vector<float>& dy,
                                       const std::vector<float>& weight) {
  const ReferenceStats ref = reference_stats(x, s.rows(), s.c);
  std::vector<double> dy_sq(s.c, 0.0);
  for (size_t i = 0; i < dy.size(); ++i)
    dy_sq[i % s.c] += static_cast<double>(dy[i]) * dy[i] / static_cast<double>(s.rows());
  std::vector<double> scales(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i % static_cast<size_t>(s.c);
    scales[i] = std::abs(weight[c]) / std::sqrt(ref.var[c] + kEps) * std::sqrt(dy_sq[c]);
  }
  return scales;
}

}  // namespace engine::testing::bn_cpu
