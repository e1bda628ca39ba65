// The bf16 GEMM's inner kernels (kernels/cpu/bf16_gemm.h): one block of C, kernel_rows(way)
// rows by one 32-column panel, summed over depth runs into an fp32 tile. Internal to
// bf16_gemm.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/sgemm_avx512.h"

namespace engine::cpu::bf16_kernels {

constexpr int kPanelCols = kBf16PanelColumns;
constexpr int kPairRowValues = 64;   // bf16 values in one pair row of a panel
constexpr int kAmxRows = 32;         // two 16-row A tiles, four 16 x 16 C tiles
constexpr int kAvx512Bf16Rows = 12;  // 12 x 2 zmm accumulators

inline int kernel_rows(Bf16Products way) {
  return way == Bf16Products::kAmx ? kAmxRows : kAvx512Bf16Rows;
}

// A block's operands: A's row i at a + i * lda (contiguous along K), the panel's pair rows,
// the runs (b_begin and length even), and how many rows of A the kernel reads: kAmxRows for
// amx_block, 1 to kAvx512Bf16Rows for avx512_bf16_block.
struct Block {
  const uint16_t* a;
  int64_t lda;
  const uint16_t* panel;
  const DepthRun* runs;
  size_t run_count;
  int rows;
};

// tile[i * 32 + j] = sum over the runs of A(i, p) * B(p, j), for i < block.rows.
void amx_block(const Block& block, float* tile);
// A kernel compiled for each row count, so that a GEMM's last rows (M = 64 output channels:
// 5 x 12 + 4) are neither copied into a zero-padded block nor multiplied as 12.
void avx512_bf16_block(const Block& block, float* tile);

// AMX's tile registers are configured per thread before amx_block and released after, so
// that a thread that leaves them keeps no 8 KiB of tile state in its context switches.
void amx_configure();
void amx_release();

}  // namespace engine::cpu::bf16_kernels
