// The CPU's bf16 GEMM: bf16 operands, products summed in fp32, on AVX512_BF16 (vdpbf16ps) or
// Intel AMX tiles (tdpbf16ps), chosen at run time (kernels/cpu/isa.h: bf16_products()).
//
// Both instructions multiply pairs of bf16 along K and add them into fp32, so B is packed
// once into "pair rows": for each 32-column panel and each pair of K rows (2q, 2q + 1), the
// 32 columns' two values side by side (the VNNI layout AMX's B tiles need, and two zmm
// registers of vdpbf16ps operands). A is read in place, rows contiguous along K. A bf16
// product is exact in fp32, so the only error against the exact sum is the fp32
// accumulation's, as with the widened fp32 GEMM (the instructions flush denormals to zero).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/bfloat16.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/scratch.h"
#include "kernels/cpu/sgemm_avx512.h"

namespace engine::cpu {

// Columns of a packed B's panel (and of the blocks of C the kernels compute).
constexpr int64_t kBf16PanelColumns = 32;

// A B [k x n] packed into 32-column panels of pair rows (not owned): panel j's pair row q is
// the 64 values at data + (j * pair_rows() + q) * 64, k rounded up to even with a zero row,
// columns beyond n zero.
struct PairPanels {
  const uint16_t* data = nullptr;
  int64_t n = 0, k = 0;
  int64_t pair_rows() const { return (k + 1) / 2; }
  // Panels [first, first + count) as a B of their own (n clipped to them).
  PairPanels panels(int64_t first, int64_t count) const;
};

// Values (uint16) that B [k x n] takes packed.
int64_t pair_panels_values(int64_t n, int64_t k);

// The rows of B a product reads, in groups of `rows` (even, so that a pair row lies in one
// group): group g is B's rows [g * rows, (g + 1) * rows), read where (*read)[g]; every row
// when `read` is null. A convolution's filters in groups of a tap's rows: on the small maps
// of 32 px training most taps read only padding (TapClassPlan::taps_read; 8 of 9 on a 1x1
// map), and packing them was most of layer4's forward at 32 px.
struct RowGroups {
  int64_t rows = 0;
  const std::vector<bool>* read = nullptr;
  // Whether pair row q (B's rows 2q, 2q + 1) is read.
  bool pair_row_read(int64_t q) const {
    return read == nullptr || (*read)[static_cast<size_t>(2 * q / rows)];
  }
};

// Packs panels [panel_begin, panel_end) of B given row by row into `out` (all of B's layout):
// row p is the n contiguous values at rows[p], or zeros where rows[p] is null; only the pair
// rows of `packed_rows`. On the calling thread.
void pack_pair_panels(int64_t n, const std::vector<const bf16*>& rows, int64_t panel_begin,
                      int64_t panel_end, uint16_t* out, const RowGroups& packed_rows = {});

// B [k x n] packed (PairPanels) in storage of its own: the constructing thread's kept scratch.
// Only the pair rows of `packed_rows` are packed; the others hold whatever the scratch held,
// so a product over it must read no other rows.
class PackedPairsB {
 public:
  // Element (p, j) of B is b[p * b_k_stride + j * b_col_stride].
  PackedPairsB(int64_t n, int64_t k, const bf16* b, int64_t b_k_stride, int64_t b_col_stride,
               RowGroups packed_rows = {});
  // B given row by row: row p is the n contiguous values at rows[p] (k = rows.size()), zeros
  // where it is null.
  PackedPairsB(int64_t n, const std::vector<const bf16*>& rows, RowGroups packed_rows = {});
  PackedPairsB(const PackedPairsB&) = delete;
  PackedPairsB& operator=(const PackedPairsB&) = delete;
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  PairPanels panels() const { return {reinterpret_cast<const uint16_t*>(storage_.data()), n_, k_}; }

 private:
  int64_t n_, k_;
  ScratchFloats storage_;
};

// Where a bf16 GEMM writes row i of C: at c + c_rows[i] (elements) when c_rows is set, else at
// c + i * ldc; bf16 (rounded to nearest even, as bf16(float)) or fp32 (plus beta * C). bias,
// when set, is added to every row before rounding.
struct Bf16GemmOutput {
  void* c = nullptr;
  bool c_is_bf16 = false;
  int64_t ldc = 0;
  const int64_t* c_rows = nullptr;
  float beta = 0.f;  // fp32 C only
  const float* bias = nullptr;
};

// Whether a product over these runs can take the bf16 kernels: every run starts at an even
// row of B and has an even length (a pair never straddles two runs).
bool bf16_runs_are_paired(const std::vector<DepthRun>& runs);

// C = A * B over `runs` (A's columns [a_begin, a_begin + length) times B's rows [b_begin, ...),
// summed over the runs) on the calling thread, A's row i at a + i * lda, with `way` (not
// kWidened). Requires bf16_runs_are_paired(runs).
void bf16_gemm_packed_runs(Bf16Products way, int64_t m, const bf16* a, int64_t lda,
                           const PairPanels& b, const std::vector<DepthRun>& runs,
                           const Bf16GemmOutput& out);
inline void bf16_gemm_packed_runs(Bf16Products way, int64_t m, const bf16* a, int64_t lda,
                                  const PackedPairsB& b, const std::vector<DepthRun>& runs,
                                  const Bf16GemmOutput& out) {
  bf16_gemm_packed_runs(way, m, a, lda, b.panels(), runs, out);
}

// C [m x n] = A [m x k] * B [k x n] on the OpenMP threads, A's row i at a + i * lda, B's
// element (p, j) at b[p * b_k_stride + j * b_col_stride]; k even. Each element of C is
// summed in the same order whatever the thread count.
void bf16_gemm(Bf16Products way, int64_t m, int64_t n, int64_t k, const bf16* a, int64_t lda,
               const bf16* b, int64_t b_k_stride, int64_t b_col_stride, const Bf16GemmOutput& out);

}  // namespace engine::cpu
