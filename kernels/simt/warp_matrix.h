// PTX's warp-level matrix instructions, emulated: ldmatrix.sync.aligned.m8n8.x4[.trans]
// .shared.b16 and mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32. Kernels reach them
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
//             group + 8, the same columns).
// Both are warp-collective, as wmma.h's mma_sync: lanes publish pointers, meet at a warp
// barrier, read what they need, and meet again before any of it can change. Products of
// bf16 are exact in fp32; the sum runs from c over k = 0..15 in fp32 (the hardware's order
// is unspecified, so kernels' tests allow for rounding).
#pragma once

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

}  // namespace detail

// ldmatrix .x4: `row` is this lane's row address (16-byte aligned, in shared memory on a GPU).
inline void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool transpose) {
  detail::require_full_warp("ldmatrix");
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0) {
    throw std::logic_error("ldmatrix: a row address is not 16-byte aligned");
  }
  void** published = detail::warp_scratch();
  const unsigned lane = detail::lane_id();
  published[lane] = const_cast<void*>(row);
  __syncwarp();
  const int group = static_cast<int>(lane / 4), pair = 2 * static_cast<int>(lane % 4);
  uint32_t out[4];
  for (int i = 0; i < 4; ++i) {
    uint32_t low, high;
    if (transpose) {
      low = detail::load_b16(published[8 * i + pair], group);
      high = detail::load_b16(published[8 * i + pair + 1], group);
    } else {
      low = detail::load_b16(published[8 * i + group], pair);
      high = detail::load_b16(published[8 * i + group], pair + 1);
    }
    out[i] = low | (high << 16);
  }
  __syncwarp();  // every lane has read the addresses: they may change now
  for (int i = 0; i < 4; ++i)
    r[i] = out[i];
}

// d = a b + c for A 16 x 16 (row-major fragments), B 16 x 8 (column-major), fp32 C and D.
inline void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                              const float (&c)[4]) {
  detail::require_full_warp("mma.sync");
  struct Operands {
    const uint32_t* a;
    const uint32_t* b;
  };
  const Operands mine{a, b};
  void** published = detail::warp_scratch();
  const unsigned lane = detail::lane_id();
  published[lane] = const_cast<Operands*>(&mine);
  __syncwarp();
  const auto lane_of = [&](int group, int k) {
    return static_cast<const Operands*>(published[4 * group + (k % 8) / 2]);
  };
  const int group = static_cast<int>(lane / 4), pair = 2 * static_cast<int>(lane % 4);
  float out[4];
  for (int i = 0; i < 4; ++i) {
    const int row = group + 8 * (i / 2), column = pair + i % 2;
    float sum = c[i];
    for (int k = 0; k < 16; ++k) {
      const float a_value = detail::bf16_half(lane_of(row % 8, k)->a[row / 8 + 2 * (k / 8)], k % 2);
      const float b_value = detail::bf16_half(lane_of(column, k)->b[k / 8], k % 2);
      sum += a_value * b_value;
    }
    out[i] = sum;
  }
  __syncwarp();  // every lane has read the operands: they may change now
  for (int i = 0; i < 4; ++i)
    d[i] = out[i];
}

}  // namespace simt
