// WMMA m16n16k16 against a naive fp32 matrix product, for bf16 and half inputs and every
// combination of row/col-major operands and accumulators.
#include <gtest/gtest.h>

#include <mma.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "sim/simt/simt.h"

namespace {

namespace wmma = nvcuda::wmma;
constexpr int kM = 16, kN = 16, kK = 16;

// Element (r, c) of a matrix with leading dimension ld.
int at(bool row_major, int r, int c, int ld) {
  return row_major ? r * ld + c : r + c * ld;
}

// Each warp of the block multiplies its own pair: A_w (16x16), B_w, C_w -> D_w.
template <typename T, typename LayoutA, typename LayoutB>
__global__ void mma_kernel(const T* a, const T* b, const float* c, float* d, bool c_row_major,
                           bool d_row_major) {
  const unsigned warp = threadIdx.x / 32;
  const int tile = kM * kN;
  const unsigned lda = std::is_same_v<LayoutA, wmma::row_major> ? kK : kM;
  const unsigned ldb = std::is_same_v<LayoutB, wmma::row_major> ? kN : kK;
  wmma::fragment<wmma::matrix_a, kM, kN, kK, T, LayoutA> fa;
  wmma::fragment<wmma::matrix_b, kM, kN, kK, T, LayoutB> fb;
  wmma::fragment<wmma::accumulator, kM, kN, kK, float> acc;
  wmma::load_matrix_sync(fa, a + warp * tile, lda);
  wmma::load_matrix_sync(fb, b + warp * tile, ldb);
  wmma::load_matrix_sync(acc, c + warp * tile, kN,
                         c_row_major ? wmma::mem_row_major : wmma::mem_col_major);
  wmma::mma_sync(acc, fa, fb, acc);
  for (int i = 0; i < acc.num_elements; ++i)
    acc.x[i] *= 2.0f;  // element-wise use of x[]
  wmma::store_matrix_sync(d + warp * tile, acc, kN,
                          d_row_major ? wmma::mem_row_major : wmma::mem_col_major);
}

template <typename T>
float to_float(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else {
    return __bfloat162float(v);
  }
}

template <typename T>
T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half(v);
  } else {
    return __float2bfloat16(v);
  }
}

template <typename T, typename LayoutA, typename LayoutB>
void check_mma(bool c_row_major, bool d_row_major) {
  constexpr bool a_row = std::is_same_v<LayoutA, wmma::row_major>;
  constexpr bool b_row = std::is_same_v<LayoutB, wmma::row_major>;
  const int warps = 2, tile = kM * kN;
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<T> a(warps * tile), b(warps * tile);
  std::vector<float> c(warps * tile), d(warps * tile);
  for (auto& v : a)
    v = from_float<T>(uniform(random));
  for (auto& v : b)
    v = from_float<T>(uniform(random));
  for (auto& v : c)
    v = uniform(random);
  simt::launch(mma_kernel<T, LayoutA, LayoutB>, dim3(1), dim3(32 * warps), 0, nullptr, a.data(),
               b.data(), c.data(), d.data(), c_row_major, d_row_major);
  for (int w = 0; w < warps; ++w) {
    const int base = w * tile;
    for (int i = 0; i < kM; ++i) {
      for (int j = 0; j < kN; ++j) {
        float expected = c[base + at(c_row_major, i, j, kN)];
        for (int k = 0; k < kK; ++k) {
          expected += to_float(a[base + at(a_row, i, k, a_row ? kK : kM)]) *
                      to_float(b[base + at(b_row, k, j, b_row ? kN : kK)]);
        }
        EXPECT_NEAR(d[base + at(d_row_major, i, j, kN)], 2.0f * expected, 1e-4f)
            << "warp " << w << " (" << i << "," << j << ") a_row " << a_row << " b_row " << b_row
            << " c_row " << c_row_major << " d_row " << d_row_major;
      }
    }
  }
}

template <typename T>
void check_all_layouts() {
  for (bool c_row : {true, false}) {
    for (bool d_row : {true, false}) {
      check_mma<T, wmma::row_major, wmma::row_major>(c_row, d_row);
      check_mma<T, wmma::row_major, wmma::col_major>(c_row, d_row);
      check_mma<T, wmma::col_major, wmma::row_major>(c_row, d_row);
      check_mma<T, wmma::col_major, wmma::col_major>(c_row, d_row);
    }
  }
}

TEST(SimtWmma, Bfloat16MatchesNaiveProduct) {
  check_all_layouts<__nv_bfloat16>();
}
TEST(SimtWmma, HalfMatchesNaiveProduct) {
  check_all_layouts<__half>();
}

__global__ void fill_kernel(float* out) {
  wmma::fragment<wmma::accumulator, kM, kN, kK, float> acc;
  wmma::fill_fragment(acc, 1.5f);
  wmma::store_matrix_sync(out, acc, kN, wmma::mem_row_major);
}

TEST(SimtWmma, FillFragment) {
  std::vector<float> out(kM * kN);
  simt::launch(fill_kernel, dim3(1), dim3(32), 0, nullptr, out.data());
  for (float v : out)
    EXPECT_EQ(v, 1.5f);
}

TEST(SimtWmma, MmaNeedsTheWholeWarp) {
  std::vector<__half> a(kM * kK), b(kK * kN);
  std::vector<float> c(kM * kN), d(kM * kN);
  EXPECT_THROW(simt::launch(mma_kernel<__half, wmma::row_major, wmma::row_major>, dim3(1), dim3(16),
                            0, nullptr, a.data(), b.data(), c.data(), d.data(), true, true),
               std::runtime_error);
}

}  // namespace
