#include "kernels/simt/warp_matrix_collective.h"

#include <bit>
#include <cstdint>
#include <cstring>

namespace simt::detail {
namespace {

MmaFragments fragments_of(const WarpRequest& request) {
  MmaFragments fragments;
  std::memcpy(&fragments, request.value, sizeof fragments);
  return fragments;
}

// Element h (0 low, 1 high) of a register holding two bf16, as fp32 (bf16 is fp32's upper half).
float bf16_half(uint32_t reg, int h) {
  return std::bit_cast<float>((reg >> (16 * h)) << 16);
}

// The value a tf32 operand register stands for: its upper 19 bits (the hardware ignores the
// low 13 of fp32 bits that no cvt.rna.tf32.f32 rounded).
float tf32_value(uint32_t reg) {
  return std::bit_cast<float>(reg & 0xffffe000u);
}

// The warp's A (16 x kK), B (kK x 8) and C (16 x 8) gathered from the lanes' fragments,
// then D = A B + C, each element summed from C over k = 0 .. kK - 1 in fp32 (the products of
// bf16 and of tf32 are exact in fp32, so fusing them into the sums changes nothing), then
// scattered back in C/D's layout: lane (group = lane / 4, pair = 2 (lane % 4)) holds rows group
// and group + 8, columns pair and pair + 1.
template <int kK, typename Operand>
void multiply(const std::array<WarpRequest*, 32>& lanes, Operand operand) {
  std::array<MmaFragments, 32> fragments;
  for (int lane = 0; lane < 32; ++lane)
    fragments[lane] = fragments_of(*lanes[lane]);
  float a[16][kK], b[kK][8], c[16][8];
  for (int row = 0; row < 16; ++row) {
    for (int k = 0; k < kK; ++k)
      a[row][k] = operand(fragments, /*is_a=*/true, row, k);
  }
  for (int k = 0; k < kK; ++k) {
    for (int column = 0; column < 8; ++column)
      b[k][column] = operand(fragments, /*is_a=*/false, column, k);
  }
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 4; ++i)
      c[lane / 4 + 8 * (i / 2)][2 * (lane % 4) + i % 2] = fragments[lane].c[i];
  }
  float d[16][8];
  for (int row = 0; row < 16; ++row) {
    float sums[8];
    for (int column = 0; column < 8; ++column)
      sums[column] = c[row][column];
    for (int k = 0; k < kK; ++k) {
      for (int column = 0; column < 8; ++column)
        sums[column] += a[row][k] * b[k][column];
    }
    for (int column = 0; column < 8; ++column)
      d[row][column] = sums[column];
  }
  for (int lane = 0; lane < 32; ++lane) {
    float out[4];
    for (int i = 0; i < 4; ++i)
      out[i] = d[lane / 4 + 8 * (i / 2)][2 * (lane % 4) + i % 2];
    std::memcpy(lanes[lane]->result, out, sizeof out);
  }
}

}  // namespace

void complete_ldmatrix(const std::array<WarpRequest*, 32>& lanes, bool transpose) {
  // Lanes 8i .. 8i+7 gave matrix i's rows; element e of a row is its 16-bit word e.
  const auto element = [&](int matrix, int row, int e) {
    uint16_t value;
    std::memcpy(&value, lanes[8 * matrix + row]->value + 2 * e, sizeof value);
    return static_cast<uint32_t>(value);
  };
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, pair = 2 * (lane % 4);
    uint32_t regs[4];
    for (int i = 0; i < 4; ++i) {
      // r[i]: matrix i's row `group`, columns pair, pair + 1 (.trans: column `group`, rows
      // pair, pair + 1), the lower in the low 16 bits.
      regs[i] = transpose ? element(i, pair, group) | element(i, pair + 1, group) << 16
                          : element(i, group, pair) | element(i, group, pair + 1) << 16;
    }
    std::memcpy(lanes[lane]->result, regs, sizeof regs);
  }
}

void complete_mma(const std::array<WarpRequest*, 32>& lanes, WarpOp op) {
  using Fragments = std::array<MmaFragments, 32>;
  if (op == WarpOp::kMmaBf16) {
    // A (row, k): half k % 2 of register row / 8 + 2 (k / 8) of lane 4 (row % 8) + (k % 8) / 2;
    // B (k, column): half k % 2 of register k / 8 of lane 4 column + (k % 8) / 2.
    multiply<16>(lanes, [](const Fragments& f, bool is_a, int index, int k) {
      const MmaFragments& lane = f[4 * (index % 8) + (k % 8) / 2];
      return is_a ? bf16_half(lane.a[index / 8 + 2 * (k / 8)], k % 2)
                  : bf16_half(lane.b[k / 8], k % 2);
    });
  } else {
    // A (row, k): register row / 8 + 2 (k / 4) of lane 4 (row % 8) + k % 4; B (k, column):
    // register k / 4 of lane 4 column + k % 4.
    multiply<8>(lanes, [](const Fragments& f, bool is_a, int index, int k) {
      const MmaFragments& lane = f[4 * (index % 8) + k % 4];
      return tf32_value(is_a ? lane.a[index / 8 + 2 * (k / 4)] : lane.b[k / 4]);
    });
  }
}

}  // namespace simt::detail
