// The CPU combining step: every op on f32 and bf16 against a naive fp64 reference rounded
// once, f64 computed in fp64 (bit for bit), avg's division, NaN propagation of max/min, and
// in-place use (dst aliasing a).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "collective_cases.h"
#include "collectives/cpu/reduce.h"
#include "kernels/error.h"

namespace engine {
namespace {

using testing::compare;
using testing::decode;
using testing::encode;
using testing::round_to;

std::vector<float> random_values(int64_t n, uint32_t seed, DType dtype) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-100.f, 100.f);
  std::vector<float> values(n);
  for (float& v : values)
    v = round_to(dtype, uniform(rng));
  return values;
}

float reference(ReduceOp op, float a, float b, int divisor) {
  if (std::isnan(a) || std::isnan(b)) {
    if (op == ReduceOp::max || op == ReduceOp::min) return std::isnan(a) ? a : b;
  }
  float value = op == ReduceOp::max ? std::max(a, b) : op == ReduceOp::min ? std::min(a, b) : a + b;
  return divisor == 1 ? value : value / static_cast<float>(divisor);
}

TEST(CpuReduce, EveryOpAndDtypeMatchesTheReference) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
      for (int divisor : {1, 3}) {
        for (int64_t n : {0, 1, 7, 64, 1001}) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + std::string(reduce_op_name(op)) +
                       " divisor " + std::to_string(divisor) + " n " + std::to_string(n));
          const auto a = random_values(n, 1, dtype), b = random_values(n, 2, dtype);
          std::vector<float> expected(n);
          for (int64_t i = 0; i < n; ++i)
            expected[i] = round_to(dtype, reference(op, a[i], b[i], divisor));
          auto bytes_a = encode(dtype, a), bytes_b = encode(dtype, b);
          std::vector<std::byte> out(bytes_a.size());
          cpu::reduce({dtype, op, divisor}, out.data(), bytes_a.data(), bytes_b.data(), n);
          const auto mismatch = compare(expected, decode(dtype, out.data(), n));
          EXPECT_EQ(mismatch.count, 0) << mismatch.first;
          // In place, as the ring uses it: dst == a.
          cpu::reduce({dtype, op, divisor}, bytes_a.data(), bytes_a.data(), bytes_b.data(), n);
          EXPECT_EQ(compare(expected, decode(dtype, bytes_a.data(), n)).count, 0);
        }
      }
    }
  }
}

// Doubles no float holds (near 1e8 with parts of 2^-30, and large sums of squares), with
// NaN, signed zeros and ties among them.
std::vector<double> random_doubles(int64_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1e8, 1e8);
  const double specials[] = {NAN, 0.0, -0.0, 1e8 + 0x1p-30, -3.0};
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i)
    values[i] = i % 11 == 3 ? specials[(i / 11 + seed) % 5] : uniform(rng);
  return values;
}

double reference_f64(ReduceOp op, double a, double b, int divisor) {
  if (std::isnan(a) || std::isnan(b)) {
    if (op == ReduceOp::max || op == ReduceOp::min) return std::isnan(a) ? a : b;
  }
  // Ties (0 and -0) give b, as the CUDA kernels' (a > b ? a : b).
  const double value = op == ReduceOp::max   ? (a > b ? a : b)
                       : op == ReduceOp::min ? (a < b ? a : b)
                                             : a + b;
  return divisor == 1 ? value : value / divisor;
}

// Bitwise, NaN == NaN.
int64_t count_differences(const std::vector<double>& expected, const std::vector<double>& actual) {
  int64_t differences = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const bool both_nan = std::isnan(expected[i]) && std::isnan(actual[i]);
    if (!both_nan && std::memcmp(&expected[i], &actual[i], sizeof(double)) != 0) ++differences;
  }
  return differences;
}

TEST(CpuReduce, F64ComputesInDoubleForEveryOp) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    for (int divisor : {1, 3}) {
      for (int64_t n : {0, 1, 7, 64, 1001}) {
        SCOPED_TRACE(std::string(reduce_op_name(op)) + " divisor " + std::to_string(divisor) +
                     " n " + std::to_string(n));
        std::vector<double> a = random_doubles(n, 1), b = random_doubles(n, 2), expected(n);
        for (int64_t i = 0; i < n; ++i)
          expected[i] = reference_f64(op, a[i], b[i], divisor);
        std::vector<double> out(n, 7.0);
        cpu::reduce({DType::f64, op, divisor}, out.data(), a.data(), b.data(), n);
        EXPECT_EQ(count_differences(expected, out), 0);
        cpu::reduce({DType::f64, op, divisor}, a.data(), a.data(), b.data(), n);
        EXPECT_EQ(count_differences(expected, a), 0) << "in place";
      }
    }
  }
  // 1e8 + 2^-30 twice: an fp32 step would give 2e8 exactly.
  const double big = 1e8 + 0x1p-30;
  double sum = 0;
  cpu::reduce({DType::f64, ReduceOp::sum, 1}, &sum, &big, &big, 1);
  EXPECT_EQ(sum, 2e8 + 0x1p-29);
  double avg = 0;
  cpu::reduce({DType::f64, ReduceOp::avg, 3}, &avg, &big, &big, 1);
  EXPECT_EQ(avg, (2e8 + 0x1p-29) / 3);
}

TEST(CpuReduce, F64DivideIsInDouble) {
  std::vector<double> data = {1.0, 1e8 + 0x1p-30, -0.0};
  cpu::divide(DType::f64, data.data(), 3, 3);
  EXPECT_EQ(data[0], 1.0 / 3);
  EXPECT_EQ(data[1], (1e8 + 0x1p-30) / 3);
  EXPECT_TRUE(std::signbit(data[2]));
}

TEST(CpuReduce, MaxAndMinPropagateNaNFromEitherSide) {
  const std::vector<float> a = {NAN, 1.f, NAN}, b = {2.f, NAN, NAN};
  for (ReduceOp op : {ReduceOp::max, ReduceOp::min}) {
    std::vector<float> out(3);
    cpu::reduce({DType::f32, op, 1}, out.data(), a.data(), b.data(), 3);
    for (float v : out)
      EXPECT_TRUE(std::isnan(v)) << reduce_op_name(op);
  }
}

TEST(CpuReduce, Bf16SumRoundsOnceFromFp32) {
  // 1 + 2^-8 is not a bf16; the fp32 sum is rounded once, to nearest even (down to 1).
  const auto a = encode(DType::bf16, {1.f, 1.f}),
             b = encode(DType::bf16, {0.00390625f, 0.01171875f});
  std::vector<std::byte> out(a.size());
  cpu::reduce({DType::bf16, ReduceOp::sum, 1}, out.data(), a.data(), b.data(), 2);
  const auto values = decode(DType::bf16, out.data(), 2);
  EXPECT_EQ(values[0], 1.f);
  EXPECT_EQ(values[1], 1.015625f);  // 1.01171875 rounds up to the next bf16
}

TEST(CpuReduce, DivideRoundsOnce) {
  auto data = encode(DType::bf16, {3.f, -7.f, 0.f});
  cpu::divide(DType::bf16, data.data(), 3, 3);
  const auto values = decode(DType::bf16, data.data(), 3);
  EXPECT_EQ(values[0], 1.f);
  EXPECT_EQ(values[1], round_to(DType::bf16, -7.f / 3.f));
  EXPECT_EQ(values[2], 0.f);
}

TEST(ReduceOpNames, RoundTripAndRejectUnknown) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    EXPECT_EQ(parse_reduce_op(reduce_op_name(op)), op);
  }
  EXPECT_THROW(parse_reduce_op("prod"), Error);
}

}  // namespace
}  // namespace engine
