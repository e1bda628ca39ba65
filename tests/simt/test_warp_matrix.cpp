// ldmatrix .x4 and mma.sync m16n8k16 (kernels/cuda/warp_mma.cuh on the emulator) against the
// fragment layouts of the PTX ISA, which this file writes out on its own (not through the
// emulator's formulas): kernels index fragments by these layouts, so an emulation that only
// got the product right would pass a kernel that fails on a GPU.
#include "kernels/simt/simt.h"
// The wrappers under test, compiled here by g++ for the emulator.
#include "kernels/cuda/warp_mma.cuh"

#include <gtest/gtest.h>

#include <cuda_bf16.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

using engine::cuda::ldmatrix_x4;
using engine::cuda::mma_m16n8k16_bf16;
using engine::cuda::shared_address;

// Matrix i's row r sits at shared row kRowOf[8 i + r]: scattered, so each lane's address
// decides what the warp reads.
constexpr int kRowOf[32] = {5, 17, 30, 2,  11, 24, 8, 19, 0,  27, 14, 6,  21, 31, 9,  16,
                            3, 25, 12, 29, 7,  18, 1, 22, 13, 28, 4,  20, 10, 26, 15, 23};
constexpr int kRowElements = 8 + 8;  // 8 used, 8 padding: rows 32 bytes apart

// Exact in bf16 (integers below 256): matrix i, row r, column c.
float element_value(int matrix, int row, int column) {
  return static_cast<float>(matrix * 64 + row * 8 + column);
}

template <bool kTranspose>
__global__ void ldmatrix_kernel(const float* matrices, float* out) {
  __shared__ __align__(16) __nv_bfloat16 rows[32][kRowElements];
  const int lane = static_cast<int>(threadIdx.x);
  for (int e = 0; e < 8; ++e)  // lane 8i + r stores matrix i's row r
    rows[kRowOf[lane]][e] = __float2bfloat16(matrices[lane * 8 + e]);
  __syncwarp();
  uint32_t r[4];
  ldmatrix_x4<kTranspose>(r, shared_address(&rows[kRowOf[lane]][0]));
  for (int i = 0; i < 4; ++i) {
    out[(lane * 4 + i) * 2] = __bfloat162float(__ushort_as_bfloat16(r[i] & 0xffff));
    out[(lane * 4 + i) * 2 + 1] = __bfloat162float(__ushort_as_bfloat16(r[i] >> 16));
  }
}

template <bool kTranspose>
void check_ldmatrix() {
  std::vector<float> matrices(32 * 8), out(32 * 4 * 2, -1);
  for (int m = 0; m < 4; ++m)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c)
        matrices[(m * 8 + r) * 8 + c] = element_value(m, r, c);
  simt::launch(ldmatrix_kernel<kTranspose>, dim3(1), dim3(32), 0, nullptr, matrices.data(),
               out.data());
  // PTX: a lane's register i holds matrix i's row lane/4, columns 2(lane%4) and +1 (the
  // lower one in the low half); .trans: column lane/4, rows 2(lane%4) and +1.
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 4; ++i) {
      for (int h = 0; h < 2; ++h) {
        const int row = kTranspose ? 2 * (lane % 4) + h : lane / 4;
        const int column = kTranspose ? lane / 4 : 2 * (lane % 4) + h;
        EXPECT_EQ(out[(lane * 4 + i) * 2 + h], element_value(i, row, column))
            << "lane " << lane << " register " << i << (h ? " high" : " low");
      }
    }
  }
}

TEST(SimtWarpMatrix, LdmatrixGivesEachLaneItsRowPair) {
  check_ldmatrix<false>();
}

TEST(SimtWarpMatrix, LdmatrixTransGivesEachLaneItsColumnPair) {
  check_ldmatrix<true>();
}

uint32_t pack(float low, float high) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16(low))) |
         (static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16(high))) << 16);
}

// One warp: D = A B + C with A 16 x 16 (row-major in memory), B 16 x 8 ([k][n]), C and D
// 16 x 8 row-major, every fragment filled and read by the PTX table.
__global__ void mma_kernel(const float* a, const float* b, const float* c, float* d) {
  const int lane = static_cast<int>(threadIdx.x), group = lane / 4, pair = 2 * (lane % 4);
  const auto A = [&](int row, int k) { return a[row * 16 + k]; };
  const auto B = [&](int k, int n) { return b[k * 8 + n]; };
  const uint32_t a_frag[4] = {pack(A(group, pair), A(group, pair + 1)),
                              pack(A(group + 8, pair), A(group + 8, pair + 1)),
                              pack(A(group, pair + 8), A(group, pair + 9)),
                              pack(A(group + 8, pair + 8), A(group + 8, pair + 9))};
  const uint32_t b_frag[2] = {pack(B(pair, group), B(pair + 1, group)),
                              pack(B(pair + 8, group), B(pair + 9, group))};
  float acc[4] = {c[group * 8 + pair], c[group * 8 + pair + 1], c[(group + 8) * 8 + pair],
                  c[(group + 8) * 8 + pair + 1]};
  mma_m16n8k16_bf16(acc, a_frag, b_frag);
  d[group * 8 + pair] = acc[0];
  d[group * 8 + pair + 1] = acc[1];
  d[(group + 8) * 8 + pair] = acc[2];
  d[(group + 8) * 8 + pair + 1] = acc[3];
}

float bf16_round(float v) {
  return __bfloat162float(__float2bfloat16(v));
}

TEST(SimtWarpMatrix, MmaMatchesNaiveProductThroughThePtxFragmentLayout) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-2, 2);
  std::vector<float> a(16 * 16), b(16 * 8), c(16 * 8), d(16 * 8, 0);
  for (float& v : a)
    v = bf16_round(value(rng));
  for (float& v : b)
    v = bf16_round(value(rng));
  for (float& v : c)
    v = value(rng);
  simt::launch(mma_kernel, dim3(1), dim3(32), 0, nullptr, a.data(), b.data(), c.data(), d.data());
  for (int row = 0; row < 16; ++row) {
    for (int n = 0; n < 8; ++n) {
      double expected = c[row * 8 + n];
      for (int k = 0; k < 16; ++k)
        expected += static_cast<double>(a[row * 16 + k]) * b[k * 8 + n];
      // 16 exact products summed in fp32: a few ulps of the magnitudes summed.
      EXPECT_NEAR(d[row * 8 + n], expected, 1e-5) << "row " << row << " column " << n;
    }
  }
}

__global__ void partial_warp_ldmatrix_kernel() {
  __shared__ __align__(16) __nv_bfloat16 rows[32][8];
  uint32_t r[4];
  ldmatrix_x4<false>(r, shared_address(&rows[threadIdx.x][0]));
}

__global__ void misaligned_ldmatrix_kernel() {
  __shared__ __align__(16) __nv_bfloat16 rows[32][kRowElements];
  uint32_t r[4];
  ldmatrix_x4<false>(r, shared_address(&rows[threadIdx.x][threadIdx.x == 3 ? 1 : 0]));
}

TEST(SimtWarpMatrix, LdmatrixNeedsTheWholeWarpAndAlignedRows) {
  EXPECT_THROW(simt::launch(partial_warp_ldmatrix_kernel, dim3(1), dim3(16), 0, nullptr),
               std::runtime_error);
  EXPECT_THROW(simt::launch(misaligned_ldmatrix_kernel, dim3(1), dim3(32), 0, nullptr),
               std::runtime_error);
}

}  // namespace
