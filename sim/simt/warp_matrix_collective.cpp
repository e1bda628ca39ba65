#include "sim/simt/warp_matrix_collective.h"

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace simt::detail {
namespace {

// Element h (0 low, 1 high) of a register holding two bf16, as fp32 (bf16 is fp32's upper half).
float bf16_half(uint32_t reg, int h) {
  return std::bit_cast<float>((reg >> (16 * h)) << 16);
}

// The value a tf32 operand register stands for: its upper 19 bits (the hardware ignores the
// low 13 of fp32 bits that no cvt.rna.tf32.f32 rounded).
float tf32_value(uint32_t reg) {
  return std::bit_cast<float>(reg & 0xffffe000u);
}

// One mma's operands as the warp holds them, in matrices: A (16 x kK), B (kK x 8). A batch
// unpacks each tile of A and of B once for all the products that use it.
template <int kK>
struct MatrixA {
  float at[16][kK];
};
template <int kK>
struct MatrixB {
  float at[kK][8];
};
using Lanes = std::array<const uint32_t*, 32>;  // each lane's registers of one operand tile

// Each lane's registers of a tile into its matrix, with group = lane / 4, t = lane % 4.
//   bf16: register j of A holds row group + 8 (j % 2), k 8 (j / 2) + 2t and + 1 (low, high
//         half); register j of B holds column group, k 8j + 2t and + 1.
//   tf32: register j of A holds row group + 8 (j % 2), k t + 4 (j / 2); register j of B holds
//         column group, k t + 4j.
void unpack(const Lanes& regs, MatrixA<16>& a) {
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, t = lane % 4;
    for (int j = 0; j < 4; ++j) {
      for (int h = 0; h < 2; ++h)
        a.at[group + 8 * (j % 2)][8 * (j / 2) + 2 * t + h] = bf16_half(regs[lane][j], h);
    }
  }
}
void unpack(const Lanes& regs, MatrixB<16>& b) {
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, t = lane % 4;
    for (int j = 0; j < 2; ++j) {
      for (int h = 0; h < 2; ++h)
        b.at[8 * j + 2 * t + h][group] = bf16_half(regs[lane][j], h);
    }
  }
}
void unpack(const Lanes& regs, MatrixA<8>& a) {
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, t = lane % 4;
    for (int j = 0; j < 4; ++j)
      a.at[group + 8 * (j % 2)][t + 4 * (j / 2)] = tf32_value(regs[lane][j]);
  }
}
void unpack(const Lanes& regs, MatrixB<8>& b) {
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, t = lane % 4;
    for (int j = 0; j < 2; ++j)
      b.at[t + 4 * j][group] = tf32_value(regs[lane][j]);
  }
}

// c[row] += a[row][k] * b[k] for k = 0 .. kK - 1 in order, each row of C one 8-wide vector: every
// element sums its products one at a time in fp32, a multiply then an add (the products of
// bf16 and of tf32 are exact in fp32, so fusing them would change nothing but subnormals).
// Written as vectors by hand: g++'s vectorizer, left to itself, shuffled more than it
// multiplied here (the whole file is compiled without it).
using Float8 = float __attribute__((vector_size(32)));
template <int kK>
[[gnu::always_inline]] inline void accumulate_rows(const MatrixA<kK>& a, const MatrixB<kK>& b,
                                                   float (&c)[16][8]) {
  Float8 b_rows[kK];
  std::memcpy(b_rows, b.at, sizeof b_rows);
  for (int row = 0; row < 16; ++row) {
    Float8 sums;
    std::memcpy(&sums, c[row], sizeof sums);
    for (int k = 0; k < kK; ++k)
      sums += a.at[row][k] * b_rows[k];
    std::memcpy(c[row], &sums, sizeof sums);
  }
}
// The emulator's hottest loop: one AVX register a row where the CPU has AVX (x86-64 since 2011),
// two SSE ones elsewhere; the same operations either way.
#if defined(__x86_64__)
template <int kK>
[[gnu::target("avx")]] void accumulate_avx(const MatrixA<kK>& a, const MatrixB<kK>& b,
                                           float (&c)[16][8]) {
  accumulate_rows(a, b, c);
}
#endif
template <int kK>
void accumulate_portable(const MatrixA<kK>& a, const MatrixB<kK>& b, float (&c)[16][8]) {
  accumulate_rows(a, b, c);
}
template <int kK>
void accumulate(const MatrixA<kK>& a, const MatrixB<kK>& b, float (&c)[16][8]) {
#if defined(__x86_64__)
  static const bool avx = __builtin_cpu_supports("avx");
  if (avx) return accumulate_avx(a, b, c);
#endif
  accumulate_portable(a, b, c);
}

// D = A B + C for one mma: C gathered from each lane's four elements at c_regs[lane], D
// scattered back to d_out[lane], in C/D's layout: lane (group, t) holds rows group and
// group + 8, columns 2t and 2t + 1. c_regs and d_out may be the same.
template <int kK>
void multiply(const MatrixA<kK>& a, const MatrixB<kK>& b,
              const std::array<const float*, 32>& c_regs, const std::array<float*, 32>& d_out) {
  float c[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i)
      c[group + 8 * (i / 2)][2 * t + i % 2] = c_regs[lane][i];
  }
  accumulate(a, b, c);
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, t = lane % 4;
    const float out[4] = {c[group][2 * t], c[group][2 * t + 1], c[group + 8][2 * t],
                          c[group + 8][2 * t + 1]};
    std::memcpy(d_out[lane], out, sizeof out);
  }
}

// The batch: every tile of A and of B unpacked once, then the products in the order i, j.
template <int kK>
void multiply_batch(const std::array<MmaBatch, 32>& batches, unsigned tiles_a, unsigned tiles_b) {
  std::vector<MatrixA<kK>> a(tiles_a);
  std::vector<MatrixB<kK>> b(tiles_b);
  Lanes regs;
  for (unsigned i = 0; i < tiles_a; ++i) {
    for (int lane = 0; lane < 32; ++lane)
      regs[lane] = batches[lane].a[i];
    unpack(regs, a[i]);
  }
  for (unsigned j = 0; j < tiles_b; ++j) {
    for (int lane = 0; lane < 32; ++lane)
      regs[lane] = batches[lane].b[j];
    unpack(regs, b[j]);
  }
  for (unsigned i = 0; i < tiles_a; ++i) {
    for (unsigned j = 0; j < tiles_b; ++j) {
      std::array<const float*, 32> c_regs;
      std::array<float*, 32> d_out;
      for (int lane = 0; lane < 32; ++lane)
        c_regs[lane] = d_out[lane] = batches[lane].d[i * tiles_b + j];
      multiply(a[i], b[j], c_regs, d_out);
    }
  }
}

// ldmatrix .x4 from each lane's 16-byte row into each lane's four registers. Lanes 8i .. 8i+7
// gave matrix i's rows; element e of a row is its 16-bit word e.
void load_matrices(const std::array<const unsigned char*, 32>& rows,
                   const std::array<unsigned char*, 32>& outputs, bool transpose) {
  const auto element = [&](int matrix, int row, int e) {
    uint16_t value;
    std::memcpy(&value, rows[8 * matrix + row] + 2 * e, sizeof value);
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
    std::memcpy(outputs[lane], regs, sizeof regs);
  }
}

template <typename Batch>
Batch batch_of(const WarpRequest& request) {
  Batch batch;
  std::memcpy(&batch, request.value, sizeof batch);
  return batch;
}

}  // namespace

bool warp_tile_batches() {
  static const int batches = [] {
    const char* text = std::getenv("SIMT_WARP_TILE_BATCHES");
    const std::string value = text == nullptr ? "" : text;
    return value.empty() || value == "on" ? 1 : value == "off" ? 0 : -1;
  }();
  if (batches < 0) {
    throw std::invalid_argument(std::string("SIMT_WARP_TILE_BATCHES=") +
                                std::getenv("SIMT_WARP_TILE_BATCHES") + ": use on or off");
  }
  return batches == 1;
}

void complete_ldmatrix(const std::array<WarpRequest*, 32>& lanes, bool transpose) {
  std::array<const unsigned char*, 32> rows;
  std::array<unsigned char*, 32> outputs;
  for (int lane = 0; lane < 32; ++lane) {
    rows[lane] = lanes[lane]->value;
    outputs[lane] = lanes[lane]->result;
  }
  load_matrices(rows, outputs, transpose);
}

void complete_ldmatrix_batch(const std::array<WarpRequest*, 32>& lanes, bool transpose,
                             unsigned count) {
  std::array<LdmatrixBatch, 32> batches;
  for (int lane = 0; lane < 32; ++lane)
    batches[lane] = batch_of<LdmatrixBatch>(*lanes[lane]);
  for (unsigned l = 0; l < count; ++l) {
    std::array<const unsigned char*, 32> rows;
    std::array<unsigned char*, 32> outputs;
    for (int lane = 0; lane < 32; ++lane) {
      rows[lane] = batches[lane].rows + 16 * l;
      outputs[lane] = reinterpret_cast<unsigned char*>(batches[lane].result + 4 * l);
    }
    load_matrices(rows, outputs, transpose);
  }
}

void complete_mma(const std::array<WarpRequest*, 32>& lanes, WarpOp op) {
  std::array<MmaFragments, 32> fragments;
  Lanes a_regs, b_regs;
  std::array<const float*, 32> c_regs;
  std::array<float*, 32> d_out;
  for (int lane = 0; lane < 32; ++lane) {
    std::memcpy(&fragments[lane], lanes[lane]->value, sizeof(MmaFragments));
    a_regs[lane] = fragments[lane].a;
    b_regs[lane] = fragments[lane].b;
    c_regs[lane] = fragments[lane].c;
    d_out[lane] = reinterpret_cast<float*>(lanes[lane]->result);
  }
  const auto run = [&](auto& a, auto& b) {
    unpack(a_regs, a);
    unpack(b_regs, b);
    multiply(a, b, c_regs, d_out);
  };
  if (op == WarpOp::kMmaBf16) {
    MatrixA<16> a;
    MatrixB<16> b;
    run(a, b);
  } else {
    MatrixA<8> a;
    MatrixB<8> b;
    run(a, b);
  }
}

void complete_mma_batch(const std::array<WarpRequest*, 32>& lanes, WarpOp op, unsigned tiles_a,
                        unsigned tiles_b) {
  std::array<MmaBatch, 32> batches;
  for (int lane = 0; lane < 32; ++lane)
    batches[lane] = batch_of<MmaBatch>(*lanes[lane]);
  if (op == WarpOp::kMmaBf16Batch) {
    multiply_batch<16>(batches, tiles_a, tiles_b);
  } else {
    multiply_batch<8>(batches, tiles_a, tiles_b);
  }
}

}  // namespace simt::detail
