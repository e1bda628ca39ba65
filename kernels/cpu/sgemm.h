// Single-precision GEMM on the CPU, row-major:
//   C[m x n] = alpha * op(A) * op(B) + beta * C,  op(A) is m x k, op(B) is k x n.
// The engine's AVX-512 kernel (sgemm_avx512.h) when the CPU has it and alpha is 1; else
// OpenBLAS when the build found it; otherwise a cache-blocked OpenMP loop nest.
#pragma once

#include <cstdint>

namespace engine::cpu {

void sgemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc);

}  // namespace engine::cpu
