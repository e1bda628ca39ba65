// The engine's own AVX-512 single-precision GEMM, used on CPUs that have AVX-512F.
//
// Convolution GEMMs are skinny (N = 64..512 output channels, M = tens of thousands of
// pixels), a shape where OpenBLAS 0.3.21 reached about half of this machine's peak. Here B is
// packed once into 32-column panels and a 12 x 32 register tile (24 zmm accumulators) streams
// A in place: measured single-threaded on the development machine, 1.5-2.0x OpenBLAS on the
// ResNet conv shapes (171-250 GFLOP/s against 93-130).
#pragma once

#include <cstdint>

namespace engine::cpu {

// C[m x n] = op(A) * op(B) + beta * C (row-major), where element (i, p) of op(A) is
// a[i * a_row_stride + p * a_k_stride] and element (p, j) of op(B) is
// b[p * b_k_stride + j * b_col_stride]. Parallel over OpenMP threads when not already inside a
// parallel region. Requires cpu_has_avx512() (kernels/cpu/isa.h).
void sgemm_avx512(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row_stride,
                  int64_t a_k_stride, const float* b, int64_t b_k_stride, int64_t b_col_stride,
                  float beta, float* c, int64_t ldc);

}  // namespace engine::cpu
