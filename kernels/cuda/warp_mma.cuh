// Warp-level tensor-core instructions that WMMA hides: ldmatrix (four 8x8 matrices of 16-bit
// elements, or 8x4 of 32-bit ones, from shared memory into each lane's fragment registers, one
// instruction instead of WMMA's four generic loads per fragment), mma.sync m16n8k16 (bf16 in)
// and m16n8k8 (tf32 in), both accumulating in fp32, whose fragment layouts are fixed by PTX
// (sim/simt/warp_matrix.h lists them), cvt.rna.tf32.f32 and plain 32-bit shared loads.
// Under nvcc they are the PTX instructions (sm_80 and later); under the SIMT emulator, its
// emulations.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "kernels/cuda/shared_address.cuh"

namespace engine::cuda {

// Lanes 8i .. 8i+7 pass the addresses of matrix i's rows (16-byte aligned, shared memory).
// r[i]: matrix i's row lane / 4, columns 2 (lane % 4) and + 1; with kTranspose its column
// lane / 4, rows 2 (lane % 4) and + 1.
template <bool kTranspose>
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], SharedAddress row) {
#if defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ >= 800, "ldmatrix and bf16 mma.sync need sm_80 or later");
  if constexpr (kTranspose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row));
  }
#elif defined(SIMT_EMULATOR)
  simt::ldmatrix_x4(r, row, kTranspose);
#else
  (void)r;
  (void)row;
#endif
}

// ldmatrix_x4 at each of rows[0 .. kCount): r[l] from rows[l]. On a GPU kCount instructions;
// under the SIMT emulator one warp collective for all (one each, the lanes' switches at every
// collective were most of an emulated training step).
template <bool kTranspose, int kCount>
__device__ __forceinline__ void ldmatrix_x4_each(uint32_t (&r)[kCount][4],
                                                 const SharedAddress (&rows)[kCount]) {
#if defined(SIMT_EMULATOR) && !defined(__CUDA_ARCH__)
  simt::ldmatrix_x4_batch(r, rows, kTranspose);
#else
#pragma unroll
  for (int l = 0; l < kCount; ++l)
    ldmatrix_x4<kTranspose>(r[l], rows[l]);
#endif
}

// d = a b + d: A 16 x 16 bf16 (a: 4 registers of 2), B 16 x 8 bf16 (b: 2), D 16 x 8 fp32.
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4],
                                                  const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__)
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(SIMT_EMULATOR)
  simt::mma_m16n8k16_bf16(d, a, b, d);
#else
  (void)d;
  (void)a;
  (void)b;
#endif
}

// d = a b + d: A 16 x 8 tf32 (a: 4 registers), B 8 x 8 tf32 (b: 2), D 16 x 8 fp32. The
// registers' low 13 bits are ignored: to_tf32 rounds them away first.
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4],
                                                 const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__)
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(SIMT_EMULATOR)
  simt::mma_m16n8k8_tf32(d, a, b, d);
#else
  (void)d;
  (void)a;
  (void)b;
#endif
}

// d[i][j] = a[i] b[j] + d[i][j] for every i < kTilesA, then j < kTilesB: a warp tile's products
// of one K step, an mma.sync each on a GPU, one warp collective under the SIMT emulator (the
// same values; see ldmatrix_x4_each).
template <int kTilesA, int kTilesB>
__device__ __forceinline__ void mma_m16n8k16_bf16_tile(float (&d)[kTilesA][kTilesB][4],
                                                       const uint32_t (&a)[kTilesA][4],
                                                       const uint32_t (&b)[kTilesB][2]) {
#if defined(SIMT_EMULATOR) && !defined(__CUDA_ARCH__)
  simt::mma_m16n8k16_bf16_batch(d, a, b);
#else
#pragma unroll
  for (int i = 0; i < kTilesA; ++i) {
#pragma unroll
    for (int j = 0; j < kTilesB; ++j)
      mma_m16n8k16_bf16(d[i][j], a[i], b[j]);
  }
#endif
}

template <int kTilesA, int kTilesB>
__device__ __forceinline__ void mma_m16n8k8_tf32_tile(float (&d)[kTilesA][kTilesB][4],
                                                      const uint32_t (&a)[kTilesA][4],
                                                      const uint32_t (&b)[kTilesB][2]) {
#if defined(SIMT_EMULATOR) && !defined(__CUDA_ARCH__)
  simt::mma_m16n8k8_tf32_batch(d, a, b);
#else
#pragma unroll
  for (int i = 0; i < kTilesA; ++i) {
#pragma unroll
    for (int j = 0; j < kTilesB; ++j)
      mma_m16n8k8_tf32(d[i][j], a[i], b[j]);
  }
#endif
}

// The fp32 bits of `bits` rounded to tf32 (nearest, ties away from zero), as mma takes them.
__device__ __forceinline__ uint32_t to_tf32(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  uint32_t rounded;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(rounded) : "f"(__uint_as_float(bits)));
  return rounded;
#elif defined(SIMT_EMULATOR)
  return simt::cvt_rna_tf32(std::bit_cast<float>(bits));
#else
  return bits;
#endif
}

// 32 bits from shared memory. volatile, as ldmatrix: never moved across the barriers that
// order the tile's writes before it.
__device__ __forceinline__ uint32_t load_shared_b32(SharedAddress address) {
#if defined(__CUDA_ARCH__)
  uint32_t value;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(value) : "r"(address));
  return value;
#else
  uint32_t value;
  std::memcpy(&value, address, sizeof value);
  return value;
#endif
}

}  // namespace engine::cuda
