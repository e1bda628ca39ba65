// What async_copy_probe_kernel (async_copy_kernels.cuh) must read back where cp.async works
// as PTX says: every 16-byte copy where its thread put it, zeros where src-size was 0, a group
// landed once its thread waited for it and the block met at a barrier.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace engine::testing {

// async_copy_probe_kernel's src: distinct, nonzero values.
inline std::vector<float> async_copy_probe_input() {
  std::vector<float> src(64 * 2 * 4);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<float>(i + 1);
  return src;
}

// Every chunk has landed where its thread put it, zeros (src-size 0) for threads 0, 3, 6, ...
inline void expect_async_copies_landed(const std::vector<float>& src,
                                       const std::vector<float>& out) {
  ASSERT_EQ(out.size(), src.size());
  for (int t = 0; t < 64; ++t) {
    const int neighbour = (t + 1) % 64;
    for (int c = 0; c < 2; ++c) {
      for (int e = 0; e < 4; ++e) {
        const float expected = neighbour % 3 != 0 ? src[(2 * neighbour + c) * 4 + e] : 0.f;
        EXPECT_EQ(out[(2 * t + c) * 4 + e], expected)
            << "thread " << t << " reading thread " << neighbour << "'s chunk " << c << "[" << e
            << "]";
      }
    }
  }
}

}  // namespace engine::testing
