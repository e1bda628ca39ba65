// What the emulator turns into exceptions: deadlocks, kernel exceptions, bad launches and
// misuse. Each failed launch must leave the emulator usable for the next one.
#include <gtest/gtest.h>

#include <atomic>
#include <cfenv>
#include <stdexcept>
#include <string>

#include "sim/simt/simt.h"

namespace {

// Runs `launch` and returns the message of the `Exception` it throws ("" if none).
template <typename Exception, typename Launch>
std::string failure_of(Launch launch) {
  try {
    launch();
  } catch (const Exception& e) {
    return e.what();
  }
  return "";
}

__global__ void add_one_kernel(int* value) {
  __syncthreads();
  if (threadIdx.x == 0) *value += 1;
}

// The launch after a failure works.
void expect_emulator_still_works() {
  int value = 41;
  simt::launch(add_one_kernel, dim3(2), dim3(64), 0, nullptr, &value);
  EXPECT_EQ(value, 43);
}

#if defined(__x86_64__)
// A thread that sets a rounding mode would set it for every emulated thread after it (the
// x86-64 fibers switch without the floating-point control words; ucontext's, elsewhere, keep
// each fiber's): the block fails, and the host continues in the default mode again. 1 + 2^-30
// rounds to 1 only to nearest.
__global__ void rounding_mode_kernel(volatile float* sum) {
  if (threadIdx.x == 1) std::fesetround(FE_UPWARD);
  __syncthreads();
  if (threadIdx.x == 2) *sum = *sum + 0x1p-30f;
}

TEST(SimtFailures, AThreadChangingTheRoundingModeFailsItsBlock) {
  volatile float sum = 1.0f;
  const std::string message = failure_of<std::runtime_error>(
      [&] { simt::launch(rounding_mode_kernel, dim3(2), dim3(32), 0, nullptr, &sum); });
  EXPECT_NE(message.find("rounding_mode_kernel"), std::string::npos) << message;
  EXPECT_NE(message.find("block (0,0,0)"), std::string::npos) << message;
  EXPECT_NE(message.find("floating-point control words"), std::string::npos) << message;
  EXPECT_GT(sum, 1.0f) << "thread 2 added in the mode thread 1 set";
  EXPECT_EQ(std::fegetround(), FE_TONEAREST);
  sum = 1.0f;
  EXPECT_EQ(sum + 0x1p-30f, 1.0f);
  expect_emulator_still_works();
}
#endif

// Half the warp waits for the other half at __syncwarp, which waits at __syncthreads.
__global__ void deadlock_kernel(int* never) {
  if (threadIdx.x < 16) {
    __syncwarp();
  } else {
    __syncthreads();
  }
  *never = 1;
}

TEST(SimtFailures, DeadlockThrowsNamingKernelBlockAndWaits) {
  int never = 0;
  const std::string message = failure_of<std::runtime_error>(
      [&] { simt::launch(deadlock_kernel, dim3(3), dim3(32), 0, nullptr, &never); });
  EXPECT_NE(message.find("deadlock_kernel"), std::string::npos) << message;
  EXPECT_NE(message.find("block (0,0,0)"), std::string::npos) << message;
  EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
  EXPECT_NE(message.find("threads 0-15"), std::string::npos) << message;
  EXPECT_NE(message.find("__syncwarp(mask 0xffffffff)"), std::string::npos) << message;
  EXPECT_NE(message.find("threads 16-31"), std::string::npos) << message;
  EXPECT_NE(message.find("__syncthreads()"), std::string::npos) << message;
  EXPECT_EQ(never, 0);
  expect_emulator_still_works();
}

// Blocked threads of an aborted block are unwound: their destructors run.
std::atomic<int> g_destroyed{0};
struct CountsDestruction {
  ~CountsDestruction() { ++g_destroyed; }
};

__global__ void throwing_kernel() {
  const CountsDestruction guard;
  if (threadIdx.x == 5) throw std::domain_error("thread five gives up");
  __syncthreads();
}

TEST(SimtFailures, KernelExceptionAbortsTheLaunch) {
  g_destroyed = 0;
  const std::string message = failure_of<std::runtime_error>(
      [] { simt::launch(throwing_kernel, dim3(2), dim3(64), 0, nullptr); });
  EXPECT_NE(message.find("throwing_kernel"), std::string::npos) << message;
  EXPECT_NE(message.find("thread (5,0,0) threw: thread five gives up"), std::string::npos)
      << message;
  // Threads 0-5 ran (5 threw, 0-4 wait at the barrier and are unwound); 6-63 never started.
  EXPECT_EQ(g_destroyed.load(), 6);
  expect_emulator_still_works();
}

__global__ void trap_kernel() {
  if (blockIdx.x == 1 && threadIdx.x == 3) __trap();
}

TEST(SimtFailures, TrapAbortsTheLaunch) {
  const std::string message = failure_of<std::runtime_error>(
      [] { simt::launch(trap_kernel, dim3(2), dim3(8), 0, nullptr); });
  EXPECT_NE(message.find("block (1,0,0)"), std::string::npos) << message;
  EXPECT_NE(message.find("__trap"), std::string::npos) << message;
}

__global__ void empty_kernel() {}

TEST(SimtFailures, InvalidConfigurationsAreRejected) {
  const auto rejects = [](dim3 grid, dim3 block, std::size_t smem) {
    return failure_of<std::invalid_argument>(
        [&] { simt::launch(empty_kernel, grid, block, smem, nullptr); });
  };
  EXPECT_NE(rejects(dim3(1), dim3(1025), 0).find("1025 threads"), std::string::npos);
  EXPECT_NE(rejects(dim3(1), dim3(32, 32, 2), 0).find("2048 threads"), std::string::npos);
  EXPECT_NE(rejects(dim3(1), dim3(1, 1, 65), 0).find("limits"), std::string::npos);
  EXPECT_NE(rejects(dim3(1), dim3(0), 0).find("0 threads"), std::string::npos);
  EXPECT_NE(rejects(dim3(0), dim3(32), 0).find("zero dimension"), std::string::npos);
  EXPECT_NE(rejects(dim3(1, 65536), dim3(32), 0).find("limits"), std::string::npos);
  EXPECT_NE(rejects(dim3(1), dim3(32), 228 * 1024).find("dynamic shared memory"),
            std::string::npos);
  EXPECT_NE(rejects(dim3(0), dim3(32), 0).find("empty_kernel"), std::string::npos);
  EXPECT_NO_THROW(simt::launch(empty_kernel, dim3(1), dim3(1024), 227 * 1024, nullptr));
}

__global__ void foreign_mask_kernel(int* out) {
  const unsigned lane = threadIdx.x;
  *out = __shfl_sync(1u << ((lane + 1) % 32), 1, 0);
}

__global__ void bad_width_kernel(int* out) {
  *out = __shfl_sync(0xffffffffu, 1, 0, 12);
}

__global__ void mismatched_collectives_kernel(unsigned* out) {
  out[threadIdx.x] = threadIdx.x < 16 ? __ballot_sync(0xffffffffu, 1)
                                      : static_cast<unsigned>(__any_sync(0xffffffffu, 1));
}

TEST(SimtFailures, MisusedWarpCollectivesThrow) {
  int out = 0;
  EXPECT_NE(failure_of<std::runtime_error>([&] {
              simt::launch(foreign_mask_kernel, dim3(1), dim3(32), 0, nullptr, &out);
            }).find("does not include the calling lane 0"),
            std::string::npos);
  EXPECT_NE(failure_of<std::runtime_error>([&] {
              simt::launch(bad_width_kernel, dim3(1), dim3(32), 0, nullptr, &out);
            }).find("width 12"),
            std::string::npos);
  unsigned votes[32];
  EXPECT_NE(failure_of<std::runtime_error>([&] {
              simt::launch(mismatched_collectives_kernel, dim3(1), dim3(32), 0, nullptr, votes);
            }).find("different warp collectives"),
            std::string::npos);
  expect_emulator_still_works();
}

__global__ void nested_launch_kernel() {
  simt::launch(empty_kernel, dim3(1), dim3(1), 0, nullptr);
}

TEST(SimtFailures, IntrinsicsOutsideKernelsAndNestedLaunches) {
  EXPECT_THROW(__syncthreads(), std::logic_error);
  EXPECT_THROW(__syncwarp(), std::logic_error);
  EXPECT_NE(failure_of<std::runtime_error>([] {
              simt::launch(nested_launch_kernel, dim3(1), dim3(2), 0, nullptr);
            }).find("dynamic parallelism"),
            std::string::npos);
  expect_emulator_still_works();
}

}  // namespace
