#include "sim/simt/warp_matrix_collective.h"

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

// The warp's A (16 x kK), B (kK x 8) and C (16 x 8), each lane's fragments put in place by
// unpack(fragments, group, t, a, b) (group = lane / 4, t = lane % 4); then D = A B + C, each
// element summed from C over k = 0 .. kK - 1 in fp32 (the products of bf16 and of tf32 are
// exact in fp32, so fusing them into the sums would change nothing); then D scattered back in
// C/D's layout: lane (group, t) holds rows group and group + 8, columns 2t and 2t + 1.
template <int kK, typename Unpack>
void multiply(const std::array<WarpRequest*, 32>& lanes, Unpack unpack) {
  float a[16][kK], b[kK][8], c[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const MmaFragments fragments = fragments_of(*lanes[lane]);
    const int group = lane / 4, t = lane % 4;
    unpack(fragments, group, t, a, b);
    for (int i = 0; i < 4; ++i)
      c[group + 8 * (i / 2)][2 * t + i % 2] = fragments.c[i];
  }
  // A row of C is two 4-wide vectors; each step adds a[row][k] times B's row k to both, so
  // every element still sums over k in order (g++'s own vectorizer, left to itself, shuffled
  // more than it multiplied here: the whole file is compiled without it).
  using Float4 = float __attribute__((vector_size(16)));
  Float4 b_rows[kK][2];
  std::memcpy(b_rows, b, sizeof b_rows);
  for (int row = 0; row < 16; ++row) {
    Float4 sums[2];
    std::memcpy(sums, c[row], sizeof sums);
    for (int k = 0; k < kK; ++k) {
      sums[0] += a[row][k] * b_rows[k][0];
      sums[1] += a[row][k] * b_rows[k][1];
    }
    std::memcpy(c[row], sums, sizeof sums);
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, t = lane % 4;
    const float out[4] = {c[group][2 * t], c[group][2 * t + 1], c[group + 8][2 * t],
                          c[group + 8][2 * t + 1]};
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
  if (op == WarpOp::kMmaBf16) {
    // Register j of A holds row group + 8 (j % 2), k 8 (j / 2) + 2t and + 1 (low, high half);
    // register j of B holds column group, k 8j + 2t and + 1.
    multiply<16>(lanes,
                 [](const MmaFragments& f, int group, int t, float(&a)[16][16], float(&b)[16][8]) {
                   for (int j = 0; j < 4; ++j) {
                     for (int h = 0; h < 2; ++h)
                       a[group + 8 * (j % 2)][8 * (j / 2) + 2 * t + h] = bf16_half(f.a[j], h);
                   }
                   for (int j = 0; j < 2; ++j) {
                     for (int h = 0; h < 2; ++h)
                       b[8 * j + 2 * t + h][group] = bf16_half(f.b[j], h);
                   }
                 });
  } else {
    // Register j of A holds row group + 8 (j % 2), k t + 4 (j / 2); register j of B holds
    // column group, k t + 4j.
    multiply<8>(lanes,
                [](const MmaFragments& f, int group, int t, float(&a)[16][8], float(&b)[8][8]) {
                  for (int j = 0; j < 4; ++j)
                    a[group + 8 * (j % 2)][t + 4 * (j / 2)] = tf32_value(f.a[j]);
                  for (int j = 0; j < 2; ++j)
                    b[t + 4 * j][group] = tf32_value(f.b[j]);
                });
  }
}

}  // namespace simt::detail
