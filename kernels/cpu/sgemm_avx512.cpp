#include "kernels/cpu/sgemm_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/transpose_avx512.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace engine::cpu {

// In four rounds of two-source permutes: pairs of rows interleaved, then pairs of pairs, then
// 128-bit lanes twice. (vpermt2ps throughout: GCC 12's unpack and shuffle intrinsics pass an
// undefined operand that it then reports as uninitialized.)
__attribute__((target("avx512f"))) void transpose_16x16(const float* src, int64_t src_stride,
                                                        float* dst, int64_t dst_stride) {
  // Indices into the 32 floats of (a, b): b's are 16 + i.
  alignas(64) static constexpr int32_t kPairLow[16] = {0, 16, 1, 17, 4,  20, 5,  21,
                                                       8, 24, 9, 25, 12, 28, 13, 29};
  alignas(64) static constexpr int32_t kPairHigh[16] = {2,  18, 3,  19, 6,  22, 7,  23,
                                                        10, 26, 11, 27, 14, 30, 15, 31};
  alignas(64) static constexpr int32_t kQuadLow[16] = {0, 1, 16, 17, 4,  5,  20, 21,
                                                       8, 9, 24, 25, 12, 13, 28, 29};
  alignas(64) static constexpr int32_t kQuadHigh[16] = {2,  3,  18, 19, 6,  7,  22, 23,
                                                        10, 11, 26, 27, 14, 15, 30, 31};
  alignas(64) static constexpr int32_t kLanes01[16] = {0,  1,  2,  3,  4,  5,  6,  7,
                                                       16, 17, 18, 19, 20, 21, 22, 23};
  alignas(64) static constexpr int32_t kLanes23[16] = {8,  9,  10, 11, 12, 13, 14, 15,
                                                       24, 25, 26, 27, 28, 29, 30, 31};
  alignas(64) static constexpr int32_t kLanes02[16] = {0,  1,  2,  3,  8,  9,  10, 11,
                                                       16, 17, 18, 19, 24, 25, 26, 27};
  alignas(64) static constexpr int32_t kLanes13[16] = {4,  5,  6,  7,  12, 13, 14, 15,
                                                       20, 21, 22, 23, 28, 29, 30, 31};
  const __m512i pair_low = _mm512_load_si512(kPairLow), pair_high = _mm512_load_si512(kPairHigh);
  const __m512i quad_low = _mm512_load_si512(kQuadLow), quad_high = _mm512_load_si512(kQuadHigh);
  const __m512i lanes01 = _mm512_load_si512(kLanes01), lanes23 = _mm512_load_si512(kLanes23);
  const __m512i lanes02 = _mm512_load_si512(kLanes02), lanes13 = _mm512_load_si512(kLanes13);
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = _mm512_loadu_ps(src + i * src_stride);
  // Per 128-bit lane: t[2g] = rows 2g, 2g+1 interleaved at elements 0, 1; t[2g+1] at 2, 3.
  for (int g = 0; g < 8; ++g) {
    t[2 * g] = _mm512_permutex2var_ps(r[2 * g], pair_low, r[2 * g + 1]);
    t[2 * g + 1] = _mm512_permutex2var_ps(r[2 * g], pair_high, r[2 * g + 1]);
  }
  // Per lane L: r[4h + q] = element 4L + q of rows 4h .. 4h + 3.
  for (int h = 0; h < 4; ++h) {
    r[4 * h + 0] = _mm512_permutex2var_ps(t[4 * h], quad_low, t[4 * h + 2]);
    r[4 * h + 1] = _mm512_permutex2var_ps(t[4 * h], quad_high, t[4 * h + 2]);
    r[4 * h + 2] = _mm512_permutex2var_ps(t[4 * h + 1], quad_low, t[4 * h + 3]);
    r[4 * h + 3] = _mm512_permutex2var_ps(t[4 * h + 1], quad_high, t[4 * h + 3]);
  }
  // Output row 4L + q gathers lane L of r[q], r[4 + q], r[8 + q], r[12 + q].
  for (int q = 0; q < 4; ++q) {
    const __m512 low01 = _mm512_permutex2var_ps(r[q], lanes01, r[4 + q]);
    const __m512 high01 = _mm512_permutex2var_ps(r[q], lanes23, r[4 + q]);
    const __m512 low23 = _mm512_permutex2var_ps(r[8 + q], lanes01, r[12 + q]);
    const __m512 high23 = _mm512_permutex2var_ps(r[8 + q], lanes23, r[12 + q]);
    _mm512_storeu_ps(dst + (0 + q) * dst_stride, _mm512_permutex2var_ps(low01, lanes02, low23));
    _mm512_storeu_ps(dst + (4 + q) * dst_stride, _mm512_permutex2var_ps(low01, lanes13, low23));
    _mm512_storeu_ps(dst + (8 + q) * dst_stride, _mm512_permutex2var_ps(high01, lanes02, high23));
    _mm512_storeu_ps(dst + (12 + q) * dst_stride, _mm512_permutex2var_ps(high01, lanes13, high23));
  }
}

namespace {

constexpr int kTileRows = 12;  // MR: rows of C per register tile
constexpr int kTileCols = 32;  // NR: two zmm registers of C per row
// KC: the deepest K pass; one B panel slice (KC x 32 floats, 48 KiB) is reused from L1/L2 by
// every row tile of a block.
constexpr int64_t kMaxDepth = 384;
// MC: rows per block; the block's slice of A (MC x KC floats, 360 KiB) stays in the 1 MiB L2
// while every B panel passes over it.
constexpr int64_t kBlockRows = 240;
// An operand of more floats than this (1 MiB, the L2 of the smallest core we run on) is
// taken to come from L3: a transposed A that large is packed, and a B that large is
// prefetched a panel ahead (see compute_block).
constexpr int64_t kL2ResidentFloats = int64_t{1} << 18;
// Row tiles a block needs before the next B panel slice is prefetched while it is computed.
constexpr int64_t kMinTilesToPrefetch = 12;

int64_t panel_count(int64_t n) {
  return (n + kTileCols - 1) / kTileCols;
}

// Calls pack(panel) for every panel of B, in parallel unless already inside a parallel region.
template <typename PackPanel>
void for_each_panel(int64_t n, PackPanel&& pack) {
  parallel_for_unless_nested(panel_count(n), pack);
}

// Panel `panel` of B (rows p = 0..k-1 of 32 consecutive floats, zero beyond n) from B's rows:
// row p starts at row_at(p), its columns col_stride apart.
template <typename RowAt>
void pack_panel_rows(int64_t panel, int64_t n, int64_t k, RowAt&& row_at, int64_t col_stride,
                     float* packed) {
  float* out = packed + panel * k * kTileCols;
  const int64_t j0 = panel * kTileCols;
  const int64_t cols = std::min<int64_t>(kTileCols, n - j0);
  for (int64_t p = 0; p < k; ++p) {
    const float* row = row_at(p) + j0 * col_stride;
    if (col_stride == 1) {
      // Row-major B (a dY chunk, flipped filter rows): one copy per row. The strided loop
      // below stays scalar, too slow for the stem's filter gradient (docs/kernel-tuning.md).
      std::memcpy(out + p * kTileCols, row, static_cast<size_t>(cols) * sizeof(float));
    } else {
      for (int64_t j = 0; j < cols; ++j)
        out[p * kTileCols + j] = row[j * col_stride];
    }
    for (int64_t j = cols; j < kTileCols; ++j)
      out[p * kTileCols + j] = 0.f;
  }
}

// B as panels of kTileCols columns: panel j holds rows p = 0..k-1 of 32 consecutive floats,
// zero beyond n.
void pack_b(int64_t n, int64_t k, const float* b, int64_t b_k_stride, int64_t b_col_stride,
            float* packed) {
  for_each_panel(n, [&](int64_t panel) {
    const int64_t j0 = panel * kTileCols;
    if (b_k_stride == 1 && n - j0 >= kTileCols) {
      // Columns of B are contiguous (B transposed: conv filters as [K x taps*C]). 16 x 16
      // blocks transposed in registers: 16 columns' next 16 k (a cache line each) become 16
      // panel rows. Scalar copies, even blocked, ran the layer4 filters' pack at 0.5 ms.
      float* out = packed + panel * k * kTileCols;
      int64_t p0 = 0;
      for (; p0 + 16 <= k; p0 += 16) {
        for (int64_t half = 0; half < kTileCols; half += 16) {
          transpose_16x16(b + p0 + (j0 + half) * b_col_stride, b_col_stride,
                          out + p0 * kTileCols + half, kTileCols);
        }
      }
      for (int64_t p = p0; p < k; ++p) {
        for (int64_t j = 0; j < kTileCols; ++j)
          out[p * kTileCols + j] = b[p + (j0 + j) * b_col_stride];
      }
      return;
    }
    pack_panel_rows(
        panel, n, k, [&](int64_t p) { return b + p * b_k_stride; }, b_col_stride, packed);
  });
}

// One 12 x 32 tile of C over one K pass: c (+)= the sum over the pass's segments of
// A's columns [a_begin, a_begin + length) times B's panel rows [b_begin, ...), accumulated
// in one register tile before the single store; row i of the tile at c + c_rows[i], or at
// c + i * ldc without a table. Rows beyond `rows` and columns outside the masks are computed
// on zero padding but never stored.
__attribute__((target("avx512f"))) void tile_kernel(const std::vector<DepthRun>& segments,
                                                    const float* a, int64_t a_row_stride,
                                                    int64_t a_k_stride, const float* b_panel,
                                                    float* c, const int64_t* c_rows, int64_t ldc,
                                                    float beta, int rows, __mmask16 mask_low,
                                                    __mmask16 mask_high) {
  __m512 acc[kTileRows][2];
  for (int i = 0; i < kTileRows; ++i)
    acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (const DepthRun& segment : segments) {
    const float* a_segment = a + segment.a_begin * a_k_stride;
    const float* b_segment = b_panel + segment.b_begin * kTileCols;
    for (int64_t p = 0; p < segment.length; ++p) {
      const __m512 b_low = _mm512_load_ps(b_segment + p * kTileCols);
      const __m512 b_high = _mm512_load_ps(b_segment + p * kTileCols + 16);
      const float* a_column = a_segment + p * a_k_stride;
#pragma GCC unroll 12
      for (int i = 0; i < kTileRows; ++i) {
        const __m512 a_value = _mm512_set1_ps(a_column[i * a_row_stride]);
        acc[i][0] = _mm512_fmadd_ps(a_value, b_low, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(a_value, b_high, acc[i][1]);
      }
    }
  }
  const __m512 beta_vector = _mm512_set1_ps(beta);
  for (int i = 0; i < rows; ++i) {
    float* row = c + (c_rows != nullptr ? c_rows[i] : i * ldc);
    __m512 low = acc[i][0], high = acc[i][1];
    if (beta != 0.f) {
      low = _mm512_fmadd_ps(beta_vector, _mm512_maskz_loadu_ps(mask_low, row), low);
      high = _mm512_fmadd_ps(beta_vector, _mm512_maskz_loadu_ps(mask_high, row + 16), high);
    }
    _mm512_mask_storeu_ps(row, mask_low, low);
    _mm512_mask_storeu_ps(row + 16, mask_high, high);
  }
}

__mmask16 column_mask(int64_t cols) {
  if (cols >= 16) return 0xFFFF;
  return cols <= 0 ? 0 : static_cast<__mmask16>((1u << cols) - 1);
}

// Rows [0, rows) of one 12-row tile of A over a depth slice, copied depth-major
// (out[p * 12 + i] = A(i, p)) and zero beyond `rows`.
__attribute__((target("avx512f"))) void pack_a_tile(const float* a, int64_t a_row_stride,
                                                    int64_t a_k_stride, int rows, int64_t depth,
                                                    float* out) {
  if (a_row_stride == 1) {
    // A transposed (columns contiguous): each depth step is one 12-float copy.
    const __mmask16 valid = static_cast<__mmask16>((1u << rows) - 1);
    for (int64_t p = 0; p < depth; ++p) {
      _mm512_mask_storeu_ps(out + p * kTileRows, 0x0FFF,
                            _mm512_maskz_loadu_ps(valid, a + p * a_k_stride));
    }
    return;
  }
  for (int64_t p = 0; p < depth; ++p) {
    for (int i = 0; i < kTileRows; ++i)
      out[p * kTileRows + i] = i < rows ? a[i * a_row_stride + p * a_k_stride] : 0.f;
  }
}

// The operands of one product: A's element (i, p) at a[i * a_row_stride + p * a_k_stride];
// B packed, n columns and k rows deep; the runs of A's depth and the B rows each multiplies;
// row i of C at c + c_rows[i], or at c + i * ldc without a table.
struct Operands {
  const float* a;
  int64_t a_row_stride, a_k_stride;
  const float* packed_b;
  int64_t n, k;
  const std::vector<DepthRun>& runs;
  float* c;
  int64_t ldc;
  const int64_t* c_rows;
  APacking a_packing = APacking::kAuto;
};

// One K pass: the runs' pieces inside one window of B's rows, in A's columns (in_place) and
// as they are laid out when the pass's columns of A are packed (packed: a_begin counts from
// 0); `depth` columns in all, B's rows [b_begin, b_end) spanned.
struct Pass {
  std::vector<DepthRun> in_place, packed;
  int64_t depth = 0, b_begin = 0, b_end = 0;
};

// The passes cut B's k rows into equal windows of at most kMaxDepth (a short last pass would
// reload and store C for little work), whatever the runs: a product over some of B's rows
// then sums exactly the products a full one would, in the same order, only without those
// of the rows left out, which are zero in a convolution's padding. So skipping the padding
// taps changes no bit of any result.
std::vector<Pass> passes_of(const std::vector<DepthRun>& runs, int64_t k) {
  const int64_t count = (k + kMaxDepth - 1) / kMaxDepth;
  const int64_t window = (k + count - 1) / std::max<int64_t>(count, 1);
  std::vector<Pass> passes;
  for (int64_t w0 = 0; w0 < k; w0 += window) {
    const int64_t w1 = std::min(k, w0 + window);
    Pass pass;
    for (const DepthRun& run : runs) {
      const int64_t begin = std::max(w0, run.b_begin), end = std::min(w1, run.b_begin + run.length);
      if (begin >= end) continue;
      const int64_t a_begin = run.a_begin + begin - run.b_begin;
      if (pass.in_place.empty()) pass.b_begin = begin;
      pass.in_place.push_back({a_begin, begin, end - begin});
      pass.packed.push_back({pass.depth, begin, end - begin});
      pass.depth += end - begin;
      pass.b_end = end;
    }
    if (pass.depth > 0) passes.push_back(std::move(pass));
  }
  // No B row at all: one empty pass still stores beta * C (zeros for beta 0).
  if (passes.empty()) passes.emplace_back();
  return passes;
}

// Rows [row_begin, row_end) x panels [panel_begin, panel_end) of C, blocked as in GotoBLAS:
// for each block of rows and each K pass, every B panel slice is reused by all the block's
// row tiles while it sits in L1/L2, instead of a whole-depth B panel streaming from L3 once
// per row tile, which is what bounds the deep GEMMs (filter gradients, layer4).
// A is read in place when its rows are contiguous along K (a forward pass's column matrix):
// with N = 64-128 each row is used by only a few panels, too few to repay a copy. A
// transposed A (a filter gradient's column matrix) that is too large to be in L2
// (kL2ResidentFloats) is packed per pass: read in place, each depth step of a tile is a
// cache line from L3 for 12 floats; an L2-resident one (the grouped filter gradient's
// chunks) is read in place, where packing only costs (docs/kernel-tuning.md: the figures). A last
// tile of fewer than 12 rows is always packed, zero-padded, so the kernel can read 12 rows.
void compute_block(const Operands& op, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                   int64_t panel_end, float beta) {
  const std::vector<Pass> passes = passes_of(op.runs, op.k);
  int64_t max_depth = 0, a_depth = 0;
  for (const Pass& pass : passes) {
    max_depth = std::max(max_depth, pass.depth);
    for (const DepthRun& segment : pass.in_place)
      a_depth = std::max(a_depth, segment.a_begin + segment.length);
  }
  // The span of memory a transposed A's columns cover, whatever share of its rows this is.
  const bool pack_every_tile = op.a_packing == APacking::kPacked ||
                               (op.a_k_stride != 1 && a_depth * op.a_k_stride > kL2ResidentFloats);
  const bool prefetch_b = panel_count(op.n) * op.k * kTileCols > kL2ResidentFloats;
  const ScratchFloats packed_a((pack_every_tile ? kBlockRows : kTileRows) * max_depth);
  for (int64_t block = row_begin; block < row_end; block += kBlockRows) {
    const int64_t block_end = std::min(row_end, block + kBlockRows);
    const int64_t tiles = (block_end - block + kTileRows - 1) / kTileRows;
    const int64_t first_packed = pack_every_tile ? 0 : (block_end - block) / kTileRows;
    const auto tile_rows = [&](int64_t tile) {
      return static_cast<int>(std::min<int64_t>(kTileRows, block_end - block - tile * kTileRows));
    };
    for (const Pass& pass : passes) {
      const float pass_beta = &pass == passes.data() ? beta : 1.f;
      for (int64_t tile = first_packed; tile < tiles; ++tile) {
        float* out = packed_a.data() + (tile - first_packed) * pass.depth * kTileRows;
        const float* a_tile = op.a + (block + tile * kTileRows) * op.a_row_stride;
        for (size_t i = 0; i < pass.in_place.size(); ++i) {
          pack_a_tile(a_tile + pass.in_place[i].a_begin * op.a_k_stride, op.a_row_stride,
                      op.a_k_stride, tile_rows(tile), pass.in_place[i].length,
                      out + pass.packed[i].a_begin * kTileRows);
        }
      }
      for (int64_t panel = panel_begin; panel < panel_end; ++panel) {
        const int64_t j0 = panel * kTileCols;
        const __mmask16 mask_low = column_mask(op.n - j0), mask_high = column_mask(op.n - j0 - 16);
        const float* b_panel = op.packed_b + panel * op.k * kTileCols;
        // A B from L3 (9 MiB for layer4's filters) has its next panel's slice prefetched into
        // L2, a share before each tile, while this one is in use: a slice's 12 pages each
        // restart the hardware prefetcher. It pays on a deep GEMM's full blocks only: with a
        // few tiles its bursts crowd out the kernel's own loads, and a B in L2 needs none
        // (docs/kernel-tuning.md).
        const char* next_slice =
            reinterpret_cast<const char*>(b_panel + (op.k + pass.b_begin) * kTileCols);
        const bool prefetch = prefetch_b && panel + 1 < panel_end && tiles >= kMinTilesToPrefetch;
        const int64_t next_lines = prefetch ? (pass.b_end - pass.b_begin) * kTileCols / 16 : 0;
        const int64_t lines_per_tile = (next_lines + tiles - 1) / tiles;
        for (int64_t tile = 0; tile < tiles; ++tile) {
          for (int64_t line = tile * lines_per_tile;
               line < std::min(next_lines, (tile + 1) * lines_per_tile); ++line) {
            _mm_prefetch(next_slice + line * 64, _MM_HINT_T1);
          }
          const int64_t i0 = block + tile * kTileRows;
          const int64_t* c_rows = op.c_rows != nullptr ? op.c_rows + i0 : nullptr;
          float* c_tile = op.c + j0 + (c_rows != nullptr ? 0 : i0 * op.ldc);
          if (tile < first_packed) {
            tile_kernel(pass.in_place, op.a + i0 * op.a_row_stride, op.a_row_stride, op.a_k_stride,
                        b_panel, c_tile, c_rows, op.ldc, pass_beta, kTileRows, mask_low, mask_high);
          } else {
            tile_kernel(pass.packed,
                        packed_a.data() + (tile - first_packed) * pass.depth * kTileRows, 1,
                        kTileRows, b_panel, c_tile, c_rows, op.ldc, pass_beta, tile_rows(tile),
                        mask_low, mask_high);
          }
        }
      }
    }
  }
}

std::vector<DepthRun> whole_depth(int64_t k) {
  return {DepthRun{0, 0, k}};
}

int64_t packed_floats(int64_t n, int64_t k) {
  return panel_count(n) * k * kTileCols;
}

}  // namespace

PackedB::PackedB(int64_t n, int64_t k, const float* b, int64_t b_k_stride, int64_t b_col_stride)
    : n_(n), k_(k), storage_(packed_floats(n, k)) {
  pack_b(n, k, b, b_k_stride, b_col_stride, storage_.data());
}

PackedB::PackedB(int64_t n, const std::vector<const float*>& rows)
    : n_(n), k_(static_cast<int64_t>(rows.size())), storage_(packed_floats(n, k_)) {
  for_each_panel(n, [&](int64_t panel) {
    pack_panel_rows(
        panel, n, k_, [&](int64_t p) { return rows[p]; }, 1, storage_.data());
  });
}

void sgemm_avx512_packed(int64_t m, const float* a, int64_t a_row_stride, int64_t a_k_stride,
                         const PackedB& b, float beta, float* c, int64_t ldc) {
  sgemm_avx512_packed_runs(m, a, a_row_stride, a_k_stride, b, whole_depth(b.k()), beta, c, ldc,
                           nullptr);
}

void sgemm_avx512_packed_runs(int64_t m, const float* a, int64_t a_row_stride, int64_t a_k_stride,
                              const PackedB& b, const std::vector<DepthRun>& runs, float beta,
                              float* c, int64_t ldc, const int64_t* c_rows, APacking a_packing) {
  compute_block(
      {a, a_row_stride, a_k_stride, b.data(), b.n(), b.k(), runs, c, ldc, c_rows, a_packing}, 0, m,
      0, panel_count(b.n()), beta);
}

void sgemm_avx512(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row_stride,
                  int64_t a_k_stride, const float* b, int64_t b_k_stride, int64_t b_col_stride,
                  float beta, float* c, int64_t ldc) {
  const PackedB packed_b(n, k, b, b_k_stride, b_col_stride);
  const int64_t panels = panel_count(n);
  int threads = 1;
#if defined(_OPENMP)
  if (!omp_in_parallel() && m * n * k >= (int64_t{1} << 18)) threads = omp_get_max_threads();
#endif
  const std::vector<DepthRun> runs = whole_depth(k);
  const Operands operands{a, a_row_stride, a_k_stride, packed_b.data(), n, k, runs,
                          c, ldc,          nullptr};
  // Split rows when there are enough 12-row tiles for every thread, else split panels.
  const int64_t row_tiles = (m + kTileRows - 1) / kTileRows;
  const bool split_rows = row_tiles >= 4 * threads || row_tiles >= panels;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int t = 0; t < threads; ++t) {
    if (split_rows) {
      const int64_t per_thread = (row_tiles + threads - 1) / threads * kTileRows;
      const int64_t begin = t * per_thread, end = std::min(m, begin + per_thread);
      if (begin < end) compute_block(operands, begin, end, 0, panels, beta);
    } else {
      const int64_t per_thread = (panels + threads - 1) / threads;
      const int64_t begin = t * per_thread, end = std::min(panels, begin + per_thread);
      if (begin < end) compute_block(operands, 0, m, begin, end, beta);
    }
  }
}

}  // namespace engine::cpu
