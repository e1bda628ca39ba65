// The CPU element-wise ops against naive references, through the op API.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "elementwise_cases.h"
#include "kernels/cpu/isa.h"
#include "kernels/ops.h"
#include "portable_loops.h"

namespace engine {
namespace {

using testing::case_name;
using testing::kDTypes;
using testing::kElementwiseSizes;
using testing::make_inputs;
using testing::round_to;
using testing::same_values;

TEST(ElementwiseCpu, ReluForwardMatchesReference) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      SCOPED_TRACE(case_name(dtype, n));
      const std::vector<float> x = make_inputs(n, 1, dtype);
      Tensor tx = Tensor::from_floats({n}, x, dtype);
      Tensor ty = Tensor::empty({n}, dtype);
      relu_forward(tx, ty, stream);
      std::vector<float> expected(x.size());
      for (size_t i = 0; i < x.size(); ++i)
        expected[i] = testing::reference_relu(x[i]);
      EXPECT_TRUE(same_values(expected, ty.to_floats(stream)));
      relu_forward(tx, tx, stream);  // in place
      EXPECT_TRUE(same_values(expected, tx.to_floats(stream)));
    }
  }
}

TEST(ElementwiseCpu, ReluBackwardMasksByOutput) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      SCOPED_TRACE(case_name(dtype, n));
      std::vector<float> y = make_inputs(n, 2, dtype);
      for (float& v : y)
        v = testing::reference_relu(v);
      const std::vector<float> dy = make_inputs(n, 3, dtype);
      Tensor ty = Tensor::from_floats({n}, y, dtype);
      Tensor tdy = Tensor::from_floats({n}, dy, dtype);
      Tensor tdx = Tensor::empty({n}, dtype);
      relu_backward({.y = ty, .dy = tdy, .dx = tdx}, stream);
      std::vector<float> expected(y.size());
      for (size_t i = 0; i < y.size(); ++i)
        expected[i] = testing::reference_relu_backward(y[i], dy[i]);
      EXPECT_TRUE(same_values(expected, tdx.to_floats(stream)));
    }
  }
}

TEST(ElementwiseCpu, AddReluRoundsOnce) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      SCOPED_TRACE(case_name(dtype, n));
      const std::vector<float> a = make_inputs(n, 4, dtype);
      const std::vector<float> b = make_inputs(n, 5, dtype);
      Tensor ta = Tensor::from_floats({n}, a, dtype);
      Tensor tb = Tensor::from_floats({n}, b, dtype);
      Tensor ty = Tensor::empty({n}, dtype);
      add_relu_forward({.a = ta, .b = tb, .y = ty}, stream);
      std::vector<float> expected(a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        expected[i] = round_to(dtype, testing::reference_add_relu(a[i], b[i]));
      }
      EXPECT_TRUE(same_values(expected, ty.to_floats(stream)));
    }
  }
}

TEST(ElementwiseCpu, AddRoundsOnceAndMayAlias) {
  Stream stream;
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      SCOPED_TRACE(case_name(dtype, n));
      const std::vector<float> a = make_inputs(n, 6, dtype);
      const std::vector<float> b = make_inputs(n, 7, dtype);
      Tensor ta = Tensor::from_floats({n}, a, dtype);
      Tensor tb = Tensor::from_floats({n}, b, dtype);
      add({.a = ta, .b = tb, .y = ta}, stream);  // in place, as gradient accumulation uses it
      std::vector<float> expected(a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        expected[i] = round_to(dtype, static_cast<float>(double{a[i]} + double{b[i]}));
      }
      EXPECT_TRUE(same_values(expected, ta.to_floats(stream)));
    }
  }
  Tensor f32 = Tensor::empty({4}, DType::f32), bf16 = Tensor::empty({4}, DType::bf16);
  EXPECT_THROW(add({.a = f32, .b = bf16, .y = f32}, stream), Error);
}

TEST(ElementwiseCpu, FillAndCastRoundToNearestEven) {
  Stream stream;
  for (int64_t n : kElementwiseSizes) {
    SCOPED_TRACE(n);
    Tensor t = Tensor::empty({n}, DType::bf16);
    fill(t, 1.00390625f, stream);  // exactly halfway between two bf16 values: ties to even (1.0)
    EXPECT_TRUE(same_values(std::vector<float>(n, 1.f), t.to_floats(stream)));

    const std::vector<float> x = make_inputs(n, 6, DType::f32);
    Tensor f32 = Tensor::from_floats({n}, x, DType::f32);
    Tensor b16 = Tensor::empty({n}, DType::bf16);
    cast(f32, b16, stream);
    std::vector<float> expected(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      expected[i] = round_to(DType::bf16, x[i]);
    EXPECT_TRUE(same_values(expected, b16.to_floats(stream)));
    Tensor back = Tensor::empty({n}, DType::f32);
    cast(b16, back, stream);  // bf16 -> f32 is exact
    EXPECT_TRUE(same_values(expected, back.to_floats(stream)));
  }
}

// The f32 -> bf16 cast's AVX-512 loop against bf16(float) on the values where rounding is
// delicate: ties both ways, NaNs (one canonical NaN), infinities, the largest floats
// (rounding to infinity), denormals and signed zeros; 37 values, so the masked tail runs too.
TEST(ElementwiseCpu, CastToBf16MatchesScalarRoundingBitForBit) {
  Stream stream;
  const float specials[] = {1.00390625f,    1.01171875f, -1.00390625f, -1.01171875f,  NAN,
                            -NAN,           INFINITY,    -INFINITY,    3.4028235e38f, -3.39e38f,
                            1e-40f,         -1e-40f,     0.f,          -0.f,          65504.f,
                            1.1754944e-38f, 0.333333f,   -2.7182818f};
  std::vector<float> x;
  for (int copy = 0; copy < 2; ++copy)
    x.insert(x.end(), std::begin(specials), std::end(specials));
  x.push_back(7.f);
  Tensor f32 = Tensor::from_floats({static_cast<int64_t>(x.size())}, x, DType::f32);
  Tensor b16 = Tensor::empty({static_cast<int64_t>(x.size())}, DType::bf16);
  cast(f32, b16, stream);
  stream.synchronize();
  const bf16* got = static_cast<const bf16*>(b16.raw_data());
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(got[i].bits, bf16(x[i]).bits) << "value " << x[i] << " at " << i;
}

// ReLU, its gradient, add and add+ReLU give the same bits on every vector width this CPU has
// (baseline SSE, AVX2, AVX-512: the same source compiled three times), in f32 and bf16, on
// values with NaNs, infinities, signed zeros and denormals (and sums that round either way in
// bf16), over lengths that leave every vector tail and split between threads.
TEST(ElementwiseCpu, EveryVectorWidthGivesTheSameBits) {
  Stream stream;
  const float specials[] = {NAN,    -NAN,    INFINITY,    -INFINITY,    0.f,     -0.f,
                            1e-40f, -1e-40f, 1.00390625f, -1.01171875f, 3.4e38f, -2.5f};
  std::vector<cpu::VectorIsa> levels = {cpu::VectorIsa::kBaseline};
  if (cpu::cpu_has_avx2()) levels.push_back(cpu::VectorIsa::kAvx2);
  if (cpu::cpu_has_avx512()) levels.push_back(cpu::VectorIsa::kAvx512);
  using Op = std::function<void(const Tensor&, const Tensor&, Tensor&)>;
  const std::pair<const char*, Op> ops[] = {
      {"relu", [&](const Tensor& a, const Tensor&, Tensor& y) { relu_forward(a, y, stream); }},
      {"relu_backward", [&](const Tensor& a, const Tensor& b,
                            Tensor& y) { relu_backward({.y = a, .dy = b, .dx = y}, stream); }},
      {"add",
       [&](const Tensor& a, const Tensor& b, Tensor& y) { add({.a = a, .b = b, .y = y}, stream); }},
      {"add_relu", [&](const Tensor& a, const Tensor& b,
                       Tensor& y) { add_relu_forward({.a = a, .b = b, .y = y}, stream); }},
  };
  for (DType dtype : kDTypes) {
    for (int64_t n : {int64_t{37}, int64_t{70001}}) {
      std::vector<float> a = make_inputs(n, 7, DType::f32), b = make_inputs(n, 8, DType::f32);
      for (int64_t i = 0; i < n; i += 5)
        a[i] = specials[(i / 5) % std::size(specials)];
      for (int64_t i = 2; i < n; i += 7)
        b[i] = specials[(i / 7) % std::size(specials)];
      const Tensor ta = Tensor::from_floats({n}, a, DType::f32);
      const Tensor tb = Tensor::from_floats({n}, b, DType::f32);
      Tensor da = Tensor::empty({n}, dtype), db = Tensor::empty({n}, dtype);
      cast(ta, da, stream);
      cast(tb, db, stream);
      for (const auto& [name, op] : ops) {
        SCOPED_TRACE(std::string(name) + " " + case_name(dtype, n));
        std::vector<std::vector<uint8_t>> results;
        for (cpu::VectorIsa level : levels) {
          const testing::CappedVectorIsa cap(level);
          Tensor y = Tensor::empty({n}, dtype);
          op(da, db, y);
          stream.synchronize();
          const auto* bytes = static_cast<const uint8_t*>(y.raw_data());
          results.emplace_back(bytes, bytes + n * dtype_size(dtype));
        }
        for (size_t level = 1; level < results.size(); ++level)
          EXPECT_TRUE(results[level] == results[0]) << "vector level " << level << " differs";
      }
    }
  }
}

TEST(ElementwiseCpu, ArgumentErrorsNameTheTensor) {
  Stream stream;
  Tensor x = Tensor::empty({4, 3}, DType::f32);
  Tensor wrong_dtype = Tensor::empty({4, 3}, DType::bf16);
  Tensor wrong_size = Tensor::empty({5, 3}, DType::f32);
  try {
    relu_forward(x, wrong_dtype, stream);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("relu_forward: y is bf16[4, 3] on cpu"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(relu_backward({.y = x, .dy = wrong_size, .dx = x}, stream), Error);
  EXPECT_THROW(add_relu_forward({.a = x, .b = x, .y = wrong_size}, stream), Error);
  Tensor undefined;
  EXPECT_THROW(fill(undefined, 0.f, stream), Error);
  EXPECT_THROW(copy(x, wrong_dtype, stream), Error);
  EXPECT_THROW(cast(x, wrong_size, stream), Error);
}

}  // namespace
}  // namespace engine
