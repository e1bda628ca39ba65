// The PTX ISA's fragment layouts of ldmatrix .x4 and mma.sync m16n8k16 and m16n8k8 (tf32),
// and cvt.rna.tf32.f32's rounding, written out here on their own (not through the emulator's
// formulas), as checks of what warp_matrix_kernels.cuh read back: kernels index fragments by these
// layouts, so an emulation that only got the product right would pass a kernel that fails on a GPU.
#pragma once

#include <gtest/gtest.h>

#include <cuda_bf16.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tests/kernels/conv_reference.h"

namespace engine::testing {

// Exact in bf16 (integers below 256): matrix i, row r, column c.
inline float warp_matrix_element(int matrix, int row, int column) {
  return static_cast<float>(matrix * 64 + row * 8 + column);
}

// ldmatrix_probe_kernel's input: 32 rows of 8.
inline std::vector<float> ldmatrix_probe_input() {
  std::vector<float> matrices(32 * 8);
  for (int m = 0; m < 4; ++m)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c)
        matrices[(m * 8 + r) * 8 + c] = warp_matrix_element(m, r, c);
  return matrices;
}

// PTX: a lane's register i holds matrix i's row lane/4, columns 2(lane%4) and +1 (the lower
// one in the low half); .trans: column lane/4, rows 2(lane%4) and +1.
inline void expect_ldmatrix_layout(const std::vector<float>& out, bool transpose) {
  ASSERT_EQ(out.size(), 32u * 4 * 2);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 4; ++i) {
      for (int h = 0; h < 2; ++h) {
        const int row = transpose ? 2 * (lane % 4) + h : lane / 4;
        const int column = transpose ? lane / 4 : 2 * (lane % 4) + h;
        EXPECT_EQ(out[(lane * 4 + i) * 2 + h], warp_matrix_element(i, row, column))
            << "lane " << lane << " register " << i << (h ? " high" : " low");
      }
    }
  }
}

struct MmaProbeInputs {
  std::vector<float> a, b, c;  // 16 x K, [k][n] K x 8, 16 x 8 (K: 16 bf16, 8 tf32)
};

// A and B exactly representable in bf16, so only the fp32 sum rounds.
inline MmaProbeInputs mma_probe_inputs() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-2, 2);
  const auto bf16 = [&] { return __bfloat162float(__float2bfloat16(value(rng))); };
  MmaProbeInputs in{std::vector<float>(16 * 16), std::vector<float>(16 * 8),
                    std::vector<float>(16 * 8)};
  for (float& v : in.a)
    v = bf16();
  for (float& v : in.b)
    v = bf16();
  for (float& v : in.c)
    v = value(rng);
  return in;
}

// d against c + A B (A 16 x k_size, B [k][n] k_size x 8) in double, each operand as mma reads
// it (read): k_size exact products summed in fp32, so within a few ulps of the magnitudes.
template <typename Read>
void expect_mma_result(const MmaProbeInputs& in, const std::vector<float>& d, int k_size,
                       Read read) {
  ASSERT_EQ(d.size(), 16u * 8);
  for (int row = 0; row < 16; ++row) {
    for (int n = 0; n < 8; ++n) {
      double expected = in.c[row * 8 + n];
      for (int k = 0; k < k_size; ++k)
        expected += read(in.a[row * k_size + k]) * read(in.b[k * 8 + n]);
      EXPECT_NEAR(d[row * 8 + n], expected, 1e-5) << "row " << row << " column " << n;
    }
  }
}

inline void expect_mma_product(const MmaProbeInputs& in, const std::vector<float>& d) {
  expect_mma_result(in, d, 16, [](float v) { return static_cast<double>(v); });
}

// A and B exactly representable in tf32 (tf32_exact), or with low bits set that mma ignores.
inline MmaProbeInputs mma_tf32_probe_inputs(bool tf32_exact) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-2, 2);
  const auto operand = [&] {
    const float v = value(rng);
    return tf32_exact ? round_to_tf32(v) : v;
  };
  MmaProbeInputs in{std::vector<float>(16 * 8), std::vector<float>(8 * 8),
                    std::vector<float>(16 * 8)};
  for (float& v : in.a)
    v = operand();
  for (float& v : in.b)
    v = operand();
  for (float& v : in.c)
    v = value(rng);
  return in;
}

// The value mma reads of an fp32 operand: its upper 19 bits (the low 13 of the fraction
// dropped), i.e. the value rounded toward zero to tf32.
inline double tf32_truncated(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits &= 0xffffe000u;
  float truncated;
  std::memcpy(&truncated, &bits, sizeof truncated);
  return truncated;
}

// A kept low bit would move a product by ~1e-4.
inline void expect_mma_tf32_product(const MmaProbeInputs& in, const std::vector<float>& d) {
  expect_mma_result(in, d, 8, tf32_truncated);
}

// cvt.rna.tf32.f32's cases: halfway (rounded away from zero, either sign), just below and
// above halfway, a carry into the exponent, the largest finite values (to infinity),
// infinities, zeros of both signs, the smallest normal, and random values.
inline std::vector<float> tf32_round_probe_input() {
  const float tie = 1.0f + std::ldexp(1.0f, -11);
  std::vector<float> values = {tie,
                               -tie,
                               std::nextafter(tie, 0.0f),
                               std::nextafter(tie, 2.0f),
                               1.0f + 3 * std::ldexp(1.0f, -11),
                               std::nextafter(2.0f, 0.0f),
                               FLT_MAX,
                               -FLT_MAX,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               0.0f,
                               -0.0f,
                               FLT_MIN};
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> value(-1000, 1000);
  while (values.size() < 64)
    values.push_back(value(rng));
  return values;
}

inline void expect_tf32_rounded(const std::vector<float>& in, const std::vector<float>& out) {
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const float expected = round_to_tf32(in[i]);
    EXPECT_EQ(out[i], expected) << "element " << i << ": " << in[i];
    EXPECT_EQ(std::signbit(out[i]), std::signbit(expected)) << "element " << i << ": " << in[i];
  }
}

}  // namespace engine::testing
