#include "kernels/cpu/sgemm.h"

#include "kernels/cpu/isa.h"
#include "kernels/cpu/sgemm_avx512.h"

#include <algorithm>
#include <bit>
#include <vector>

#if ENGINE_HAVE_OPENBLAS
#include <cblas.h>
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace engine::cpu {

namespace {

// The fallback: op(A) and op(B) packed into contiguous row-major panels, then an i-k-j loop
// over 64-row blocks that the compiler vectorizes along j.
[[maybe_unused]] void sgemm_blocked(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                                    int64_t k, float alpha, const float* a, int64_t lda,
                                    const float* b, int64_t ldb, float beta, float* c,
                                    int64_t ldc) {
  std::vector<float> packed_b(static_cast<size_t>(k * n));
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t j = 0; j < n; ++j) {
      packed_b[kk * n + j] = transpose_b ? b[j * ldb + kk] : b[kk * ldb + j];
    }
  }
  constexpr int64_t kRowBlock = 64;
#pragma omp parallel for schedule(dynamic)
  for (int64_t row_block = 0; row_block < m; row_block += kRowBlock) {
    std::vector<float> accumulator(static_cast<size_t>(n));
    const int64_t row_end = std::min(m, row_block + kRowBlock);
    for (int64_t i = row_block; i < row_end; ++i) {
      std::fill(accumulator.begin(), accumulator.end(), 0.f);
      for (int64_t kk = 0; kk < k; ++kk) {
        const float a_ik = transpose_a ? a[kk * lda + i] : a[i * lda + kk];
        const float* b_row = packed_b.data() + kk * n;
        for (int64_t j = 0; j < n; ++j)
          accumulator[j] += a_ik * b_row[j];
      }
      float* c_row = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) {
        c_row[j] = alpha * accumulator[j] + (beta == 0.f ? 0.f : beta * c_row[j]);
      }
    }
  }
}

}  // namespace

#if ENGINE_HAVE_OPENBLAS
namespace {
// One OpenBLAS call on the calling thread. OpenBLAS's own pthread pool is switched off: its
// threads and OpenMP's spinning workers oversubscribe the cores (each GEMM then waits for a
// scheduler tick), so the engine splits GEMMs across OpenMP threads itself and each thread
// calls a single-threaded OpenBLAS.
void openblas_sgemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                    float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float beta, float* c, int64_t ldc) {
  static const bool single_threaded = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)single_threaded;
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}
}  // namespace
#endif

void sgemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // C = beta * C; BLAS does the same, but keep it explicit (beta == 0 must clear NaNs).
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    }
    return;
  }
  if (alpha == 1.f && use_avx512()) {
    sgemm_avx512(m, n, k, a, transpose_a ? 1 : lda, transpose_a ? lda : 1, b, transpose_b ? 1 : ldb,
                 transpose_b ? ldb : 1, beta, c, ldc);
    return;
  }
#if ENGINE_HAVE_OPENBLAS
  // Split the longer of M and N into slices of whole 16-element panels, one OpenBLAS call
  // each. The slicing follows the shape alone, never the thread count or the calling context:
  // OpenBLAS picks its kernels (and so its summation order) by the call's shape, so an
  // element's bits would otherwise change with the threads (the filter gradient differed on 1,
  // 2 and 3 threads, and 1 rank x 2 threads parted from 2 ranks x 1 thread). A power of two
  // of equal slices: one per kSliceExtent rows or columns, rounded down, two at least (so two
  // threads share any product worth splitting, the stem's filter gradient with its 147 rows
  // included) and kMaxSlices at most: 2, 4, 8 or 16 threads get equal shares. Each slice
  // packs the other operand again (the filter gradient's dY chunk, the largest), so the
  // count stays low: finer slices slowed the step (docs/kernel-tuning.md).
  constexpr int64_t kMaxSlices = 16, kSliceExtent = 1024;
  const bool split_rows = m >= n;
  const int64_t extent = split_rows ? m : n;
  const bool worth_splitting = m * n * k >= (int64_t{1} << 18);
  const int64_t wanted = worth_splitting ? std::bit_floor(static_cast<uint64_t>(std::clamp<int64_t>(
                                               extent / kSliceExtent, 2, kMaxSlices)))
                                         : 1;
  const int64_t slice = ((extent + wanted - 1) / wanted + 15) / 16 * 16;
  const int64_t slices = (extent + slice - 1) / slice;
  [[maybe_unused]] bool parallel = false;  // read only under OpenMP
#if defined(_OPENMP)
  parallel = slices > 1 && !omp_in_parallel() && omp_get_max_threads() > 1;
#endif
#pragma omp parallel for schedule(static, 1) if (parallel)
  for (int64_t s = 0; s < slices; ++s) {
    const int64_t begin = s * slice;
    const int64_t end = std::min(extent, begin + slice);
    if (split_rows) {
      const float* a_slice = transpose_a ? a + begin : a + begin * lda;
      openblas_sgemm(transpose_a, transpose_b, end - begin, n, k, alpha, a_slice, lda, b, ldb, beta,
                     c + begin * ldc, ldc);
    } else {
      const float* b_slice = transpose_b ? b + begin * ldb : b + begin;
      openblas_sgemm(transpose_a, transpose_b, m, end - begin, k, alpha, a, lda, b_slice, ldb, beta,
                     c + begin, ldc);
    }
  }
#else
  sgemm_blocked(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

}  // namespace engine::cpu
