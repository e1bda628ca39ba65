// Shared cases for the pooling ops: shapes, window parameters and naive references, used by
// the CPU suite (test_pool_cpu.cpp) and the SIMT suite (test_pool_simt.cpp). On CUDA devices
// (the sim device, a GPU) the pooling ops run in the op harness (tests/ops), against the CPU.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/args/pool.h"
#include "kernels/tensor.h"

namespace engine::testing {

struct PoolShape {
  int64_t n, h, w, c;
  int64_t numel() const { return n * h * w * c; }
  std::string str() const { return shape_str({n, h, w, c}); }
};

// Odd and even sizes, windows clipped by the border, C not a multiple of 8 or 16, batch 1,
// and C over 64 (the CPU loops work in blocks of 64 channels).
inline const std::vector<PoolShape> kPoolShapes = {
    {1, 1, 1, 1},   {1, 2, 2, 3},   {2, 5, 5, 7},  {1, 7, 6, 17},  {3, 8, 8, 16},
    {2, 9, 11, 64}, {1, 14, 14, 8}, {2, 4, 3, 33}, {1, 6, 5, 100},
};

// The windows are the op's own MaxPool2dParams (kernel, stride, padding), and a case's whole
// geometry the kernels' MaxPool2dGeometry: what the references below take too.
inline std::string window_str(const MaxPool2dParams& window) {
  return "k" + std::to_string(window.kernel) + "s" + std::to_string(window.stride) + "p" +
         std::to_string(window.padding);
}
// The ResNet stem's 3x3/2/1 first, the same unpadded; then non-overlapping, stride 1, and a
// wide window.
inline const std::vector<MaxPool2dParams> kWindows = {
    {3, 2, 1}, {3, 2, 0}, {2, 2, 0}, {3, 1, 1}, {5, 2, 2}};
// The widest window a u8 argmax allows: 256 positions, codes up to 255 (padding 8: many
// windows clipped), on shapes it fits, with channels for the vector path and without.
inline const MaxPool2dParams kWidestWindow = {16, 3, 8};
inline const std::vector<PoolShape> kWidestShapes = {{2, 17, 19, 16}, {1, 17, 19, 3}};

// The window over an input of shape s; out_h or out_w is 0 when it does not fit (PyTorch
// refuses those shapes).
inline MaxPool2dGeometry maxpool_geometry(const PoolShape& s, const MaxPool2dParams& window) {
  return MaxPool2dGeometry::make(window, s.n, s.h, s.w, s.c);
}
inline bool fits(const MaxPool2dGeometry& g) {
  return g.out_h >= 1 && g.out_w >= 1;
}
// [n, out_h, out_w, c] and its elements.
inline Shape pooled_shape(const MaxPool2dGeometry& g) {
  return {g.n, g.out_h, g.out_w, g.c};
}
inline int64_t pooled_numel(const MaxPool2dGeometry& g) {
  return g.n * g.out_image_numel();
}
inline std::string geometry_str(const MaxPool2dGeometry& g) {
  return shape_str({g.n, g.h, g.w, g.c}) + " " + window_str(g.window);
}

// Naive max pooling: the first strictly greater value wins, NaN wins (as PyTorch); the index
// starts at the window's first valid position. argmax holds window positions, kh * kernel +
// kw from the window's padded corner (kernels/args/pool.h).
struct ReferenceMaxPool {
  std::vector<float> y;
  std::vector<uint8_t> argmax;
};
inline ReferenceMaxPool reference_maxpool(const std::vector<float>& x, const MaxPool2dGeometry& g) {
  const int64_t h = g.h, w = g.w, c = g.c, oh_n = g.out_h, ow_n = g.out_w;
  const int64_t kernel = g.window.kernel, stride = g.window.stride, padding = g.window.padding;
  ReferenceMaxPool out{std::vector<float>(pooled_numel(g)), std::vector<uint8_t>(pooled_numel(g))};
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t oh = 0; oh < oh_n; ++oh)
      for (int64_t ow = 0; ow < ow_n; ++ow)
        for (int64_t ch = 0; ch < c; ++ch) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t index = -1;
          for (int64_t kh = 0; kh < kernel; ++kh)
            for (int64_t kw = 0; kw < kernel; ++kw) {
              const int64_t ih = oh * stride - padding + kh;
              const int64_t iw = ow * stride - padding + kw;
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              const float v = x[((b * h + ih) * w + iw) * c + ch];
              if (index < 0) index = kh * kernel + kw;
              if (v > best || std::isnan(v)) {
                best = v;
                index = kh * kernel + kw;
              }
            }
          const int64_t at = ((b * oh_n + oh) * ow_n + ow) * c + ch;
          out.y[at] = best;
          out.argmax[at] = static_cast<uint8_t>(index);
        }
  return out;
}

// dx by scattering dy to the argmax of every output, in double.
inline std::vector<double> reference_maxpool_backward(const std::vector<float>& dy,
                                                      const std::vector<uint8_t>& argmax,
                                                      const MaxPool2dGeometry& g) {
  const int64_t h = g.h, w = g.w, c = g.c, oh_n = g.out_h, ow_n = g.out_w;
  const int64_t kernel = g.window.kernel, stride = g.window.stride, padding = g.window.padding;
  std::vector<double> dx(g.n * g.image_numel(), 0.0);
  for (size_t i = 0; i < dy.size(); ++i) {
    const int64_t ch = static_cast<int64_t>(i) % c, pixel = static_cast<int64_t>(i) / c;
    const int64_t ow = pixel % ow_n, oh = pixel / ow_n % oh_n, b = pixel / ow_n / oh_n;
    const int64_t ih = oh * stride - padding + argmax[i] / kernel;
    const int64_t iw = ow * stride - padding + argmax[i] % kernel;
    dx[((b * h + ih) * w + iw) * c + ch] += dy[i];
  }
  return dx;
}

inline std::vector<double> reference_avgpool(const std::vector<float>& x, const PoolShape& s) {
  std::vector<double> y(s.n * s.c, 0.0);
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t p = 0; p < s.h * s.w; ++p)
      for (int64_t c = 0; c < s.c; ++c)
        y[b * s.c + c] += x[(b * s.h * s.w + p) * s.c + c] / static_cast<double>(s.h * s.w);
  return y;
}

// Distinct values at least `gap` apart in a scrambled order: no ties, so max pooling has no
// kink within gap / 2 of any input.
inline std::vector<float> distinct_values(int64_t n, float gap, uint32_t seed) {
  std::vector<float> values(static_cast<size_t>(n));
  uint64_t state = seed;
  for (int64_t i = 0; i < n; ++i)
    values[i] = static_cast<float>(i) * gap;
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates with a fixed LCG
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(values[i], values[(state >> 33) % static_cast<uint64_t>(i + 1)]);
  }
  for (float& v : values)
    v -= static_cast<float>(n) * gap / 2;
  return values;
}

}  // namespace engine::testing
