// Shared cases for the batchnorm phases: shapes, naive double-precision references, and
// helpers that run a whole training forward/backward through the CPU twins, used by the CPU
// and SIMT suites (and SyncBN's, tests/nn/sync_bn_harness.h) so they check the same things.
// On CUDA devices the batchnorm ops run in the op harness (tests/ops), against the CPU.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "close_values.h"

#include "kernels/tensor.h"

namespace engine::testing {

struct BnShape {
  int64_t n, h, w, c;
  int64_t rows() const { return n * h * w; }
  int64_t numel() const { return rows() * c; }
  std::string str() const { return shape_str({n, h, w, c}); }
};

// Odd sizes, C not a multiple of 8 or 16, batch 1, a single channel, multiples of the
// vector widths (4 floats, 8 bf16), and every BN width of ResNet-50 at a small spatial size.
inline const std::vector<BnShape> kBnShapes = {
    {1, 1, 2, 1},   {1, 3, 3, 5},   {2, 4, 4, 7},    {3, 5, 1, 17},   {4, 2, 3, 64},
    {1, 7, 7, 33},  {8, 3, 3, 12},  {2, 3, 5, 8},    {2, 13, 11, 3},  {2, 2, 2, 128},
    {2, 2, 1, 256}, {2, 1, 2, 512}, {1, 2, 2, 1024}, {1, 1, 3, 2048},
};

// Per-channel mean and biased variance of x [rows, C], in double, two passes.
struct ReferenceStats {
  std::vector<double> mean, var;
};
inline ReferenceStats reference_stats(const std::vector<float>& x, int64_t rows, int64_t channels) {
  ReferenceStats s{std::vector<double>(channels, 0.0), std::vector<double>(channels, 0.0)};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c)
      s.mean[c] += x[r * channels + c];
  for (int64_t c = 0; c < channels; ++c)
    s.mean[c] /= static_cast<double>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const double d = x[r * channels + c] - s.mean[c];
      s.var[c] += d * d;
    }
  }
  for (int64_t c = 0; c < channels; ++c)
    s.var[c] /= static_cast<double>(rows);
  return s;
}

// y = act((x - mean) / sqrt(var + eps) * w + b [+ residual]), in double.
inline std::vector<double> reference_bn_apply(const std::vector<double>& x,
                                              const std::vector<double>& mean,
                                              const std::vector<double>& var, double eps,
                                              const std::vector<float>& w,
                                              const std::vector<float>& b,
                                              const std::vector<float>* residual, bool relu) {
  const int64_t channels = static_cast<int64_t>(mean.size());
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = static_cast<int64_t>(i) % channels;
    double v = (x[i] - mean[c]) / std::sqrt(var[c] + eps) * w[c] + b[c];
    if (residual) v += (*residual)[i];
    if (relu) v = v > 0 ? v : 0;
    y[i] = v;
  }
  return y;
}

// The training forward with batch statistics, in double.
inline std::vector<double> reference_bn_train(const std::vector<double>& x, int64_t channels,
                                              double eps, const std::vector<float>& w,
                                              const std::vector<float>& b) {
  const int64_t rows = static_cast<int64_t>(x.size()) / channels;
  std::vector<double> mean(channels, 0.0), var(channels, 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    mean[i % channels] += x[i] / static_cast<double>(rows);
  for (size_t i = 0; i < x.size(); ++i)
    var[i % channels] += (x[i] - mean[i % channels]) * (x[i] - mean[i % channels]) / rows;
  return reference_bn_apply(x, mean, var, eps, w, b, nullptr, false);
}

// The analytic gradients of the training forward (textbook form), in double.
struct ReferenceBnGrads {
  std::vector<double> dx, dweight, dbias;
};
inline ReferenceBnGrads reference_bn_backward(const std::vector<float>& x,
                                              const std::vector<float>& dy, int64_t channels,
                                              double eps, const std::vector<float>& w) {
  const int64_t rows = static_cast<int64_t>(x.size()) / channels;
  const ReferenceStats s = reference_stats(x, rows, channels);
  ReferenceBnGrads g{std::vector<double>(x.size()), std::vector<double>(channels, 0.0),
                     std::vector<double>(channels, 0.0)};
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = static_cast<int64_t>(i) % channels;
    const double xhat = (x[i] - s.mean[c]) / std::sqrt(s.var[c] + eps);
    g.dbias[c] += dy[i];
    g.dweight[c] += dy[i] * xhat;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = static_cast<int64_t>(i) % channels;
    const double invstd = 1.0 / std::sqrt(s.var[c] + eps);
    const double xhat = (x[i] - s.mean[c]) * invstd;
    g.dx[i] = w[c] * invstd * (dy[i] - g.dbias[c] / rows - xhat * g.dweight[c] / rows);
  }
  return g;
}

}  // namespace engine::testing
