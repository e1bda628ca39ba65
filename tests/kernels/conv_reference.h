// Naive, obviously-correct convolution in double precision (direct loops over every index),
// the reference for the CPU ops; plus the shape table the conv suites share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bench/ops/seeded_values.h"
#include "kernels/conv_shape.h"
#include "kernels/dtype.h"

namespace engine::testing {
using op_registry::round_to_tf32;

inline float input_at(const std::vector<float>& x, const Conv2dShape& s, int64_t n, int64_t h,
                      int64_t w, int64_t c) {
  if (h < 0 || h >= s.in_h || w < 0 || w >= s.in_w) return 0.f;
  return x[((n * s.in_h + h) * s.in_w + w) * s.in_channels + c];
}

inline std::vector<double> reference_conv_forward(const Conv2dShape& s, const std::vector<float>& x,
                                                  const std::vector<float>& w,
                                                  const std::vector<float>* bias) {
  const int64_t P = s.out_h(), Q = s.out_w();
  std::vector<double> y(static_cast<size_t>(s.batch * P * Q * s.out_channels));
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q)
        for (int64_t k = 0; k < s.out_channels; ++k) {
          double sum = bias ? (*bias)[k] : 0.0;
          for (int64_t r = 0; r < s.kernel_h; ++r)
            for (int64_t t = 0; t < s.kernel_w; ++t)
              for (int64_t c = 0; c < s.in_channels; ++c) {
                const int64_t h = p * s.stride_h - s.pad_h + r * s.dilation_h;
                const int64_t ww = q * s.stride_w - s.pad_w + t * s.dilation_w;
                sum += double(input_at(x, s, n, h, ww, c)) *
                       w[((k * s.kernel_h + r) * s.kernel_w + t) * s.in_channels + c];
              }
          y[((n * P + p) * Q + q) * s.out_channels + k] = sum;
        }
  return y;
}

// dx[n,h,w,c] = sum over (p,q,r,t,k) with h = p*stride - pad + r*dilation (same for w).
inline std::vector<double> reference_conv_backward_data(const Conv2dShape& s,
                                                        const std::vector<float>& dy,
                                                        const std::vector<float>& w) {
  const int64_t P = s.out_h(), Q = s.out_w();
  std::vector<double> dx(static_cast<size_t>(s.batch * s.in_h * s.in_w * s.in_channels), 0.0);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q)
        for (int64_t r = 0; r < s.kernel_h; ++r)
          for (int64_t t = 0; t < s.kernel_w; ++t) {
            const int64_t h = p * s.stride_h - s.pad_h + r * s.dilation_h;
            const int64_t ww = q * s.stride_w - s.pad_w + t * s.dilation_w;
            if (h < 0 || h >= s.in_h || ww < 0 || ww >= s.in_w) continue;
            for (int64_t k = 0; k < s.out_channels; ++k)
              for (int64_t c = 0; c < s.in_channels; ++c)
                dx[((n * s.in_h + h) * s.in_w + ww) * s.in_channels + c] +=
                    double(dy[((n * P + p) * Q + q) * s.out_channels + k]) *
                    w[((k * s.kernel_h + r) * s.kernel_w + t) * s.in_channels + c];
          }
  return dx;
}

inline std::vector<double> reference_conv_backward_filter(const Conv2dShape& s,
                                                          const std::vector<float>& x,
                                                          const std::vector<float>& dy) {
  const int64_t P = s.out_h(), Q = s.out_w();
  std::vector<double> dw(static_cast<size_t>(s.out_channels * s.gemm_k()), 0.0);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q)
        for (int64_t k = 0; k < s.out_channels; ++k) {
          const double g = dy[((n * P + p) * Q + q) * s.out_channels + k];
          for (int64_t r = 0; r < s.kernel_h; ++r)
            for (int64_t t = 0; t < s.kernel_w; ++t)
              for (int64_t c = 0; c < s.in_channels; ++c) {
                const int64_t h = p * s.stride_h - s.pad_h + r * s.dilation_h;
                const int64_t ww = q * s.stride_w - s.pad_w + t * s.dilation_w;
                dw[((k * s.kernel_h + r) * s.kernel_w + t) * s.in_channels + c] +=
                    g * input_at(x, s, n, h, ww, c);
              }
        }
  return dw;
}

inline std::vector<double> reference_bias_grad(const Conv2dShape& s, const std::vector<float>& dy) {
  std::vector<double> db(static_cast<size_t>(s.out_channels), 0.0);
  for (size_t i = 0; i < dy.size(); ++i)
    db[i % s.out_channels] += dy[i];
  return db;
}

// Uniform values in [-1, 1], rounded to bf16 when asked, so every backend sees exact inputs.
inline std::vector<float> random_values(int64_t n, uint32_t seed, bool bf16_exact = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values)
    v = bf16_exact ? static_cast<float>(bf16(uniform(rng))) : uniform(rng);
  return values;
}

// max |actual - expected| / max |expected|: error relative to the result's magnitude.
inline double relative_error(const std::vector<float>& actual,
                             const std::vector<double>& expected) {
  double worst = 0.0, scale = 1e-30;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double error = std::abs(double(actual[i]) - expected[i]);
    // std::max drops a NaN operand: an element left unwritten (NaN-filled) or computed as NaN
    // would otherwise pass.
    if (std::isnan(error)) return INFINITY;
    worst = std::max(worst, error);
    scale = std::max(scale, std::abs(expected[i]));
  }
  return actual.size() == expected.size() ? worst / scale : INFINITY;
}

struct ConvCase {
  std::string name;
  Conv2dShape shape;
};

inline Conv2dShape conv_shape(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t r,
                              int64_t s, int64_t stride, int64_t pad, int64_t dilation = 1) {
  Conv2dShape shape;
  shape.batch = n;
  shape.in_h = h;
  shape.in_w = w;
  shape.in_channels = c;
  shape.out_channels = k;
  shape.kernel_h = r;
  shape.kernel_w = s;
  shape.stride_h = shape.stride_w = stride;
  shape.pad_h = shape.pad_w = pad;
  shape.dilation_h = shape.dilation_w = dilation;
  return shape;
}

// Shapes a model never has: odd sizes, C not a multiple of 8/16, batch 1, a 5x3 kernel,
// dilation, a 3x3 window on a 1x1 map, padding around a 1x1 kernel. The model's own layers come
// from walking it (bench/resnet_layers.h), as in test_conv_cpu.cpp and the op harness.
inline std::vector<ConvCase> conv_edge_cases() {
  return {
      {"3x3 s1 p1 odd", conv_shape(2, 5, 7, 3, 5, 3, 3, 1, 1)},
      {"3x3 s2 p1 odd", conv_shape(1, 7, 6, 5, 3, 3, 3, 2, 1)},
      {"5x3 s1 p0", conv_shape(2, 6, 5, 4, 6, 5, 3, 1, 0)},
      {"3x3 dilation 2", conv_shape(1, 9, 9, 3, 4, 3, 3, 1, 2, 2)},
      {"3x3 on a 1x1 map: the centre tap only", conv_shape(3, 1, 1, 16, 8, 3, 3, 1, 1)},
      {"1x1 p1: border outputs read only padding", conv_shape(2, 3, 4, 5, 6, 1, 1, 1, 1)},
      {"pointwise odd", conv_shape(3, 3, 5, 13, 7, 1, 1, 1, 0)},
  };
}

}  // namespace engine::testing
