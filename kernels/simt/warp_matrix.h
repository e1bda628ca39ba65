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
// Both are warp-collective, as wmma.h's mma_sync: lanes publish pointers, meet at a warp
// barrier, read what they need, and meet again before any of it can change. Products of
// bf16 are exact in fp32; the sum runs from c over k = 0..15 in fp32 (the hardware's order
// is unspecified, so kernels' tests allow for rounding). tf32 mma reads the upper 19 bits of
// each 32-bit operand and ignores the low 13, as the hardware does with fp32 bits that no
// cvt.rna.tf32.f32 rounded (its products are exact in fp32 too).
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include <cuda_bf16.h>

#include "kernels/simt/runtime.h"
#include "kernels/simt/sync.h"

namespace simt {

namespace detail {

inline uint16_t load_b16(const void* row, int column) {
  uint16_t value;
  std::memcpy(&value, static_cast<const char*>(row) + 2 * column, sizeof value);
  return value;
}

// Element h (0 low, 1 high) of a register holding two bf16.
inline float bf16_half(uint32_t reg, int h) {
  return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(reg >> (16 * h))));
}

// The value a tf32 operand register stands for: its upper 19 bits.
inline float tf32_value(uint32_t reg) {
  return std::bit_cast<float>(reg & 0xffffe000u);
}

// The warp-collective pattern of every instruction here: each lane publishes a pointer to its
// operands, the lanes meet, read(operands_of) computes this lane's results from anyone's
// operands (operands_of(lane)), and they meet again before any operand can change.
template <typename Operands, typename Read>
auto read_across_warp(const char* instruction, const Operands& mine, Read read) {
  require_full_warp(instruction);
  void** published = warp_scratch();
  published[lane_id()] = const_cast<Operands*>(&mine);
  __syncwarp();
  const auto results = read([published](int lane) -> const Operands& {
    return *static_cast<const Operands*>(published[lane]);
  });
  __syncwarp();  // every lane has read the operands: they may change now
  return results;
}

}  // namespace detail

// ldmatrix .x4: `row` is this lane's row address (16-byte aligned, in shared memory on a GPU).
inline void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool transpose) {
  detail::require_full_warp("ldmatrix");
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0) {
    throw std::logic_error("ldmatrix: a row address is not 16-byte aligned");
  }
  const unsigned lane = detail::lane_id();
  const int group = static_cast<int>(lane / 4), pair = 2 * static_cast<int>(lane % 4);
  const auto out = detail::read_across_warp("ldmatrix", row, [&](auto row_of) {
    std::array<uint32_t, 4> regs;
    for (int i = 0; i < 4; ++i) {
      uint32_t low, high;
      if (transpose) {
        low = detail::load_b16(row_of(8 * i + pair), group);
        high = detail::load_b16(row_of(8 * i + pair + 1), group);
      } else {
        low = detail::load_b16(row_of(8 * i + group), pair);
        high = detail::load_b16(row_of(8 * i + group), pair + 1);
      }
      regs[i] = low | (high << 16);
    }
    return regs;
  });
  for (int i = 0; i < 4; ++i)
    r[i] = out[i];
}

namespace detail {

struct MmaOperands {
  const uint32_t* a;
  const uint32_t* b;
};

// Both mma shapes: this lane's four outputs of the 16 x 8 D (C/D layout above), each c plus
// the kK products product(operands_of, row, column, k) summed in fp32 in order of k.
template <int kK, typename Product>
void mma_m16n8(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4],
               Product product) {
  const unsigned lane = lane_id();
  const int group = static_cast<int>(lane / 4), pair = 2 * static_cast<int>(lane % 4);
  const auto out = read_across_warp("mma.sync", MmaOperands{a, b}, [&](auto operands_of) {
    std::array<float, 4> sums;
    for (int i = 0; i < 4; ++i) {
      const int row = group + 8 * (i / 2), column = pair + i % 2;
      float sum = c[i];
      for (int k = 0; k < kK; ++k)
        sum += product(operands_of, row, column, k);
      sums[i] = sum;
    }
    return sums;
  });
  for (int i = 0; i < 4; ++i)
    d[i] = out[i];
}

}  // namespace detail

// d = a b + c for A 16 x 16 (row-major fragments), B 16 x 8 (column-major), fp32 C and D.
inline void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                              const float (&c)[4]) {
  detail::mma_m16n8<16>(d, a, b, c, [](auto operands_of, int row, int column, int k) {
    // Element k of row (column) is half k % 2 of a register of lane 4 row + (k % 8) / 2.
    const auto& a_lane = operands_of(4 * (row % 8) + (k % 8) / 2);
    const auto& b_lane = operands_of(4 * column + (k % 8) / 2);
    return detail::bf16_half(a_lane.a[row / 8 + 2 * (k / 8)], k % 2) *
           detail::bf16_half(b_lane.b[k / 8], k % 2);
  });
}

// d = a b + c for A 16 x 8 tf32 (row-major fragments), B 8 x 8 tf32 (column-major), fp32 C, D.
inline void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                             const float (&c)[4]) {
  detail::mma_m16n8<8>(d, a, b, c, [](auto operands_of, int row, int column, int k) {
    // A (row, k) is register (row / 8) + 2 (k / 4) of lane 4 (row % 8) + k % 4; B (k,
    // column) register k / 4 of lane 4 column + k % 4.
    return detail::tf32_value(operands_of(4 * (row % 8) + k % 4).a[row / 8 + 2 * (k / 4)]) *
           detail::tf32_value(operands_of(4 * column + k % 4).b[k / 4]);
  });
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
