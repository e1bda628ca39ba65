// The CPU GEMM (the AVX-512 kernel where the CPU has it, OpenBLAS or the blocked loop
// otherwise) against a naive double-precision product, for every transpose combination,
// sizes around the 12 x 32 register tile and the 384-deep K passes, and beta 0 / 1 / 0.5.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/sgemm.h"
#include "portable_loops.h"

namespace engine::cpu {
namespace {

std::vector<float> random_matrix(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values)
    v = uniform(rng);
  return values;
}

void expect_matches_naive(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                          float beta) {
  SCOPED_TRACE(::testing::Message() << "ta=" << ta << " tb=" << tb << " m=" << m << " n=" << n
                                    << " k=" << k << " alpha=" << alpha << " beta=" << beta);
  const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
  const auto a = random_matrix((ta ? k : m) * lda, 1), b = random_matrix((tb ? n : k) * ldb, 2);
  auto c = random_matrix(m * ldc, 3);
  std::vector<double> expected(c.begin(), c.end());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        sum +=
            double(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      }
      expected[i * ldc + j] = alpha * sum + beta * expected[i * ldc + j];
    }
  }
  sgemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      worst = std::max(worst, std::abs(c[i * ldc + j] - expected[i * ldc + j]) /
                                  (1.0 + std::abs(expected[i * ldc + j])));
    }
    for (int64_t j = n; j < ldc; ++j) {  // padding columns are never written
      ASSERT_EQ(c[i * ldc + j], float(expected[i * ldc + j])) << "padding column " << j;
    }
  }
  EXPECT_LE(worst, 1e-5 * std::sqrt(double(k) + 1));
}

TEST(SgemmCpu, AllTransposesAndTileEdges) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int64_t m : {1, 11, 12, 13, 50}) {
        for (int64_t n : {1, 16, 31, 32, 33, 70}) {
          for (int64_t k : {1, 7, 383, 385})
            expect_matches_naive(ta, tb, m, n, k, 1.f, 0.f);
        }
      }
    }
  }
}

TEST(SgemmCpu, BetaAndAlpha) {
  for (float beta : {0.f, 1.f, 0.5f}) {
    expect_matches_naive(false, true, 37, 45, 100, 1.f, beta);
    expect_matches_naive(true, false, 64, 200, 900, 1.f, beta);
  }
  expect_matches_naive(false, false, 20, 30, 40, 2.f, 0.5f);  // alpha != 1: the library path
  expect_matches_naive(false, false, 5, 6, 0, 1.f, 0.5f);     // k = 0 scales C
}

TEST(SgemmCpu, LargeEnoughToRunOnAllThreads) {
  expect_matches_naive(false, true, 600, 64, 576, 1.f, 0.f);   // split over rows
  expect_matches_naive(true, false, 64, 576, 1000, 1.f, 1.f);  // split over column panels
  // Several 240-row blocks per thread, the last with a short tile; three 267-deep K passes.
  expect_matches_naive(false, true, 1015, 70, 800, 1.f, 0.5f);
  // A transposed and 400K floats per thread: packed per pass, the short tile included.
  expect_matches_naive(true, false, 1015, 70, 800, 1.f, 0.f);
  // B of 384K floats from L3, 13 row tiles per thread: the next panel slice is prefetched.
  expect_matches_naive(false, true, 300, 100, 3000, 1.f, 1.f);
}

TEST(SgemmCpu, PortablePathOnAvx512Machines) {
  // Where the CPU has AVX-512 the tests above run the engine's kernel; this runs the
  // OpenBLAS (or blocked-loop) path with alpha = 1 on the same machine.
  const testing::PortableLoops portable;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true})
      expect_matches_naive(ta, tb, 50, 70, 385, 1.f, 0.5f);
  }
  expect_matches_naive(false, true, 600, 64, 576, 1.f, 0.f);
}

}  // namespace
}  // namespace engine::cpu
