// The engine's own AVX-512 single-precision GEMM, used on CPUs that have AVX-512F.
//
// Convolution GEMMs are skinny (N = 64..512 output channels, M = tens of thousands of
// pixels), a shape general BLAS kernels are not tuned for. Here B is packed once into
// 32-column panels and a 12 x 32 register tile (24 zmm accumulators) streams A in place, so
// every load of A feeds 32 columns. bench_kernels compares it with OpenBLAS and PyTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "kernels/cpu/depth_run.h"
#include "kernels/cpu/scratch.h"

namespace engine::cpu {

// C[m x n] = op(A) * op(B) + beta * C (row-major), where element (i, p) of op(A) is
// a[i * a_row_stride + p * a_k_stride] and element (p, j) of op(B) is
// b[p * b_k_stride + j * b_col_stride]. Parallel over OpenMP threads when not already inside a
// parallel region. Requires cpu_has_avx512() (kernels/cpu/isa.h).
// B [k x n] packed once into the kernel's 32-column panels, for several products that share
// it: a convolution's filters against each chunk of its column matrix.
// Its storage is the constructing thread's kept scratch (kernels/cpu/scratch.h): a fresh
// ~10 MB allocation per call (ResNet's layer4 filters) would fault its pages in every time.
class PackedB {
 public:
  PackedB(int64_t n, int64_t k, const float* b, int64_t b_k_stride, int64_t b_col_stride);
  // B given row by row: row p is the n contiguous floats at rows[p] (k = rows.size()). For
  // operands that are a permutation of another's rows, such as flipped conv filters.
  PackedB(int64_t n, const std::vector<const float*>& rows);
  PackedB(const PackedB&) = delete;
  PackedB& operator=(const PackedB&) = delete;
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  const float* data() const { return storage_.data(); }

 private:
  int64_t n_, k_;
  ScratchFloats storage_;
};

// C[m x b.n()] = op(A) * B + beta * C on the calling thread (the caller splits the work).
void sgemm_avx512_packed(int64_t m, const float* a, int64_t a_row_stride, int64_t a_k_stride,
                         const PackedB& b, float beta, float* c, int64_t ldc);

// How the GEMM reads A. kAuto: in place, except a transposed A whose columns span more than
// L2, which is packed per K pass (and a last tile of fewer than 12 rows, always packed).
// kPacked: every tile packed per K pass, for a transposed A that is not already in L2 and
// feeds several B panels, such as the input read straight by the direct filter gradient.
enum class APacking { kAuto, kPacked };

// C = op(A) * B + beta * C over `runs` on the calling thread, op(A) as above; row i of C is
// the b.n() floats at c + c_rows[i], or at c + i * ldc when c_rows is null. Rows of C from
// anywhere, such as a convolution's output pixels whose taps inside the image are the same,
// and a product over some of B's rows, such as the pixels a filter tap reads inside the image.
// The K passes are those of the product over all of B (see passes_of in the .cpp), so the
// result has the same bits as that product with the left-out terms zero.
void sgemm_avx512_packed_runs(int64_t m, const float* a, int64_t a_row_stride, int64_t a_k_stride,
                              const PackedB& b, const std::vector<DepthRun>& runs, float beta,
                              float* c, int64_t ldc, const int64_t* c_rows,
                              APacking a_packing = APacking::kAuto);

void sgemm_avx512(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row_stride,
                  int64_t a_k_stride, const float* b, int64_t b_k_stride, int64_t b_col_stride,
                  float beta, float* c, int64_t ldc);

}  // namespace engine::cpu
