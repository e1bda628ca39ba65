// The CPU pooling ops through the op API against naive references: max pooling values and
// argmax exactly (ties, NaN, clipped windows), its backward against centered finite
// differences, global average pooling forward and backward (also by finite differences).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "close_values.h"
#include "kernels/cpu/isa.h"
#include "kernels/ops.h"
#include "pool_cases.h"
#include "portable_loops.h"
#include "tests/dtype_bytes.h"
#include "tests/error_text.h"

namespace engine {
namespace {

using testing::all_close;
using testing::geometry_str;
using testing::kBf16Ulp;
using testing::kPoolShapes;
using testing::kWindows;
using testing::maxpool_geometry;
using testing::pooled_numel;
using testing::pooled_shape;
using testing::PoolShape;

using testing::kDTypes;

// Exact equality (NaN equal to NaN): max pooling copies values and positions.
::testing::AssertionResult same(const std::vector<float>& expected,
                                const std::vector<float>& actual) {
  return all_close(expected, actual, 0.0, 0.0);
}

struct MaxPoolResult {
  std::vector<float> y;
  std::vector<uint8_t> argmax;
};
MaxPoolResult run_maxpool(const MaxPool2dGeometry& g, const std::vector<float>& x, DType dtype,
                          Stream& stream) {
  Tensor tx = Tensor::from_floats({g.n, g.h, g.w, g.c}, x, dtype);
  Tensor y = Tensor::empty(pooled_shape(g), dtype);
  Tensor argmax = Tensor::empty(pooled_shape(g), DType::u8);
  maxpool2d_forward(g.window, {.x = tx, .y = y, .argmax = argmax}, stream);
  return {y.to_floats(stream), argmax.to_bytes(stream)};
}

// Calls fn(dtype, window, shape, geometry) for every dtype, window and shape of the tables
// that the device limits allow, inside a trace naming them.
template <typename Fn>
void for_each_maxpool_case(Fn&& fn) {
  for (DType dtype : kDTypes) {
    for (const MaxPool2dParams& win : kWindows) {
      for (const PoolShape& s : kPoolShapes) {
        const MaxPool2dGeometry g = maxpool_geometry(s, win);
        if (!testing::fits(g)) continue;
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + geometry_str(g));
        fn(dtype, win, s, g);
      }
    }
  }
}

TEST(PoolCpu, MaxPoolForwardMatchesReference) {
  Stream stream;
  for_each_maxpool_case(
      [&](DType dtype, const MaxPool2dParams&, const PoolShape& s, const MaxPool2dGeometry& g) {
        // bf16 rounding of normal values makes ties common: they must resolve the same way.
        std::vector<float> x = testing::normal_values(s.numel(), 1, dtype);
        if (s.numel() > 40) x[37] = NAN;  // NaN wins its windows
        const testing::ReferenceMaxPool ref = testing::reference_maxpool(x, g);
        const MaxPoolResult got = run_maxpool(g, x, dtype, stream);
        EXPECT_TRUE(same(ref.y, got.y));
        EXPECT_EQ(ref.argmax, got.argmax);
      });
}

TEST(PoolCpu, TheWidestWindowUsesEveryCode) {
  // A 16x16 window's 256 positions are the codes 0..255 of a u8 argmax; the maximum of an
  // f32 ramp sits in each window's last valid position (255 where nothing clips it).
  Stream stream;
  for (DType dtype : kDTypes) {
    for (const PoolShape& s : testing::kWidestShapes) {
      const MaxPool2dGeometry g = maxpool_geometry(s, testing::kWidestWindow);
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + geometry_str(g));
      std::vector<float> x = testing::normal_values(s.numel(), 8, dtype);
      const testing::ReferenceMaxPool ref = testing::reference_maxpool(x, g);
      EXPECT_EQ(ref.argmax, run_maxpool(g, x, dtype, stream).argmax);
      for (int64_t i = 0; i < s.numel(); ++i)  // bf16 rounds the ramp into ties
        x[i] = testing::round_to(dtype, static_cast<float>(i / s.c));
      const MaxPoolResult ramp = run_maxpool(g, x, dtype, stream);
      EXPECT_EQ(testing::reference_maxpool(x, g).argmax, ramp.argmax);
      if (dtype == DType::f32) {
        EXPECT_EQ(*std::max_element(ramp.argmax.begin(), ramp.argmax.end()), 255);
      }
    }
  }
}

TEST(PoolCpu, MaxPoolForwardPortableLoopMatchesReference) {
  // On AVX-512 machines the test above runs the AVX-512 copy of the f32 loop; this runs the
  // baseline one that CPUs without it take.
  const testing::PortableLoops portable;
  Stream stream;
  for (const MaxPool2dParams& win : kWindows) {
    for (const PoolShape& s : kPoolShapes) {
      const MaxPool2dGeometry g = maxpool_geometry(s, win);
      if (!testing::fits(g)) continue;
      SCOPED_TRACE(geometry_str(g));
      std::vector<float> x = testing::normal_values(s.numel(), 1, DType::f32);
      if (s.numel() > 40) x[37] = NAN;
      const testing::ReferenceMaxPool ref = testing::reference_maxpool(x, g);
      const MaxPoolResult got = run_maxpool(g, x, DType::f32, stream);
      EXPECT_TRUE(same(ref.y, got.y));
      EXPECT_EQ(ref.argmax, got.argmax);
    }
  }
}

TEST(PoolCpu, MaxPoolLoopsGiveTheSameBitsAtEveryVectorLevel) {
  // The forward and the bf16 backward's gather are one source compiled for each vector width
  // (kernels/cpu/vector_loops.h): every level this CPU has gives the baseline's bits, NaN
  // included, in f32 and bf16.
  std::vector<cpu::VectorIsa> levels = {cpu::VectorIsa::kBaseline};
  if (cpu::cpu_has_avx2()) levels.push_back(cpu::VectorIsa::kAvx2);
  if (cpu::cpu_has_avx512()) levels.push_back(cpu::VectorIsa::kAvx512);
  Stream stream;
  for_each_maxpool_case([&](DType dtype, const MaxPool2dParams& win, const PoolShape& s,
                            const MaxPool2dGeometry& g) {
    std::vector<float> x = testing::normal_values(s.numel(), 6, dtype);
    if (s.numel() > 40) x[37] = NAN;
    const Tensor dy = Tensor::from_floats(pooled_shape(g),
                                          testing::normal_values(pooled_numel(g), 7, dtype), dtype);
    std::vector<std::vector<uint8_t>> results;
    for (cpu::VectorIsa level : levels) {
      const testing::CappedVectorIsa cap(level);
      const MaxPoolResult forward = run_maxpool(g, x, dtype, stream);
      Tensor dx = Tensor::empty({s.n, s.h, s.w, s.c}, dtype);
      maxpool2d_backward(
          win, {.dy = dy, .argmax = Tensor::from_bytes(pooled_shape(g), forward.argmax), .dx = dx},
          stream);
      std::vector<uint8_t> bytes = forward.argmax;
      for (const std::vector<float>& values : {forward.y, dx.to_floats(stream)}) {
        const auto* raw = reinterpret_cast<const uint8_t*>(values.data());
        bytes.insert(bytes.end(), raw, raw + values.size() * sizeof(float));
      }
      results.push_back(std::move(bytes));
    }
    for (size_t level = 1; level < results.size(); ++level)
      EXPECT_TRUE(results[level] == results[0]) << "vector level " << level << " differs";
  });
}

TEST(PoolCpu, MaxPoolTiesAndInfinitiesPickTheFirstPosition) {
  Stream stream;
  const MaxPool2dGeometry g = maxpool_geometry({1, 5, 5, 3}, kWindows[0]);
  for (float value : {1.f, -INFINITY}) {
    SCOPED_TRACE(value);
    const std::vector<float> x(g.n * g.image_numel(), value);
    const testing::ReferenceMaxPool ref = testing::reference_maxpool(x, g);
    const MaxPoolResult got = run_maxpool(g, x, DType::f32, stream);
    EXPECT_TRUE(same(ref.y, got.y));
    EXPECT_EQ(ref.argmax, got.argmax);
    // Codes count from the window's padded corner: row * 3 + col.
    EXPECT_EQ(got.argmax[0], 4);      // window rows -1..1, cols -1..1: first valid (0, 0)
    EXPECT_EQ(got.argmax[1 * 3], 3);  // output (0, 1): cols 1..3, first valid (0, 1)
    EXPECT_EQ(got.argmax[3 * 3], 1);  // output (1, 0): rows 1..3, first valid (1, 0)
  }
}

TEST(PoolCpu, MaxPoolBackwardMatchesFiniteDifferences) {
  // L = sum(dy * maxpool(x)). Inputs are distinct and 0.25 apart, so x +- h with h = 0.05
  // stays clear of every kink and the differences are exact up to rounding.
  Stream stream;
  for (const MaxPool2dParams& win : kWindows) {
    for (const PoolShape& s : kPoolShapes) {
      const MaxPool2dGeometry g = maxpool_geometry(s, win);
      if (!testing::fits(g) || s.numel() > 2000) continue;
      SCOPED_TRACE(geometry_str(g));
      std::vector<float> x = testing::distinct_values(s.numel(), 0.25f, 2);
      const Shape out = pooled_shape(g);
      const std::vector<float> dy = testing::normal_values(pooled_numel(g), 3, DType::f32);
      const MaxPoolResult fwd = run_maxpool(g, x, DType::f32, stream);
      Tensor dx = Tensor::empty({s.n, s.h, s.w, s.c}, DType::f32);
      maxpool2d_backward(win,
                         {.dy = Tensor::from_floats(out, dy),
                          .argmax = Tensor::from_bytes(out, fwd.argmax),
                          .dx = dx},
                         stream);
      const std::vector<float> got = dx.to_floats(stream);

      auto loss = [&](const std::vector<float>& in) {
        const std::vector<float> y = testing::reference_maxpool(in, g).y;
        double total = 0;
        for (size_t i = 0; i < y.size(); ++i)
          total += static_cast<double>(dy[i]) * y[i];
        return total;
      };
      std::vector<double> fd(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const float saved = x[i];
        const float up = saved + 0.05f, down = saved - 0.05f;
        x[i] = up;
        const double l_up = loss(x);
        x[i] = down;
        fd[i] = (l_up - loss(x)) / (static_cast<double>(up) - down);
        x[i] = saved;
      }
      // Each dx is a sum of at most (ceil(k / s))^2 values of dy in fp32.
      EXPECT_TRUE(all_close(fd, got, 1e-6, 1.0));
    }
  }
}

TEST(PoolCpu, MaxPoolBackwardMatchesScatterReference) {
  Stream stream;
  for_each_maxpool_case(
      [&](DType dtype, const MaxPool2dParams& win, const PoolShape& s, const MaxPool2dGeometry& g) {
        const std::vector<float> x = testing::normal_values(s.numel(), 4, dtype);
        const Shape out = pooled_shape(g);
        const std::vector<float> dy = testing::normal_values(pooled_numel(g), 5, dtype);
        const MaxPoolResult fwd = run_maxpool(g, x, dtype, stream);
        Tensor dx = Tensor::empty({s.n, s.h, s.w, s.c}, dtype);
        maxpool2d_backward(win,
                           {.dy = Tensor::from_floats(out, dy, dtype),
                            .argmax = Tensor::from_bytes(out, fwd.argmax),
                            .dx = dx},
                           stream);
        const std::vector<double> ref = testing::reference_maxpool_backward(dy, fwd.argmax, g);
        EXPECT_TRUE(all_close(ref, dx.to_floats(stream), dtype == DType::f32 ? 1e-6 : kBf16Ulp));
      });
}

TEST(PoolCpu, GlobalAvgPoolForwardBackward) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (const PoolShape& s : kPoolShapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str());
      const std::vector<float> x = testing::normal_values(s.numel(), 6, dtype, 0.5, 2.0);
      Tensor y = Tensor::empty({s.n, s.c}, dtype);
      global_avgpool_forward(Tensor::from_floats({s.n, s.h, s.w, s.c}, x, dtype), y, stream);
      // fp32 sums of up to 196 values: rel 1e-6 of the result's magnitude.
      EXPECT_TRUE(all_close(testing::reference_avgpool(x, s), y.to_floats(stream),
                            dtype == DType::f32 ? 1e-6 : kBf16Ulp));

      const std::vector<float> dy = testing::normal_values(s.n * s.c, 7, dtype);
      Tensor dx = Tensor::empty({s.n, s.h, s.w, s.c}, dtype);
      global_avgpool_backward(Tensor::from_floats({s.n, 1, 1, s.c}, dy, dtype), dx, stream);
      const std::vector<float> got = dx.to_floats(stream);
      std::vector<double> broadcast(s.numel());
      for (int64_t i = 0; i < s.numel(); ++i) {
        broadcast[i] = dy[i / (s.h * s.w * s.c) * s.c + i % s.c] / static_cast<double>(s.h * s.w);
      }
      EXPECT_TRUE(all_close(broadcast, got, dtype == DType::f32 ? 1e-6 : kBf16Ulp));
      // Centered differences of L = sum(dy * avgpool(x)) in double (small shapes: each costs
      // a whole forward).
      if (s.numel() > 2000) continue;
      auto loss = [&](const std::vector<float>& in) {
        const std::vector<double> pooled = testing::reference_avgpool(in, s);
        double total = 0;
        for (size_t i = 0; i < pooled.size(); ++i)
          total += dy[i] * pooled[i];
        return total;
      };
      std::vector<float> xd = x;
      std::vector<double> fd(s.numel());
      for (int64_t i = 0; i < s.numel(); ++i) {
        const float saved = xd[i], up = saved + 0.125f, down = saved - 0.125f;
        xd[i] = up;
        const double l_up = loss(xd);
        xd[i] = down;
        fd[i] = (l_up - loss(xd)) / (static_cast<double>(up) - down);
        xd[i] = saved;
      }
      EXPECT_TRUE(all_close(fd, got, dtype == DType::f32 ? 1e-6 : kBf16Ulp));
    }
  }
}

using testing::error_of;

TEST(PoolCpu, ArgumentErrorsNameTheTensor) {
  Stream stream;
  Tensor x = Tensor::empty({2, 8, 8, 3}, DType::f32);
  Tensor y = Tensor::empty({2, 4, 4, 3}, DType::f32);
  Tensor wrong_y = Tensor::empty({2, 3, 3, 3}, DType::f32);
  Tensor argmax = Tensor::empty({2, 4, 4, 3}, DType::u8);
  const std::string wrong_shape =
      error_of([&] { maxpool2d_forward({}, {.x = x, .y = wrong_y, .argmax = argmax}, stream); });
  EXPECT_NE(wrong_shape.find("maxpool2d_forward: y is f32[2, 3, 3, 3] on cpu"), std::string::npos)
      << wrong_shape;
  // argmax is u8: the i32 flat indices of before are refused, and so are floats.
  for (DType wrong : {DType::i32, DType::f32, DType::bf16}) {
    Tensor float_argmax = Tensor::empty({2, 4, 4, 3}, wrong);
    const std::string forward =
        error_of([&] { maxpool2d_forward({}, {.x = x, .y = y, .argmax = float_argmax}, stream); });
    EXPECT_NE(forward.find("maxpool2d_forward: argmax is " + std::string(dtype_name(wrong)) +
                           "[2, 4, 4, 3] on cpu, expected u8[2, 4, 4, 3] on cpu"),
              std::string::npos)
        << forward;
    Tensor dx = Tensor::empty({2, 8, 8, 3}, DType::f32);
    const std::string backward = error_of(
        [&] { maxpool2d_backward({}, {.dy = y, .argmax = float_argmax, .dx = dx}, stream); });
    EXPECT_NE(backward.find("maxpool2d_backward: argmax is " + std::string(dtype_name(wrong))),
              std::string::npos)
        << backward;
  }
  EXPECT_THROW(maxpool2d_forward({3, 2, 2}, {.x = x, .y = y, .argmax = argmax}, stream),
               Error);  // padding > k / 2
  // A 2x2 window without padding does not fit a 1-pixel-high image (no output row).
  Tensor thin = Tensor::empty({1, 1, 4, 3}, DType::f32);
  Tensor thin_y = Tensor::empty({1, 1, 2, 3}, DType::f32);
  Tensor thin_argmax = Tensor::empty({1, 1, 2, 3}, DType::u8);
  EXPECT_THROW(
      maxpool2d_forward({2, 2, 0}, {.x = thin, .y = thin_y, .argmax = thin_argmax}, stream), Error);
  Tensor flat = Tensor::empty({8, 3}, DType::f32);
  EXPECT_THROW(global_avgpool_forward(flat, y, stream), Error);
  Tensor pooled = Tensor::empty({2, 4}, DType::f32);
  EXPECT_THROW(global_avgpool_forward(x, pooled, stream), Error);
}

TEST(PoolCpu, IntegerActivationsAreRefused) {
  // An i32 activation would otherwise be read as bf16 by the kernels.
  Stream stream;
  Tensor x = Tensor::empty({2, 8, 8, 3}, DType::i32);
  Tensor y = Tensor::empty({2, 4, 4, 3}, DType::i32);
  Tensor argmax = Tensor::empty({2, 4, 4, 3}, DType::u8);
  Tensor pooled = Tensor::empty({2, 3}, DType::i32);
  const std::string expected = " is i32[2, 8, 8, 3] on cpu, expected a float dtype (f32 or bf16)";
  EXPECT_EQ(error_of([&] { maxpool2d_forward({}, {.x = x, .y = y, .argmax = argmax}, stream); }),
            "maxpool2d_forward: x" + expected);
  EXPECT_EQ(error_of([&] { maxpool2d_backward({}, {.dy = y, .argmax = argmax, .dx = x}, stream); }),
            "maxpool2d_backward: dx" + expected);
  EXPECT_EQ(error_of([&] { global_avgpool_forward(x, pooled, stream); }),
            "global_avgpool_forward: x" + expected);
  EXPECT_EQ(error_of([&] { global_avgpool_backward(pooled, x, stream); }),
            "global_avgpool_backward: dx" + expected);
}

TEST(PoolCpu, WindowsOverAByteOfPositionsAreRefused) {
  // The argmax is a window position in one byte: 16x16 windows are the widest (the test
  // above runs one), 17x17 has 289 positions and is refused by name before any kernel.
  Stream stream;
  Tensor x = Tensor::empty({1, 20, 20, 2}, DType::f32);
  Tensor y = Tensor::empty({1, 4, 4, 2}, DType::f32);
  Tensor argmax = Tensor::empty({1, 4, 4, 2}, DType::u8);
  EXPECT_EQ(error_of([&] {
              maxpool2d_forward({17, 1, 0}, {.x = x, .y = y, .argmax = argmax}, stream);
            }),
            "maxpool2d_forward: a 17x17 window has 289 positions, over the 256 a u8 argmax "
            "holds (kernel <= 16)");
  EXPECT_EQ(error_of([&] {
              maxpool2d_backward({17, 1, 0}, {.dy = y, .argmax = argmax, .dx = x}, stream);
            }),
            "maxpool2d_backward: a 17x17 window has 289 positions, over the 256 a u8 argmax "
            "holds (kernel <= 16)");
}

}  // namespace
}  // namespace engine
