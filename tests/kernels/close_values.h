// Comparison with a stated tolerance, relative to the magnitude of the result: element i
// passes when |actual - expected| <= rel * max(|expected_i|, scale), where scale is a
// magnitude of the whole result (its RMS by default), so that elements that happen to be
// near zero are not held to an impossible standard. NaN must meet NaN.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench/ops/seeded_values.h"
#include "kernels/dtype.h"

namespace engine::testing {

using op_registry::kBf16Ulp;
// fp32 results whose inputs agree but whose summation order differs.
constexpr double kF32Rel = 1e-5;

inline double rms(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values)
    if (std::isfinite(v)) sum += v * v;
  return values.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(values.size()));
}

// With ENGINE_TEST_REPORT_ERRORS set (scripts/gpu-check sets it), a comparison that passes
// prints the worst error it measured beside its tolerance: on a GPU, how near a case sits to
// its bound shows before it fails.
inline void report_measured_error(double worst, double rel, size_t elements) {
  if (std::getenv("ENGINE_TEST_REPORT_ERRORS") == nullptr) return;
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::printf("[ measured ] %s.%s: worst relative error %.3g of tolerance %.3g over %zu values\n",
              test != nullptr ? test->test_suite_name() : "?", test != nullptr ? test->name() : "?",
              worst, rel, elements);
}

// Element i passes when |actual_i - expected_i| <= rel * max(|expected_i|, scales_i).
template <typename E, typename A>
::testing::AssertionResult all_close_scaled(const std::vector<E>& expected_in,
                                            const std::vector<A>& actual, double rel,
                                            const std::vector<double>& scales) {
  const std::vector<double> expected(expected_in.begin(), expected_in.end());
  if (expected.size() != actual.size() || scales.size() != expected.size()) {
    return ::testing::AssertionFailure() << "size " << actual.size() << ", expected "
                                         << expected.size() << " (" << scales.size() << " scales)";
  }
  int64_t failures = 0, first = -1;
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double e = expected[i], a = static_cast<double>(actual[i]);
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) != std::isnan(a)) {
        ++failures;
        if (first < 0) first = static_cast<int64_t>(i);
      }
      continue;
    }
    const double magnitude = std::max(std::abs(e), scales[i]);
    const double error = std::abs(a - e);
    if (!(error <= rel * magnitude) && !(e == a)) {
      ++failures;
      if (first < 0) first = static_cast<int64_t>(i);
    }
    if (std::isfinite(error) && magnitude > 0) worst = std::max(worst, error / magnitude);
  }
  if (failures == 0) {
    report_measured_error(worst, rel, expected.size());
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << failures << " of " << expected.size() << " elements differ; first at " << first << ": "
         << static_cast<double>(actual[first]) << " vs expected " << expected[first] << " (rel "
         << rel << ", scale " << scales[first] << ", worst relative error " << worst << ")";
}

// The same with one scale for every element: by default the RMS of the expected values.
template <typename E, typename A>
::testing::AssertionResult all_close(const std::vector<E>& expected, const std::vector<A>& actual,
                                     double rel, double scale = -1) {
  if (scale < 0) scale = rms(std::vector<double>(expected.begin(), expected.end()));
  return all_close_scaled(expected, actual, rel, std::vector<double>(expected.size(), scale));
}

using op_registry::normal_values;

inline std::vector<double> to_double(const std::vector<float>& values) {
  return {values.begin(), values.end()};
}

}  // namespace engine::testing
