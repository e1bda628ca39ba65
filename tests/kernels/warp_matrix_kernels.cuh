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

}  // namespace engine::testing
