// Shared cases for the element-wise op families (fill, cast, ReLU, add+ReLU): the sizes,
// deterministic inputs, naive references and the comparison used by the CPU and SIMT suites,
// so both check the same things. On CUDA devices the op harness (tests/ops) checks cast and
// the activations against the CPU.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "tests/dtype_bytes.h"

namespace engine::testing {

// Empty, below one 16-byte vector, exact vectors, vectors plus a tail, several blocks.
inline const std::vector<int64_t> kElementwiseSizes = {0, 1,  3,  4,   7,    8,
                                                       9, 31, 33, 255, 1000, 4099};

// Values in [-4, 4] from (seed, index), with NaN, +-inf, +-0 and exact ties sprinkled in,
// already representable in dtype.
inline std::vector<float> make_inputs(int64_t n, uint32_t seed, DType dtype) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-4.f, 4.f);
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.f, -0.f, 1.f, -1.f, 1e-30f};
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    values[i] = (i % 13 == 5) ? specials[(i / 13) % 8] : uniform(rng);
    if (dtype == DType::bf16) values[i] = static_cast<float>(bf16(values[i]));
  }
  return values;
}

// Exact equality, NaN equal to NaN: these ops round once from the same fp32 value, so every
// implementation must give the same bits.
inline ::testing::AssertionResult same_values(const std::vector<float>& expected,
                                              const std::vector<float>& actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure()
           << "size " << actual.size() << ", expected " << expected.size();
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const bool both_nan = std::isnan(expected[i]) && std::isnan(actual[i]);
    if (!both_nan && expected[i] != actual[i]) {
      return ::testing::AssertionFailure()
             << "element " << i << " is " << actual[i] << ", expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// Naive references, written the obvious way.
inline float reference_relu(float x) {
  return std::isnan(x) ? x : (x > 0.f ? x : 0.f);
}
inline float reference_relu_backward(float y, float dy) {
  return y > 0.f ? dy : 0.f;
}
inline float reference_add_relu(float a, float b) {
  return reference_relu(a + b);
}

inline std::string case_name(DType dtype, int64_t n) {
  return std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
}

}  // namespace engine::testing
