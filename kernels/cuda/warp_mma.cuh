// Warp-level tensor-core instructions that WMMA hides: ldmatrix (four 8x8 bf16 matrices from
// shared memory into each lane's fragment registers, one instruction instead of WMMA's four
// generic loads per fragment) and mma.sync m16n8k16 (bf16 in, fp32 accumulate), whose
// fragment layouts are fixed by PTX (kernels/simt/warp_matrix.h lists them). Under nvcc they
// are the PTX instructions (sm_80 and later); under the SIMT emulator, its emulations.
#pragma once

#include <cstdint>

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

}  // namespace engine::cuda
