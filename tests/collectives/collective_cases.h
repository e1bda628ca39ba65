// Inputs and expected results shared by the collectives suites, nccl-tests style: every
// rank builds its input from (seed, rank, index), so each rank computes locally what a
// collective must produce. Inputs are small integers, exact in bf16 and in every partial
// sum of up to 8 ranks, so results do not depend on the order of reduction and can be
// compared bit for bit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/core/reduce_op.h"
#include "kernels/dtype.h"
#include "tests/dtype_bytes.h"

namespace engine::testing {

// 64 well-mixed bits from (seed, rank, index): the same on every rank, so each rank can
// build any rank's data.
inline uint64_t rank_hash(uint64_t seed, int rank, int64_t index) {
  uint64_t h = seed * 0x9E3779B97F4A7C15ull ^
               (static_cast<uint64_t>(rank) + 1) * 0xC2B2AE3D27D4EB4Full ^
               static_cast<uint64_t>(index) * 0x165667B19E3779F9ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return h;
}

// An integer in [-8, 8] from (seed, rank, index).
inline float input_value(uint32_t seed, int rank, int64_t index) {
  const uint64_t h = rank_hash(seed, rank, index);
  return static_cast<float>(static_cast<int>(h % 17) - 8);
}

inline std::vector<float> inputs(uint32_t seed, int rank, int64_t count, int64_t first = 0) {
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[i] = input_value(seed, rank, first + i);
  return values;
}

// Every rank's inputs one after the other: what all_gather and gather produce.
inline std::vector<float> gathered_inputs(uint32_t seed, int world, int64_t block) {
  std::vector<float> all;
  for (int rank = 0; rank < world; ++rank) {
    const std::vector<float> part = inputs(seed, rank, block);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

inline const std::vector<ReduceOp> kReduceOps = {ReduceOp::sum, ReduceOp::avg, ReduceOp::max,
                                                 ReduceOp::min};

// "all_reduce rank 1/3 bf16 count 97 max root 0": what a failing case was.
inline std::string case_label(const char* op, int rank, int world, DType dtype, int64_t count,
                              ReduceOp reduce = ReduceOp::sum, int root = 0) {
  return std::string(op) + " rank " + std::to_string(rank) + "/" + std::to_string(world) + " " +
         std::string(dtype_name(dtype)) + " count " + std::to_string(count) + " " +
         std::string(reduce_op_name(reduce)) + " root " + std::to_string(root);
}

// op over ranks 0..world-1 of input_value(seed, rank, index), as stored in dtype.
inline float expected_reduction(ReduceOp op, DType dtype, uint32_t seed, int world, int64_t index) {
  float result = input_value(seed, 0, index);
  for (int rank = 1; rank < world; ++rank) {
    const float value = input_value(seed, rank, index);
    result = op == ReduceOp::max   ? std::max(result, value)
             : op == ReduceOp::min ? std::min(result, value)
                                   : result + value;
  }
  if (op == ReduceOp::avg) result = result / static_cast<float>(world);
  return round_to(dtype, result);
}

inline std::vector<float> expected_reductions(ReduceOp op, DType dtype, uint32_t seed, int world,
                                              int64_t count, int64_t first = 0) {
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[i] = expected_reduction(op, dtype, seed, world, first + i);
  return values;
}

// How many elements differ (bitwise, NaN == NaN), and a description of the first one.
struct Mismatch {
  int64_t count = 0;
  std::string first;
};
inline Mismatch compare(const std::vector<float>& expected, const std::vector<float>& actual) {
  Mismatch mismatch;
  if (expected.size() != actual.size()) {
    mismatch.count = -1;
    mismatch.first =
        "sizes differ: " + std::to_string(expected.size()) + " vs " + std::to_string(actual.size());
    return mismatch;
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const bool both_nan = expected[i] != expected[i] && actual[i] != actual[i];
    if (both_nan || std::memcmp(&expected[i], &actual[i], sizeof(float)) == 0) continue;
    if (mismatch.count++ == 0) {
      mismatch.first = "element " + std::to_string(i) + ": expected " +
                       std::to_string(expected[i]) + ", got " + std::to_string(actual[i]);
    }
  }
  return mismatch;
}

}  // namespace engine::testing
