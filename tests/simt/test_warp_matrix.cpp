// ldmatrix .x4, mma.sync m16n8k16 and m16n8k8 and cvt.rna.tf32.f32 (kernels/cuda/warp_mma.cuh)
// under the SIMT emulator,
// against the PTX ISA's fragment layouts (tests/kernels/warp_matrix_checks.h). The same
// kernels and checks run on a CUDA device in kernels_conv_test's WarpMmaGpu cases.
#include "sim/simt/simt.h"
// The wrappers and probe kernels under test, compiled here by g++ for the emulator.
#include "tests/kernels/warp_matrix_kernels.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/kernels/warp_matrix_checks.h"

namespace {

using namespace engine::testing;
using engine::cuda::ldmatrix_x4;
using engine::cuda::shared_address;

template <bool kTranspose>
void check_ldmatrix() {
  const std::vector<float> matrices = ldmatrix_probe_input();
  std::vector<float> out(32 * 4 * 2, -1);
  simt::launch(ldmatrix_probe_kernel<kTranspose>, dim3(1), dim3(32), 0, nullptr, matrices.data(),
               out.data());
  expect_ldmatrix_layout(out, kTranspose);
}

TEST(SimtWarpMatrix, LdmatrixGivesEachLaneItsRowPair) {
  check_ldmatrix<false>();
}

TEST(SimtWarpMatrix, LdmatrixTransGivesEachLaneItsColumnPair) {
  check_ldmatrix<true>();
}

TEST(SimtWarpMatrix, MmaMatchesNaiveProductThroughThePtxFragmentLayout) {
  const MmaProbeInputs in = mma_probe_inputs();
  std::vector<float> d(16 * 8, 0);
  simt::launch(mma_probe_kernel, dim3(1), dim3(32), 0, nullptr, in.a.data(), in.b.data(),
               in.c.data(), d.data());
  expect_mma_product(in, d);
}

void check_mma_tf32(bool tf32_exact) {
  const MmaProbeInputs in = mma_tf32_probe_inputs(tf32_exact);
  std::vector<float> d(16 * 8, 0);
  simt::launch(mma_tf32_probe_kernel, dim3(1), dim3(32), 0, nullptr, in.a.data(), in.b.data(),
               in.c.data(), d.data());
  expect_mma_tf32_product(in, d);
}

TEST(SimtWarpMatrix, MmaTf32MatchesNaiveProductThroughThePtxFragmentLayout) {
  check_mma_tf32(true);
}

TEST(SimtWarpMatrix, MmaTf32IgnoresTheLow13BitsOfItsOperands) {
  check_mma_tf32(false);
}

TEST(SimtWarpMatrix, Tf32RoundingIsToNearestTiesAwayFromZero) {
  const std::vector<float> in = tf32_round_probe_input();
  std::vector<float> out(in.size(), -1);
  simt::launch(tf32_round_probe_kernel, dim3(1), dim3(32), 0, nullptr, in.data(), out.data(),
               static_cast<int>(in.size()));
  expect_tf32_rounded(in, out);
  // A NaN stays a NaN.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float nan_out = 0;
  simt::launch(tf32_round_probe_kernel, dim3(1), dim3(32), 0, nullptr, &nan, &nan_out, 1);
  EXPECT_TRUE(std::isnan(nan_out));
}

// The batched collectives behind the warp-tile wrappers give what the instructions one by one
// give (a batch that swapped tiles, dropped one or read a row of the wrong load fails here).
TEST(SimtWarpMatrix, WarpTileWrappersMatchTheirInstructionsOneByOne) {
  std::vector<int> mismatches(32, -1);
  simt::launch(warp_tile_probe_kernel, dim3(1), dim3(32), 0, nullptr, mismatches.data());
  EXPECT_EQ(mismatches, std::vector<int>(32, 0));
}

// Lanes that meet in batches of different sizes have diverged: an error, as two different
// collectives are.
__global__ void mismatched_batch_kernel() {
  __shared__ __align__(16) __nv_bfloat16 rows[64][kWarpMatrixRowElements];
  const engine::cuda::SharedAddress two[2] = {shared_address(&rows[threadIdx.x][0]),
                                              shared_address(&rows[32 + threadIdx.x][0])};
  const engine::cuda::SharedAddress three[3] = {two[0], two[1], two[0]};
  uint32_t r2[2][4], r3[3][4];
  if (threadIdx.x == 5) {
    engine::cuda::ldmatrix_x4_each<false>(r3, three);
  } else {
    engine::cuda::ldmatrix_x4_each<false>(r2, two);
  }
}

__global__ void misaligned_batch_kernel() {
  __shared__ __align__(16) __nv_bfloat16 rows[64][kWarpMatrixRowElements];
  const engine::cuda::SharedAddress rows_of_lane[2] = {
      shared_address(&rows[threadIdx.x][0]),
      shared_address(&rows[32 + threadIdx.x][threadIdx.x == 7 ? 2 : 0])};
  uint32_t r[2][4];
  engine::cuda::ldmatrix_x4_each<true>(r, rows_of_lane);
}

template <typename Kernel>
std::string launch_error(Kernel kernel) {
  try {
    simt::launch(kernel, dim3(1), dim3(32), 0, nullptr);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(SimtWarpMatrix, BatchesNeedTheSameShapeInEveryLaneAndAlignedRows) {
  if (!simt::detail::warp_tile_batches()) GTEST_SKIP() << "SIMT_WARP_TILE_BATCHES=off: no batches";
  EXPECT_NE(launch_error(mismatched_batch_kernel).find("met in different warp collectives"),
            std::string::npos);
  EXPECT_NE(launch_error(misaligned_batch_kernel).find("not 16-byte aligned"), std::string::npos);
}

__global__ void partial_warp_ldmatrix_kernel() {
  __shared__ __align__(16) __nv_bfloat16 rows[32][8];
  uint32_t r[4];
  ldmatrix_x4<false>(r, shared_address(&rows[threadIdx.x][0]));
}

__global__ void misaligned_ldmatrix_kernel() {
  __shared__ __align__(16) __nv_bfloat16 rows[32][kWarpMatrixRowElements];
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
