#include "kernels/cpu/bf16_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cpu/bf16_gemm_kernels.h"
#include "kernels/cpu/bf16_round_avx512.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/transpose_avx512.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace engine::cpu {

namespace {

using bf16_kernels::Block;
using bf16_kernels::kPairRowValues;
using bf16_kernels::kPanelCols;

int64_t panel_count(int64_t n) {
  return (n + kPanelCols - 1) / kPanelCols;
}

int64_t packed_values(int64_t n, int64_t k) {
  return panel_count(n) * (k + 1) / 2 * kPairRowValues;
}

// Floats of scratch that hold `values` bf16 values.
int64_t floats_for(int64_t values) {
  return (values + 1) / 2;
}

// Calls pack(panel) for every panel of B, in parallel unless already inside a parallel region.
template <typename PackPanel>
void for_each_panel(int64_t n, PackPanel&& pack) {
  parallel_for_unless_nested(panel_count(n), pack);
}

// Interleaves two rows' 32 values (the panel's columns) into one pair row: out[2j + t] is
// row t's value j.
__attribute__((target("avx512f,avx512bw"))) void interleave_full_rows(const uint16_t* row0,
                                                                      const uint16_t* row1,
                                                                      uint16_t* out) {
  alignas(64) static constexpr uint16_t kLow[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                    37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                    11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr uint16_t kHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                                     53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                                     27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i first = _mm512_loadu_si512(row0), second = _mm512_loadu_si512(row1);
  _mm512_store_si512(out, _mm512_permutex2var_epi16(first, _mm512_load_si512(kLow), second));
  _mm512_store_si512(out + 32, _mm512_permutex2var_epi16(first, _mm512_load_si512(kHigh), second));
}

// Panel `panel` from B's rows (row p at row_at(p), columns contiguous): pair row q interleaves
// rows 2q and 2q + 1 (zero beyond k), columns beyond n zero; only the pair rows `packed_rows`
// reads. A null row is zeros.
template <typename RowAt>
void pack_panel_from_rows(int64_t panel, int64_t n, int64_t k, RowAt&& row_at,
                          const RowGroups& packed_rows, uint16_t* packed) {
  alignas(64) static constexpr uint16_t kZeros[kPanelCols] = {};
  const int64_t pair_rows = (k + 1) / 2;
  uint16_t* out = packed + panel * pair_rows * kPairRowValues;
  const int64_t j0 = panel * kPanelCols;
  const int64_t cols = std::min<int64_t>(kPanelCols, n - j0);
  for (int64_t q = 0; q < pair_rows; ++q, out += kPairRowValues) {
    if (!packed_rows.pair_row_read(q)) continue;
    const uint16_t* row0 = row_at(2 * q);
    const uint16_t* row1 = 2 * q + 1 < k ? row_at(2 * q + 1) : nullptr;
    if (cols == kPanelCols) {
      interleave_full_rows(row0 != nullptr ? row0 + j0 : kZeros,
                           row1 != nullptr ? row1 + j0 : kZeros, out);
      continue;
    }
    std::memset(out, 0, kPairRowValues * sizeof(uint16_t));
    for (int64_t j = 0; j < cols; ++j) {
      if (row0 != nullptr) out[2 * j] = row0[j0 + j];
      if (row1 != nullptr) out[2 * j + 1] = row1[j0 + j];
    }
  }
}

// Panel `panel` of a B whose columns are contiguous along K (b_k_stride 1, such as conv
// filters read as [taps * C x K]): each column's pair (2q, 2q + 1) is one 32-bit word, so
// the panel is a transpose of 32-bit words, done 16 x 16 in registers where whole blocks fit.
// Only the pair rows `packed_rows` reads (a block of 16 with any such row is packed whole).
void pack_panel_from_columns(int64_t panel, int64_t n, int64_t k, const uint16_t* b,
                             int64_t b_col_stride, const RowGroups& packed_rows, uint16_t* packed) {
  const int64_t pair_rows = (k + 1) / 2;
  uint32_t* out = reinterpret_cast<uint32_t*>(packed + panel * pair_rows * kPairRowValues);
  const int64_t j0 = panel * kPanelCols;
  const int64_t cols = std::min<int64_t>(kPanelCols, n - j0);
  const auto any_read = [&](int64_t q_begin, int64_t q_end) {
    for (int64_t q = q_begin; q < q_end; ++q)
      if (packed_rows.pair_row_read(q)) return true;
    return false;
  };
  int64_t q0 = 0;
  if (cols == kPanelCols && b_col_stride % 2 == 0 && k % 2 == 0) {
    for (; q0 + 16 <= pair_rows; q0 += 16) {
      if (!any_read(q0, q0 + 16)) continue;
      for (int64_t half = 0; half < kPanelCols; half += 16) {
        transpose_16x16(reinterpret_cast<const float*>(b + (j0 + half) * b_col_stride + 2 * q0),
                        b_col_stride / 2, reinterpret_cast<float*>(out + q0 * kPanelCols + half),
                        kPanelCols);
      }
    }
  }
  for (int64_t q = q0; q < pair_rows; ++q) {
    if (!packed_rows.pair_row_read(q)) continue;
    for (int64_t j = 0; j < kPanelCols; ++j) {
      uint32_t pair = 0;
      if (j < cols) {
        const uint16_t* column = b + (j0 + j) * b_col_stride;
        pair = column[2 * q];
        if (2 * q + 1 < k) pair |= uint32_t{column[2 * q + 1]} << 16;
      }
      out[q * kPanelCols + j] = pair;
    }
  }
}

const uint16_t* bits(const bf16* values) {
  return reinterpret_cast<const uint16_t*>(values);
}

uint16_t* packed_storage(const ScratchFloats& storage) {
  return reinterpret_cast<uint16_t*>(storage.data());
}

__mmask16 column_mask(int64_t cols) {
  if (cols >= 16) return 0xFFFF;
  return cols <= 0 ? 0 : static_cast<__mmask16>((1u << cols) - 1);
}

// Writes rows [0, rows) of a block's fp32 tile (32 columns a row) to C's rows [i0, i0 + rows),
// columns [j0, min(n, j0 + 32)), as `out` says.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void write_block(const float* tile, int rows,
                                                                      int64_t i0, int64_t j0,
                                                                      int64_t n,
                                                                      const Bf16GemmOutput& out) {
  const __mmask16 masks[2] = {column_mask(n - j0), column_mask(n - j0 - 16)};
  for (int i = 0; i < rows; ++i) {
    const int64_t row = out.c_rows != nullptr ? out.c_rows[i0 + i] : (i0 + i) * out.ldc;
    for (int half = 0; half < 2; ++half) {
      const int64_t j = j0 + 16 * half;
      __m512 values = _mm512_loadu_ps(tile + i * kPanelCols + 16 * half);
      if (out.bias != nullptr) {
        values = _mm512_add_ps(values, _mm512_maskz_loadu_ps(masks[half], out.bias + j));
      }
      if (out.c_is_bf16) {
        _mm256_mask_storeu_epi16(static_cast<uint16_t*>(out.c) + row + j, masks[half],
                                 round_to_bf16(values));
        continue;
      }
      float* c = static_cast<float*>(out.c) + row + j;
      if (out.beta != 0.f) {
        values = _mm512_fmadd_ps(_mm512_set1_ps(out.beta), _mm512_maskz_loadu_ps(masks[half], c),
                                 values);
      }
      _mm512_mask_storeu_ps(c, masks[half], values);
    }
  }
}

// Rows of A per block: its rows (at most 256 x K bf16) stay in L2 while every panel of B
// passes over them, each panel (K x 32) reused by the block's kernel calls from L1/L2.
constexpr int64_t kBlockRows = 256;

// The columns of A the runs read: rows of a partial last block are copied this wide.
int64_t a_extent(const std::vector<DepthRun>& runs) {
  int64_t extent = 0;
  for (const DepthRun& run : runs)
    extent = std::max(extent, run.a_begin + run.length);
  return extent;
}

}  // namespace

PairPanels PairPanels::panels(int64_t first, int64_t count) const {
  return {data + first * pair_rows() * kPairRowValues,
          std::min(n - first * kPanelCols, count * kPanelCols), k};
}

int64_t pair_panels_values(int64_t n, int64_t k) {
  return packed_values(n, k);
}

void pack_pair_panels(int64_t n, const std::vector<const bf16*>& rows, int64_t panel_begin,
                      int64_t panel_end, uint16_t* out, const RowGroups& packed_rows) {
  const int64_t k = static_cast<int64_t>(rows.size());
  for (int64_t panel = panel_begin; panel < panel_end; ++panel) {
    pack_panel_from_rows(
        panel, n, k, [&](int64_t p) { return bits(rows[p]); }, packed_rows, out);
  }
}

namespace {

// `groups` for a B of k rows: refused where they would split a pair row or leave some rows
// without a group; none (every row, no per-row test) where every group is read, as on maps
// where each tap reads inside for some pixel.
RowGroups checked_row_groups(const RowGroups& groups, int64_t k) {
  if (groups.read == nullptr) return groups;
  if (groups.rows <= 0 || groups.rows % 2 != 0 ||
      static_cast<int64_t>(groups.read->size()) * groups.rows < k) {
    throw std::invalid_argument("PackedPairsB: row groups of " + std::to_string(groups.rows) +
                                " rows x " + std::to_string(groups.read->size()) +
                                " do not cover k = " + std::to_string(k) + " in whole pairs");
  }
  const bool all_read =
      std::all_of(groups.read->begin(), groups.read->end(), [](bool read) { return read; });
  return all_read ? RowGroups{} : groups;
}

}  // namespace

PackedPairsB::PackedPairsB(int64_t n, int64_t k, const bf16* b, int64_t b_k_stride,
                           int64_t b_col_stride, RowGroups packed_rows)
    : n_(n), k_(k), storage_(floats_for(packed_values(n, k))) {
  packed_rows = checked_row_groups(packed_rows, k);
  if (b_k_stride != 1 && b_col_stride != 1) {
    throw std::invalid_argument("PackedPairsB: B needs contiguous rows or columns");
  }
  uint16_t* packed = packed_storage(storage_);
  for_each_panel(n, [&](int64_t panel) {
    if (b_k_stride == 1) {
      pack_panel_from_columns(panel, n, k, bits(b), b_col_stride, packed_rows, packed);
    } else {
      pack_panel_from_rows(
          panel, n, k, [&](int64_t p) { return bits(b) + p * b_k_stride; }, packed_rows, packed);
    }
  });
}

PackedPairsB::PackedPairsB(int64_t n, const std::vector<const bf16*>& rows, RowGroups packed_rows)
    : n_(n), k_(static_cast<int64_t>(rows.size())), storage_(floats_for(packed_values(n, k_))) {
  packed_rows = checked_row_groups(packed_rows, k_);
  uint16_t* packed = packed_storage(storage_);
  for_each_panel(
      n, [&](int64_t panel) { pack_pair_panels(n, rows, panel, panel + 1, packed, packed_rows); });
}

bool bf16_runs_are_paired(const std::vector<DepthRun>& runs) {
  return std::all_of(runs.begin(), runs.end(), [](const DepthRun& run) {
    return run.b_begin % 2 == 0 && run.length % 2 == 0;
  });
}

void bf16_gemm_packed_runs(Bf16Products way, int64_t m, const bf16* a, int64_t lda,
                           const PairPanels& b, const std::vector<DepthRun>& runs,
                           const Bf16GemmOutput& out) {
  if (way == Bf16Products::kWidened || !bf16_runs_are_paired(runs)) {
    throw std::invalid_argument("bf16_gemm_packed_runs: needs a bf16 kernel and paired runs");
  }
  const bool amx = way == Bf16Products::kAmx;
  const int rows_per_kernel = bf16_kernels::kernel_rows(way);
  const int64_t panels = panel_count(b.n);
  const int64_t extent = a_extent(runs);
  // AMX's partial last kernel's rows, copied and zero-padded so its tiles read whole rows (the
  // AVX512_BF16 kernel reads the rows there are).
  const ScratchFloats tail(amx ? floats_for(rows_per_kernel * std::max<int64_t>(extent, 2)) : 0);
  alignas(64) float tile[bf16_kernels::kAmxRows * kPanelCols];
  if (amx) bf16_kernels::amx_configure();
  for (int64_t block = 0; block < m; block += kBlockRows) {
    const int64_t block_end = std::min(m, block + kBlockRows);
    const int64_t full_end = block + (block_end - block) / rows_per_kernel * rows_per_kernel;
    const int tail_rows = static_cast<int>(block_end - full_end);
    uint16_t* tail_a = reinterpret_cast<uint16_t*>(tail.data());
    if (amx && tail_rows > 0) {
      std::memset(tail_a, 0, rows_per_kernel * extent * sizeof(uint16_t));
      for (int i = 0; i < tail_rows; ++i)
        std::memcpy(tail_a + i * extent, bits(a) + (full_end + i) * lda, extent * sizeof(uint16_t));
    }
    for (int64_t panel = 0; panel < panels; ++panel) {
      const uint16_t* panel_data = b.data + panel * b.pair_rows() * kPairRowValues;
      for (int64_t i0 = block; i0 < block_end; i0 += rows_per_kernel) {
        const bool partial = i0 >= full_end;
        const bool copied = amx && partial;
        const Block operands{copied ? tail_a : bits(a) + i0 * lda,
                             copied ? extent : lda,
                             panel_data,
                             runs.data(),
                             runs.size(),
                             partial && !amx ? tail_rows : rows_per_kernel};
        if (amx) {
          bf16_kernels::amx_block(operands, tile);
        } else {
          bf16_kernels::avx512_bf16_block(operands, tile);
        }
        write_block(tile, partial ? tail_rows : rows_per_kernel, i0, panel * kPanelCols, b.n, out);
      }
    }
  }
  if (amx) bf16_kernels::amx_release();
}

void bf16_gemm(Bf16Products way, int64_t m, int64_t n, int64_t k, const bf16* a, int64_t lda,
               const bf16* b, int64_t b_k_stride, int64_t b_col_stride, const Bf16GemmOutput& out) {
  const PackedPairsB packed_b(n, k, b, b_k_stride, b_col_stride);
  const std::vector<DepthRun> runs = {DepthRun{0, 0, k}};
  const int64_t rows_per_kernel = bf16_kernels::kernel_rows(way);
  int64_t threads = 1;
#if defined(_OPENMP)
  if (!omp_in_parallel() && m * n * k >= (int64_t{1} << 18)) threads = omp_get_max_threads();
#endif
  const int64_t kernels = (m + rows_per_kernel - 1) / rows_per_kernel;
  const int64_t per_thread = (kernels + threads - 1) / threads * rows_per_kernel;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t begin = t * per_thread, end = std::min(m, begin + per_thread);
    if (begin >= end) continue;
    Bf16GemmOutput rows = out;
    if (rows.c_rows != nullptr) {
      rows.c_rows += begin;
    } else {
      rows.c = static_cast<char*>(rows.c) +
               begin * rows.ldc * (rows.c_is_bf16 ? sizeof(uint16_t) : sizeof(float));
    }
    bf16_gemm_packed_runs(way, end - begin, a + begin * lda, lda, packed_b, runs, rows);
  }
}

}  // namespace engine::cpu
