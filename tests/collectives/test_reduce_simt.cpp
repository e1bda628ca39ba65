// The collectives' CUDA reduction kernels (collectives/cuda/reduce.cuh) under the SIMT
// emulator, through their launcher, bit for bit against the CPU twin: every op, f32, bf16
// and f64 (computed in double), with and without avg's division, aligned (vector path) and one
// element off (scalar path), the default grid and a 2-block grid that forces the grid-stride loop,
// and in place.
#include "sim/simt/simt.h"
// The kernels under test, compiled here by g++ for the emulator.
#include "collectives/cuda/reduce.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "collective_cases.h"
#include "collectives/cpu/reduce.h"
#include "tests/kernels/simt_buffer.h"

namespace engine {
namespace {

using testing::compare;
using testing::decode;
using testing::SimtBuffer;

const int64_t kSizes[] = {0, 1, 3, 8, 9, 33, 1000, 4099};
const cuda::ElementwiseLaunch kShapes[] = {{256, 2048}, {64, 2}};

// Values with ties, signed zeros and NaN, so rounding and NaN handling are exercised.
std::vector<float> values(int64_t n, uint32_t seed, DType dtype) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-50.f, 50.f);
  const float specials[] = {NAN, 0.f, -0.f, 1.00390625f, -3.f};
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i) {
    out[i] = i % 11 == 3 ? specials[(i / 11 + seed) % 5] : uniform(rng);
    out[i] = testing::round_to(dtype, out[i]);
  }
  return out;
}

void launch_reduce(const Reduction& reduction, void* dst, const void* a, const void* b, int64_t n,
                   const cuda::ElementwiseLaunch& shape) {
  if (reduction.dtype == DType::f32) {
    cuda::reduce_launch(reduction, static_cast<float*>(dst), static_cast<const float*>(a),
                        static_cast<const float*>(b), n, nullptr, shape);
  } else {
    cuda::reduce_launch(reduction, static_cast<__nv_bfloat16*>(dst),
                        static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(b),
                        n, nullptr, shape);
  }
}

TEST(ReduceSimt, EveryOpDtypeAndPathMatchesTheCpuTwin) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
      for (int divisor : {1, 3}) {
        for (int64_t n : kSizes) {
          for (int offset : {0, 1}) {
            for (const cuda::ElementwiseLaunch& shape : kShapes) {
              SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + std::string(reduce_op_name(op)) +
                           " divisor " + std::to_string(divisor) + " n " + std::to_string(n) +
                           " offset " + std::to_string(offset) + " blocks " +
                           std::to_string(shape.max_blocks));
              const Reduction reduction{dtype, op, divisor};
              const auto a = values(n, 1, dtype), b = values(n, 2, dtype);
              SimtBuffer in_a(dtype, a, offset), in_b(dtype, b, offset),
                  out(dtype, std::vector<float>(n, 7.f), offset);
              SimtBuffer expected(dtype, std::vector<float>(n), 0);
              cpu::reduce(reduction, expected.data(), in_a.data(), in_b.data(), n);
              launch_reduce(reduction, out.data(), in_a.data(), in_b.data(), n, shape);
              const auto want = decode(dtype, expected.data(), n);
              const auto mismatch = compare(want, decode(dtype, out.data(), n));
              EXPECT_EQ(mismatch.count, 0) << mismatch.first;
              // In place (dst == a), as the ring's transports use it.
              launch_reduce(reduction, in_a.data(), in_a.data(), in_b.data(), n, shape);
              EXPECT_EQ(compare(want, decode(dtype, in_a.data(), n)).count, 0) << "in place";
            }
          }
        }
      }
    }
  }
}

// f64 (SyncBN's sums) computes in double: bit for bit against the CPU twin on values no
// float holds, on both paths (16-byte packs of 2 doubles, and one element off) and both grids.
TEST(ReduceSimt, F64ComputesInDoubleLikeTheCpuTwin) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    for (int divisor : {1, 3}) {
      for (int64_t n : kSizes) {
        for (int offset : {0, 1}) {
          for (const cuda::ElementwiseLaunch& shape : kShapes) {
            SCOPED_TRACE(std::string(reduce_op_name(op)) + " divisor " + std::to_string(divisor) +
                         " n " + std::to_string(n) + " offset " + std::to_string(offset) +
                         " blocks " + std::to_string(shape.max_blocks));
            const Reduction reduction{DType::f64, op, divisor};
            std::mt19937_64 rng(static_cast<uint64_t>(n) * 31 + offset);
            std::uniform_real_distribution<double> uniform(-1e8, 1e8);
            std::vector<double> a(n), b(n);
            for (int64_t i = 0; i < n; ++i) {
              a[i] = i % 13 == 5 ? NAN : uniform(rng) + 0x1p-30;
              b[i] = i % 17 == 2 ? -0.0 : uniform(rng);
            }
            SimtBuffer in_a(a, offset), in_b(b, offset), out(std::vector<double>(n, 7.0), offset);
            std::vector<double> expected(n);
            cpu::reduce(reduction, expected.data(), a.data(), b.data(), n);
            cuda::reduce_launch(reduction, out.doubles(), in_a.doubles(), in_b.doubles(), n,
                                nullptr, shape);
            const std::vector<double> got = out.double_values();
            int64_t differences = 0;
            for (int64_t i = 0; i < n; ++i) {
              const bool both_nan = std::isnan(expected[i]) && std::isnan(got[i]);
              if (!both_nan && std::memcmp(&expected[i], &got[i], sizeof(double)) != 0)
                ++differences;
            }
            EXPECT_EQ(differences, 0);
            cuda::reduce_launch(reduction, in_a.doubles(), in_a.doubles(), in_b.doubles(), n,
                                nullptr, shape);
            const std::vector<double> in_place = in_a.double_values();
            for (int64_t i = 0; i < n; ++i) {
              if (!(std::isnan(in_place[i]) && std::isnan(expected[i]))) {
                ASSERT_EQ(std::memcmp(&in_place[i], &expected[i], sizeof(double)), 0)
                    << "in place, element " << i;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace engine
