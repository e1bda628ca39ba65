// Kernels that read back what ldmatrix .x4, mma.sync m16n8k16 (bf16) and m16n8k8 (tf32) and
// cvt.rna.tf32.f32 (kernels/cuda/warp_mma.cuh) give each lane, for checking against the PTX ISA's
// fragment layouts (warp_matrix_checks.h): under the SIMT emulator
// (tests/simt/test_warp_matrix.cpp) and on a CUDA device, real or the sim device
// (test_warp_mma_gpu.cpp through warp_mma_probe.cu). The same checks in both places tie the
// emulation to the hardware. Include after the SIMT prelude or under nvcc.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/warp_mma.cuh"

namespace engine::testing {

constexpr int kWarpMatrixRowElements = 8 + 8;  // 8 used, 8 padding: rows 32 bytes apart

// Two bf16 in one register, the first in the low half.
__host__ __device__ inline uint32_t pack_bf16_pair(float low, float high) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16(low))) |
         (static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16(high))) << 16);
}

__device__ inline void unpack_bf16_pair(uint32_t reg, float* out) {
  out[0] = __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(reg & 0xffff)));
  out[1] = __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(reg >> 16)));
}

// One warp. matrices: 32 rows of 8 (row 8i + r is matrix i's row r), stored at scattered
// shared rows so that each lane's address decides what the warp reads. out: per lane, its 4
// registers as (low, high) pairs.
template <bool kTranspose>
__global__ void ldmatrix_probe_kernel(const float* matrices, float* out) {
  constexpr int kRowOf[32] = {5, 17, 30, 2,  11, 24, 8, 19, 0,  27, 14, 6,  21, 31, 9,  16,
                              3, 25, 12, 29, 7,  18, 1, 22, 13, 28, 4,  20, 10, 26, 15, 23};
  __shared__ __align__(16) __nv_bfloat16 rows[32][kWarpMatrixRowElements];
  const int lane = static_cast<int>(threadIdx.x);
  for (int e = 0; e < 8; ++e)  // lane 8i + r stores matrix i's row r
    rows[kRowOf[lane]][e] = __float2bfloat16(matrices[lane * 8 + e]);
  __syncwarp();
  uint32_t r[4];
  engine::cuda::ldmatrix_x4<kTranspose>(r, engine::cuda::shared_address(&rows[kRowOf[lane]][0]));
  for (int i = 0; i < 4; ++i)
    unpack_bf16_pair(r[i], out + (lane * 4 + i) * 2);
}

// Where register r of `lane`'s C/D fragment (16 x 8, both mma shapes) is in a row-major 16 x 8
// matrix: row lane / 4 (+ 8 for r >= 2), column 2 (lane % 4) + r % 2.
__host__ __device__ inline int accumulator_index(int lane, int r) {
  return (lane / 4 + 8 * (r / 2)) * 8 + 2 * (lane % 4) + r % 2;
}

// One warp: d = a b + c with A 16 x 16 (row-major), B 16 x 8 ([k][n]), C and D 16 x 8
// row-major; every fragment filled and read by the PTX table, not through ldmatrix.
__global__ void mma_probe_kernel(const float* a, const float* b, const float* c, float* d) {
  const int lane = static_cast<int>(threadIdx.x), group = lane / 4, pair = 2 * (lane % 4);
  const auto A = [&](int row, int k) { return a[row * 16 + k]; };
  const auto B = [&](int k, int n) { return b[k * 8 + n]; };
  const uint32_t a_frag[4] = {pack_bf16_pair(A(group, pair), A(group, pair + 1)),
                              pack_bf16_pair(A(group + 8, pair), A(group + 8, pair + 1)),
                              pack_bf16_pair(A(group, pair + 8), A(group, pair + 9)),
                              pack_bf16_pair(A(group + 8, pair + 8), A(group + 8, pair + 9))};
  const uint32_t b_frag[2] = {pack_bf16_pair(B(pair, group), B(pair + 1, group)),
                              pack_bf16_pair(B(pair + 8, group), B(pair + 9, group))};
  float acc[4];
  for (int r = 0; r < 4; ++r)
    acc[r] = c[accumulator_index(lane, r)];
  engine::cuda::mma_m16n8k16_bf16(acc, a_frag, b_frag);
  for (int r = 0; r < 4; ++r)
    d[accumulator_index(lane, r)] = acc[r];
}

// One warp: d = a b + c with A 16 x 8 (row-major), B 8 x 8 ([k][n]), C and D 16 x 8 row-major,
// tf32 fragments filled with the operands' fp32 bits as they are (no rounding) by the PTX table.
__global__ void mma_tf32_probe_kernel(const float* a, const float* b, const float* c, float* d) {
  const int lane = static_cast<int>(threadIdx.x), group = lane / 4, t = lane % 4;
  const auto A = [&](int row, int k) { return __float_as_uint(a[row * 8 + k]); };
  const auto B = [&](int k, int n) { return __float_as_uint(b[k * 8 + n]); };
  const uint32_t a_frag[4] = {A(group, t), A(group + 8, t), A(group, t + 4), A(group + 8, t + 4)};
  const uint32_t b_frag[2] = {B(t, group), B(t + 4, group)};
  float acc[4];
  for (int r = 0; r < 4; ++r)
    acc[r] = c[accumulator_index(lane, r)];
  engine::cuda::mma_m16n8k8_tf32(acc, a_frag, b_frag);
  for (int r = 0; r < 4; ++r)
    d[accumulator_index(lane, r)] = acc[r];
}

// out[i] = in[i] through to_tf32 (cvt.rna.tf32.f32), for i < n, one warp striding.
__global__ void tf32_round_probe_kernel(const float* in, float* out, int n) {
  for (int i = static_cast<int>(threadIdx.x); i < n; i += 32)
    out[i] = __uint_as_float(engine::cuda::to_tf32(__float_as_uint(in[i])));
}

// A value of a few bits from (seed, index), so that products and sums stay exact in bf16 and
// fp32 alike: -32 .. 31 quarters.
__host__ __device__ inline float probe_value(uint32_t seed, uint32_t index) {
  uint32_t h = (seed * 0x9e3779b9u) ^ (index * 0x85ebca6bu);
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return static_cast<float>(static_cast<int>(h % 64u) - 32) * 0.25f;
}

// One warp: the warp-tile wrappers (ldmatrix_x4_each, both layouts; mma_m16n8k16_bf16_tile and
// mma_m16n8k8_tf32_tile on 2 x 3 tiles) against their instructions one by one, on the same
// operands. mismatches[lane]: the registers of this lane that differ, bit for bit. Under the
// SIMT emulator the wrappers are one batched collective each (sim/simt/warp_matrix.h); on a GPU
// the same instructions in a loop.
constexpr int kWarpTileProbeTilesA = 2, kWarpTileProbeTilesB = 3;
__global__ void warp_tile_probe_kernel(int* mismatches) {
  constexpr int kA = kWarpTileProbeTilesA, kB = kWarpTileProbeTilesB;
  __shared__ __align__(16) __nv_bfloat16 rows[64][kWarpMatrixRowElements];
  const int lane = static_cast<int>(threadIdx.x);
  for (int r = lane; r < 64; r += 32) {
    for (int e = 0; e < 8; ++e)
      rows[r][e] = __float2bfloat16(probe_value(1, static_cast<uint32_t>(r * 8 + e)));
  }
  __syncwarp();
  int bad = 0;
  const engine::cuda::SharedAddress addresses[2] = {
      engine::cuda::shared_address(&rows[lane][0]),
      engine::cuda::shared_address(&rows[63 - lane][0])};
  uint32_t each[2][4], each_trans[2][4];
  engine::cuda::ldmatrix_x4_each<false>(each, addresses);
  engine::cuda::ldmatrix_x4_each<true>(each_trans, addresses);
  for (int l = 0; l < 2; ++l) {
    uint32_t one[4], one_trans[4];
    engine::cuda::ldmatrix_x4<false>(one, addresses[l]);
    engine::cuda::ldmatrix_x4<true>(one_trans, addresses[l]);
    for (int i = 0; i < 4; ++i)
      bad += (one[i] != each[l][i]) + (one_trans[i] != each_trans[l][i]);
  }
  const auto operand = [&](uint32_t seed, int index, bool tf32) {
    const float low = probe_value(seed, static_cast<uint32_t>(lane * 64 + 2 * index));
    const float high = probe_value(seed, static_cast<uint32_t>(lane * 64 + 2 * index + 1));
    // tf32: fp32 bits with low bits set, which mma ignores either way.
    return tf32 ? __float_as_uint(low) | (static_cast<uint32_t>(index) & 0x1fffu)
                : pack_bf16_pair(low, high);
  };
  for (int tf32 = 0; tf32 < 2; ++tf32) {
    uint32_t a[kA][4], b[kB][2];
    float tile[kA][kB][4], one[kA][kB][4];
    for (int i = 0; i < kA; ++i) {
      for (int r = 0; r < 4; ++r)
        a[i][r] = operand(2, i * 4 + r, tf32 != 0);
    }
    for (int j = 0; j < kB; ++j) {
      for (int r = 0; r < 2; ++r)
        b[j][r] = operand(3, j * 2 + r, tf32 != 0);
    }
    for (int i = 0; i < kA; ++i) {
      for (int j = 0; j < kB; ++j) {
        for (int r = 0; r < 4; ++r)
          tile[i][j][r] = one[i][j][r] =
              probe_value(4, static_cast<uint32_t>(((lane * kA + i) * kB + j) * 4 + r));
      }
    }
    if (tf32 != 0) {
      engine::cuda::mma_m16n8k8_tf32_tile(tile, a, b);
    } else {
      engine::cuda::mma_m16n8k16_bf16_tile(tile, a, b);
    }
    for (int i = 0; i < kA; ++i) {
      for (int j = 0; j < kB; ++j) {
        if (tf32 != 0) {
          engine::cuda::mma_m16n8k8_tf32(one[i][j], a[i], b[j]);
        } else {
          engine::cuda::mma_m16n8k16_bf16(one[i][j], a[i], b[j]);
        }
        for (int r = 0; r < 4; ++r)
          bad += __float_as_uint(tile[i][j][r]) != __float_as_uint(one[i][j][r]);
      }
    }
  }
  mismatches[lane] = bad;
}

}  // namespace engine::testing
