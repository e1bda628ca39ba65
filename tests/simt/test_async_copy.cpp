// cp.async (kernels/cuda/async_copy.cuh) under the SIMT emulator: the probe kernel that also
// runs on a CUDA device (kernels_conv_test's WarpMmaGpu), the emulator's latest-legal-moment
// landing that makes a missing wait visible, and the copies PTX forbids.
#include "sim/simt/simt.h"
// The wrappers and probe kernels under test, compiled here by g++ for the emulator.
#include "tests/kernels/async_copy_kernels.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/kernels/async_copy_checks.h"

namespace {

using engine::cuda::cp_async_16;
using engine::cuda::cp_async_commit;
using engine::cuda::cp_async_wait;
using engine::cuda::shared_address;

TEST(SimtAsyncCopy, CopiesLandByGroupAndZeroFill) {
  const std::vector<float> src = engine::testing::async_copy_probe_input();
  std::vector<float> out(src.size(), -2);
  simt::launch(engine::testing::async_copy_probe_kernel, dim3(1),
               dim3(engine::testing::kAsyncCopyProbeThreads), 0, nullptr, src.data(), out.data());
  engine::testing::expect_async_copies_landed(src, out);
}

// One thread, three groups of one 16-byte copy each: what its shared memory holds before any
// wait, after waiting for all but the newest 2, 1 and 0 groups.
__global__ void landing_order_kernel(const float* src, float* seen) {
  __shared__ __align__(16) float chunks[3][4];
  for (int c = 0; c < 3; ++c) {
    cp_async_16(shared_address(chunks[c]), src + 4 * c, true);
    cp_async_commit();
  }
  const auto record = [&](int step) {
    for (int c = 0; c < 3; ++c)
      seen[step * 3 + c] = chunks[c][0];
  };
  record(0);
  cp_async_wait<2>();
  record(1);
  cp_async_wait<1>();
  record(2);
  cp_async_wait<0>();
  record(3);
}

TEST(SimtAsyncCopy, ACopyLandsWhenItsGroupIsWaitedForNotBefore) {
  const std::vector<float> src = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
  std::vector<float> seen(12, -1);
  simt::launch(landing_order_kernel, dim3(1), dim3(1), 0, nullptr, src.data(), seen.data());
  // Not landed yet: still the NaN the emulator fills shared memory with.
  const std::vector<bool> landed = {false, false, false, true, false, false,
                                    true,  true,  false, true, true,  true};
  for (int i = 0; i < 12; ++i) {
    if (landed[i]) {
      EXPECT_EQ(seen[i], static_cast<float>(i % 3 + 1)) << "step " << i / 3 << " chunk " << i % 3;
    } else {
      EXPECT_TRUE(std::isnan(seen[i])) << "step " << i / 3 << " chunk " << i % 3 << ": " << seen[i];
    }
  }
}

__global__ void dynamic_destination_kernel(const float* src, float* out) {
  DYNAMIC_SHARED_MEMORY(float, buffer);
  cp_async_16(shared_address(buffer + 4 * threadIdx.x), src + 4 * threadIdx.x, true);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  for (int e = 0; e < 4; ++e)
    out[4 * threadIdx.x + e] = buffer[4 * ((threadIdx.x + 1) % 8) + e];
}

TEST(SimtAsyncCopy, CopiesIntoDynamicSharedMemory) {
  std::vector<float> src(32), out(32, -1);
  for (int i = 0; i < 32; ++i)
    src[i] = static_cast<float>(i);
  simt::launch(dynamic_destination_kernel, dim3(1), dim3(8), 32 * sizeof(float), nullptr,
               src.data(), out.data());
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(out[i], src[(i + 4) % 32]) << i;
}

enum class BadCopy {
  kMisalignedShared,
  kMisalignedGlobal,
  kGlobalDestination,
  kOddSize,
  kSourceLargerThanCopy,
  kNeverWaited
};

__global__ void bad_copy_kernel(const float* src, float* global, BadCopy bad) {
  __shared__ __align__(16) float chunk[8];
  switch (bad) {
    case BadCopy::kMisalignedShared:
      cp_async_16(shared_address(chunk + 1), src, true);
      break;
    case BadCopy::kMisalignedGlobal:
      cp_async_16(shared_address(chunk), src + 1, true);
      break;
    case BadCopy::kGlobalDestination:
      cp_async_16(shared_address(global), src, true);
      break;
    case BadCopy::kOddSize:
      simt::cp_async(chunk, src, 12, 12);
      break;
    case BadCopy::kSourceLargerThanCopy:
      simt::cp_async(chunk, src, 8, 16);
      break;
    case BadCopy::kNeverWaited:
      cp_async_16(shared_address(chunk), src, true);
      cp_async_commit();
      return;  // no wait: the copy may land after the thread is gone
  }
  cp_async_commit();
  cp_async_wait<0>();
}

std::string launch_failure(BadCopy bad) {
  alignas(16) float src[8] = {};
  alignas(16) float global[8] = {};
  try {
    simt::launch(bad_copy_kernel, dim3(1), dim3(1), 0, nullptr, src, global, bad);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(SimtAsyncCopy, CopiesPtxForbidsFailTheLaunchNamingTheirFault) {
  const auto expect_failure = [](BadCopy bad, const std::string& part) {
    const std::string message = launch_failure(bad);
    EXPECT_NE(message.find("bad_copy_kernel"), std::string::npos) << message;
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  expect_failure(BadCopy::kMisalignedShared, "cp.async: the shared address");
  expect_failure(BadCopy::kMisalignedGlobal, "cp.async: the global address");
  expect_failure(BadCopy::kGlobalDestination, "is not in the block's shared memory");
  expect_failure(BadCopy::kOddSize, "a copy of 12 bytes (PTX allows 4, 8 or 16)");
  expect_failure(BadCopy::kSourceLargerThanCopy, "src-size 16 exceeds the copy's 8 bytes");
  expect_failure(BadCopy::kNeverWaited, "returned with 1 cp.async copy never waited for");
}

}  // namespace
