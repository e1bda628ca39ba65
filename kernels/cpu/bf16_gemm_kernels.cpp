#include "kernels/cpu/bf16_gemm_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

namespace engine::cpu::bf16_kernels {

namespace {

// The 64-byte tile configuration that ldtilecfg reads (palette 1).
struct TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Tiles 0-3 accumulate C's four 16 x 16 quarters; 4 and 5 hold A's two 16-row halves (16 rows
// of 32 bf16); 6 and 7 B's two 16-column halves (16 pair rows of 16 columns' pairs). All are
// 16 rows of 64 bytes.
constexpr int kTileRows = 16;
constexpr int kTileBytes = 64;
constexpr int kAmxDepth = 32;  // K per tdpbf16ps

constexpr int64_t kPanelRowBytes = kPairRowValues * 2;

// Zero-padded copies of a run's last, partial K step: A's 32 rows x 32 values and B's 16 pair
// rows x 64 values, the tail beyond the run zero, so the step's extra products add zeros.
struct PartialStep {
  alignas(64) uint16_t a[kAmxRows * kAmxDepth];
  alignas(64) uint16_t b[kTileRows * kPairRowValues];
};

__attribute__((target("amx-tile,amx-bf16"))) inline void amx_step(const uint16_t* a,
                                                                  int64_t a_stride_bytes,
                                                                  const uint16_t* b) {
  _tile_loadd(4, a, a_stride_bytes);
  _tile_loadd(5, reinterpret_cast<const char*>(a) + kTileRows * a_stride_bytes, a_stride_bytes);
  _tile_loadd(6, b, kPanelRowBytes);
  _tile_loadd(7, b + kPairRowValues / 2, kPanelRowBytes);  // columns 16-31
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  _tile_dpbf16ps(2, 5, 6);
  _tile_dpbf16ps(3, 5, 7);
}

}  // namespace

__attribute__((target("amx-tile"))) void amx_configure() {
  TileConfig config;
  for (int tile = 0; tile < 8; ++tile) {
    config.rows[tile] = kTileRows;
    config.bytes_per_row[tile] = kTileBytes;
  }
  // ldtilecfg as asm with the config as its memory operand: GCC 12's _tile_loadconfig does
  // not tell the optimizer that it reads the config, whose stores were then dropped (a #GP).
  asm volatile("ldtilecfg %0" : : "m"(config));
}

__attribute__((target("amx-tile"))) void amx_release() {
  _tile_release();
}

__attribute__((target("amx-tile,amx-bf16"))) void amx_block(const Block& block, float* tile) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int64_t a_stride_bytes = block.lda * 2;
  for (size_t r = 0; r < block.run_count; ++r) {
    const DepthRun& run = block.runs[r];
    const uint16_t* a = block.a + run.a_begin;
    const uint16_t* b = block.panel + run.b_begin / 2 * kPairRowValues;
    const int64_t full = run.length / kAmxDepth * kAmxDepth;
    for (int64_t p = 0; p < full; p += kAmxDepth)
      amx_step(a + p, a_stride_bytes, b + p / 2 * kPairRowValues);
    const int64_t rest = run.length - full;
    if (rest == 0) continue;
    PartialStep step;
    std::memset(&step, 0, sizeof(step));
    for (int i = 0; i < kAmxRows; ++i)
      std::memcpy(step.a + i * kAmxDepth, a + i * block.lda + full, rest * 2);
    std::memcpy(step.b, b + full / 2 * kPairRowValues, rest / 2 * kPanelRowBytes);
    amx_step(step.a, kAmxDepth * 2, step.b);
  }
  constexpr int64_t kTileStride = kPanelCols * sizeof(float);
  _tile_stored(0, tile, kTileStride);
  _tile_stored(1, tile + kTileRows, kTileStride);
  _tile_stored(2, tile + kTileRows * kPanelCols, kTileStride);
  _tile_stored(3, tile + kTileRows * kPanelCols + kTileRows, kTileStride);
}

namespace {

template <int Rows>
__attribute__((target("avx512f,avx512bf16"))) void avx512_bf16_rows(const Block& block,
                                                                    float* tile) {
  __m512 acc[Rows][2];
  for (int i = 0; i < Rows; ++i)
    acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (size_t r = 0; r < block.run_count; ++r) {
    const DepthRun& run = block.runs[r];
    const uint16_t* a = block.a + run.a_begin;
    const uint16_t* b = block.panel + run.b_begin / 2 * kPairRowValues;
    for (int64_t q = 0; q < run.length / 2; ++q) {
      const __m512bh b_low = reinterpret_cast<__m512bh>(_mm512_load_si512(b + q * kPairRowValues));
      const __m512bh b_high =
          reinterpret_cast<__m512bh>(_mm512_load_si512(b + q * kPairRowValues + 32));
#pragma GCC unroll 12
      for (int i = 0; i < Rows; ++i) {
        uint32_t pair;
        std::memcpy(&pair, a + i * block.lda + 2 * q, sizeof(pair));
        const __m512bh a_pair =
            reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(pair)));
        acc[i][0] = _mm512_dpbf16_ps(acc[i][0], a_pair, b_low);
        acc[i][1] = _mm512_dpbf16_ps(acc[i][1], a_pair, b_high);
      }
    }
  }
  for (int i = 0; i < Rows; ++i) {
    _mm512_storeu_ps(tile + i * kPanelCols, acc[i][0]);
    _mm512_storeu_ps(tile + i * kPanelCols + 16, acc[i][1]);
  }
}

using RowsKernel = void (*)(const Block&, float*);

template <int... Rows>
constexpr std::array<RowsKernel, sizeof...(Rows)> rows_kernels(
    std::integer_sequence<int, Rows...>) {
  return {&avx512_bf16_rows<Rows + 1>...};
}

// kRowsKernels[r - 1] reads r rows.
constexpr std::array<RowsKernel, kAvx512Bf16Rows> kRowsKernels =
    rows_kernels(std::make_integer_sequence<int, kAvx512Bf16Rows>{});

}  // namespace

void avx512_bf16_block(const Block& block, float* tile) {
  kRowsKernels[static_cast<size_t>(block.rows - 1)](block, tile);
}

}  // namespace engine::cpu::bf16_kernels
