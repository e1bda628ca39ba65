// PTX's warp-level matrix instructions, emulated: ldmatrix.sync.aligned.m8n8.x4[.trans]
// .shared.b16, mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32,
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 and cvt.rna.tf32.f32. Kernels reach them
// through kernels/cuda/warp_mma.cuh, which issues the real instructions under nvcc.
//
// Unlike WMMA's, these fragments have a fixed per-lane layout (PTX ISA, "Matrix fragments for
// mma.m16n8k16" and "ldmatrix"), which kernels rely on; the emulation follows it exactly, so a
// kernel that assumes another layout gives wrong results here as on a GPU. With
// group = lane / 4 and pair = 2 * (lane % 4):
//   ldmatrix: lanes 8i .. 8i+7 give the addresses of matrix i's 8 rows (16 bytes each);
//             r[i] holds matrix i's row `group`, columns pair, pair + 1 (.trans: column
//             `group`, rows pair, pair + 1), the lower column (row) in the low 16 bits.
//   mma A (16 x 16, row): a[0] (row group, k pair..), a[1] (row group + 8, k pair..),
//             a[2] (row group, k pair + 8..), a[3] (row group + 8, k pair + 8..).
//   mma B (16 x 8, col):  b[0] (k pair.., column group), b[1] (k pair + 8.., column group).
//   mma C/D (16 x 8):     c[0], c[1] (row group, columns pair, pair + 1), c[2], c[3] (row
//             group + 8, the same columns); the same for both shapes.
//   tf32 m16n8k8, with t = lane % 4 (one 32-bit element a register):
//     A (16 x 8, row):   a[0] (row group, k t), a[1] (row group + 8, k t), a[2] (row group,
//                        k t + 4), a[3] (row group + 8, k t + 4);
//     B (8 x 8, col):    b[0] (k t, column group), b[1] (k t + 4, column group).
//   ldmatrix of 32-bit elements (16-byte rows of 4): r[i] holds matrix i's row `group`,
//             element t, which is tf32 A's and B's layout; .trans would split elements.
// Each is one warp collective (WarpOp kLdmatrix .. kMmaTf32; the _batch forms one for several
// of them: kernels/cuda/warp_mma.cuh's warp-tile wrappers): every lane hands in its operands
// (ldmatrix: its 16-byte row, read from memory by the lane that names it; mma: copies of its
// fragments) and the last to arrive computes every lane's results (warp_matrix_collective.cpp),
// so an instruction costs one warp barrier. Products of bf16 are exact in fp32; the sum runs
// from c over k in fp32 (the hardware's order is unspecified, so kernels' tests allow for
// rounding). tf32 mma reads the upper 19 bits of each 32-bit operand and ignores the low 13, as
// the hardware does with fp32 bits that no cvt.rna.tf32.f32 rounded (its products are exact in
// fp32 too).
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "sim/simt/runtime.h"
#include "sim/simt/sync.h"

namespace simt {

namespace detail {

// One warp collective of a matrix instruction: `operands` in, this lane's 16 bytes out (none
// where result is null: a batch's results go where its operands point). `shape`: a batch's.
template <typename Operands>
void warp_matrix_op(const char* instruction, WarpOp op, const Operands& operands, void* result,
                    unsigned shape = 0) {
  static_assert(sizeof(Operands) <= sizeof(WarpRequest::value));
  require_full_warp(instruction);
  WarpRequest request;
  request.op = op;
  request.mask = 0xffffffffu;
  request.shape = shape;
  request.size = sizeof(Operands);
  std::memcpy(request.value, &operands, sizeof(Operands));
  sync_warp(request);
  if (result != nullptr) std::memcpy(result, request.result, 16);
}

// This lane's 16-byte ldmatrix row, read here: the kernel's own access, for the sanitizers.
inline void read_ldmatrix_row(const void* row, unsigned char* into) {
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0) {
    throw std::logic_error("ldmatrix: a row address is not 16-byte aligned");
  }
  std::memcpy(into, row, 16);
}

}  // namespace detail

// ldmatrix .x4: `row` is this lane's row address (16-byte aligned, in shared memory on a GPU).
inline void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool transpose) {
  detail::require_full_warp("ldmatrix");
  std::array<unsigned char, 16> bytes;
  detail::read_ldmatrix_row(row, bytes.data());
  detail::warp_matrix_op(
      "ldmatrix", transpose ? detail::WarpOp::kLdmatrixTrans : detail::WarpOp::kLdmatrix, bytes, r);
}

// `kCount` ldmatrix .x4 as one warp collective: r[l] from the rows at rows[l], exactly as
// ldmatrix_x4 would give them one by one.
template <int kCount, typename Pointer>
void ldmatrix_x4_batch(uint32_t (&r)[kCount][4], const Pointer (&rows)[kCount], bool transpose) {
  static_assert(kCount >= 1 && kCount < 256);
  if (!detail::warp_tile_batches()) {
    for (int l = 0; l < kCount; ++l)
      ldmatrix_x4(r[l], rows[l], transpose);
    return;
  }
  detail::require_full_warp("ldmatrix");
  std::array<unsigned char, 16 * kCount> bytes;
  for (int l = 0; l < kCount; ++l)
    detail::read_ldmatrix_row(rows[l], bytes.data() + 16 * l);
  detail::warp_matrix_op(
      "ldmatrix", transpose ? detail::WarpOp::kLdmatrixTransBatch : detail::WarpOp::kLdmatrixBatch,
      detail::LdmatrixBatch{bytes.data(), &r[0][0]}, nullptr, kCount);
}

namespace detail {

inline void mma(const char* instruction, WarpOp op, float (&d)[4], const uint32_t (&a)[4],
                const uint32_t (&b)[2], const float (&c)[4]) {
  MmaFragments fragments;
  std::memcpy(fragments.a, a, sizeof fragments.a);
  std::memcpy(fragments.b, b, sizeof fragments.b);
  std::memcpy(fragments.c, c, sizeof fragments.c);
  warp_matrix_op(instruction, op, fragments, d);
}

template <int kTilesA, int kTilesB>
void mma_batch(WarpOp op, float (&d)[kTilesA][kTilesB][4], const uint32_t (&a)[kTilesA][4],
               const uint32_t (&b)[kTilesB][2]) {
  static_assert(kTilesA >= 1 && kTilesA < 256 && kTilesB >= 1 && kTilesB < 256);
  if (!warp_tile_batches()) {
    const WarpOp single = op == WarpOp::kMmaBf16Batch ? WarpOp::kMmaBf16 : WarpOp::kMmaTf32;
    for (int i = 0; i < kTilesA; ++i) {
      for (int j = 0; j < kTilesB; ++j)
        mma("mma.sync", single, d[i][j], a[i], b[j], d[i][j]);
    }
    return;
  }
  warp_matrix_op("mma.sync", op, MmaBatch{a, b, &d[0][0]}, nullptr,
                 static_cast<unsigned>(kTilesA) << 8 | static_cast<unsigned>(kTilesB));
}

}  // namespace detail

// d = a b + c for A 16 x 16 (row-major fragments), B 16 x 8 (column-major), fp32 C and D.
inline void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                              const float (&c)[4]) {
  detail::mma("mma.sync", detail::WarpOp::kMmaBf16, d, a, b, c);
}

// d = a b + c for A 16 x 8 tf32 (row-major fragments), B 8 x 8 tf32 (column-major), fp32 C, D.
inline void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                             const float (&c)[4]) {
  detail::mma("mma.sync", detail::WarpOp::kMmaTf32, d, a, b, c);
}

// d[i][j] = a[i] b[j] + d[i][j] for every i < kTilesA, j < kTilesB as one warp collective: the
// same values as mma_m16n8k16_bf16 (mma_m16n8k8_tf32) called for each i, then each j.
template <int kTilesA, int kTilesB>
void mma_m16n8k16_bf16_batch(float (&d)[kTilesA][kTilesB][4], const uint32_t (&a)[kTilesA][4],
                             const uint32_t (&b)[kTilesB][2]) {
  detail::mma_batch(detail::WarpOp::kMmaBf16Batch, d, a, b);
}
template <int kTilesA, int kTilesB>
void mma_m16n8k8_tf32_batch(float (&d)[kTilesA][kTilesB][4], const uint32_t (&a)[kTilesA][4],
                            const uint32_t (&b)[kTilesB][2]) {
  detail::mma_batch(detail::WarpOp::kMmaTf32Batch, d, a, b);
}

// cvt.rna.tf32.f32: value rounded to tf32's 10 fraction bits, to nearest with ties away from
// zero, as 32 bits whose low 13 are zero. Infinities stay; a NaN stays a NaN; a value that
// rounds past the largest finite tf32 becomes an infinity.
inline uint32_t cvt_rna_tf32(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return bits | 0x7fffe000u;
  if (std::isinf(value)) return bits;
  // Adding half a tf32 unit to the magnitude bits carries into the kept ones exactly when the
  // dropped part is half a unit or more; a carry out of the fraction steps the exponent.
  return (bits + 0x1000u) & 0xffffe000u;
}

}  // namespace simt
