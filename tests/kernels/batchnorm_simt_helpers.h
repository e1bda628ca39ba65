// Helpers that the batchnorm SIMT suites share (test_batchnorm_simt_forward.cpp,
// test_batchnorm_simt_merge.cpp, test_batchnorm_simt_backward.cpp and
// test_batchnorm_relu_mask_simt.cpp): the launch geometries they force, bitwise comparison,
// the statistics' tolerances and the reduction workspace.
#pragma once

#include "sim/simt/simt.h"
// The kernels under test, compiled by g++ for the emulator. It defines entry points and
// kernels out of line: each suite that includes this header is its own executable.
#include "kernels/cuda/batchnorm.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <string>
#include <vector>

#include "close_values.h"
#include "simt_buffer.h"

namespace engine::testing {

inline constexpr float kEps = 1e-5f;

struct LaunchShapes {
  cuda::ChannelReduceLaunch reduce;
  cuda::ChannelTileLaunch tile;
  cuda::PerChannelLaunch channel;
  std::string str() const {
    return "threads " + std::to_string(reduce.threads) +
           " partials<=" + std::to_string(reduce.max_partials);
  }
};
// The defaults, then 64-thread blocks with at most 3 partials of >= 2 rows and 2 row blocks,
// and per-channel kernels of 2 blocks of 32 threads (so C > 64 takes their stride loop).
inline const LaunchShapes kLaunchShapes[] = {{{}, {}, {}}, {{64, 3, 2}, {64, 2}, {32, 2}}};

// Bitwise, NaN == NaN.
inline ::testing::AssertionResult same_bits(const std::vector<double>& expected,
                                            const std::vector<double>& actual) {
  if (expected.size() != actual.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < expected.size(); ++i) {
    const bool both_nan = std::isnan(expected[i]) && std::isnan(actual[i]);
    if (!both_nan && std::memcmp(&expected[i], &actual[i], sizeof(double)) != 0) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << ", expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult same_bits(const std::vector<float>& expected,
                                            const std::vector<float>& actual) {
  return same_bits(std::vector<double>(expected.begin(), expected.end()),
                   std::vector<double>(actual.begin(), actual.end()));
}

inline std::vector<float> slice(const std::vector<float>& v, int64_t begin, int64_t count) {
  return {v.begin() + begin, v.begin() + begin + count};
}

// Per-channel f32 stats, in layout [mean, m2 or invstd, count]: means to fp32 rounding of the
// data's scale, the rest relative. Shared so that the merge's statistics are held to the
// separate phases' tolerances.
inline void expect_stats_close(const std::vector<float>& expected, const std::vector<float>& actual,
                               int64_t channels, double mean_scale) {
  EXPECT_TRUE(
      all_close(slice(expected, 0, channels), slice(actual, 0, channels), 1e-6, mean_scale));
  EXPECT_TRUE(all_close(slice(expected, channels, channels + 1),
                        slice(actual, channels, channels + 1), 1e-5));
}

// A reduction workspace, zeroed before its first use as its tile counters need.
inline SimtBuffer zeroed_workspace(int64_t numel,
                                   std::source_location created = std::source_location::current()) {
  return SimtBuffer(DType::f32, std::vector<float>(numel, 0.f), 0, created);
}

// Every launch leaves the workspace's tile counters (its last C words) at zero, so the next
// launch, or a graph's replay, finds them as the first did.
inline void expect_counters_reset(const SimtBuffer& workspace, int64_t channels) {
  const std::vector<float> words = workspace.values();
  const std::vector<float> counters(words.end() - channels, words.end());
  EXPECT_EQ(counters, std::vector<float>(channels, 0.f)) << "tile counters after the launch";
}

}  // namespace engine::testing
