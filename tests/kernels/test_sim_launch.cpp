// Kernel launches on the sim device (sim/cuda/launch.h): queued on the stream, not run by
// the launch call; parameters copied at the launch; a bad configuration fails the launch call
// with CUDA's error through CHECK_CUDA; a kernel fault becomes the sticky
// cudaErrorLaunchFailure (in a child process: the error lasts for the process's life); a launch
// census counts each kernel under the name cudaFuncGetName gives it; ENGINE_SIM_KERNELS=skip
// queues and counts launches but runs no kernel.
#include "sim/cuda/kernel_prelude.h"
// After the prelude: launch() is engine::sim::launch here, as in the CUDA backend's .cu files.
#include "kernels/cuda/launch.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <future>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/error.h"
#include "kernels/kernel_launches.h"
#include "sim/cuda/streams.h"

namespace {

__global__ void scale_kernel(float* x, float factor, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] *= factor;
}

__global__ void faulting_kernel(int n) {
  if (static_cast<int>(threadIdx.x) == n) throw std::runtime_error("planted fault");
}

class SimLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&values), kN * sizeof(float)), cudaSuccess);
    for (int i = 0; i < kN; ++i)
      values[i] = 1.f;  // device memory is host memory on the sim device
  }
  void TearDown() override {
    EXPECT_EQ(cudaFree(values), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  }
  static constexpr int kN = 100;
  cudaStream_t stream = nullptr;
  float* values = nullptr;
};

TEST_F(SimLaunch, AKernelRunsOnItsStreamWithTheParametersOfItsLaunch) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  ASSERT_EQ(engine::sim::enqueue(stream, [released] { released.wait(); }), cudaSuccess);
  float factor = 3.f;
  engine::cuda::launch(scale_kernel, dim3(4), dim3(32), 0, stream, values, factor, kN);
  factor = 100.f;  // too late: the launch copied 3
  EXPECT_EQ(values[0], 1.f) << "the launch call must only queue the kernel";
  release.set_value();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  for (int i = 0; i < kN; ++i)
    ASSERT_EQ(values[i], 3.f) << i;
}

std::string launch_error(dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t stream,
                         float* values) {
  try {
    engine::cuda::launch(scale_kernel, grid, block, smem_bytes, stream, values, 2.f, 1);
  } catch (const engine::Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(SimLaunch, ABadConfigurationFailsTheLaunchAsCudaDoes) {
  EXPECT_NE(launch_error(dim3(1), dim3(2048), 0, stream, values)
                .find("CUDA error cudaErrorInvalidConfiguration (invalid configuration argument)"),
            std::string::npos);
  EXPECT_NE(
      launch_error(dim3(0), dim3(32), 0, stream, values).find("cudaErrorInvalidConfiguration"),
      std::string::npos);
  // Beyond 48 KiB a kernel needs cudaFuncSetAttribute first (DynamicSharedMemoryBeyond48KiB...).
  EXPECT_NE(
      launch_error(dim3(1), dim3(32), 48 * 1024 + 1, stream, values).find("cudaErrorInvalidValue"),
      std::string::npos);
  EXPECT_EQ(launch_error(dim3(1), dim3(32), 48 * 1024, stream, values), "");
  // Not sticky: the stream still works.
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(values[0], 2.f);
}

__global__ void dynamic_smem_kernel(float* out, int n) {
  DYNAMIC_SHARED_MEMORY(float, buffer);
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x))
    buffer[i] = static_cast<float>(i);
  __syncthreads();
  out[threadIdx.x] = buffer[n - 1 - static_cast<int>(threadIdx.x)];
}

std::string dynamic_smem_launch_error(size_t bytes, cudaStream_t stream, float* out) {
  try {
    engine::cuda::launch(dynamic_smem_kernel, dim3(1), dim3(32), bytes, stream, out,
                         static_cast<int>(bytes / sizeof(float)));
  } catch (const engine::Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(SimLaunch, DynamicSharedMemoryBeyond48KiBNeedsTheKernelsOptIn) {
  constexpr size_t kBytes = 100 * 1024;
  EXPECT_NE(dynamic_smem_launch_error(kBytes, stream, values).find("cudaErrorInvalidValue"),
            std::string::npos);
  engine::cuda::allow_dynamic_shared_memory(dynamic_smem_kernel, kBytes);
  EXPECT_EQ(dynamic_smem_launch_error(kBytes, stream, values), "");
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const int n = static_cast<int>(kBytes / sizeof(float));
  for (int i = 0; i < 32; ++i)
    ASSERT_EQ(values[i], static_cast<float>(n - 1 - i)) << i;
  // The opt-in is a ceiling, per function: more than it still fails, another kernel has none.
  EXPECT_NE(dynamic_smem_launch_error(kBytes + 16, stream, values).find("cudaErrorInvalidValue"),
            std::string::npos);
  EXPECT_NE(launch_error(dim3(1), dim3(32), kBytes, stream, values).find("cudaErrorInvalidValue"),
            std::string::npos);
}

TEST_F(SimLaunch, FuncSetAttributeRefusesWhatCudaRefuses) {
  const void* kernel = reinterpret_cast<const void*>(dynamic_smem_kernel);
  EXPECT_EQ(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 228 * 1024),  // sm_90's opt-in limit is 227 KiB
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, -1),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncSetAttribute(nullptr, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024),
            cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 50),
            cudaSuccess);
  EXPECT_EQ(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 101),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncSetAttribute(kernel, cudaFuncAttributeRequiredClusterWidth, 2),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);  // the last failure, then cleared
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// Runs in the death test's child: exits 3 when everything after the fault is as CUDA has it.
[[noreturn]] void fault_and_check_sticky_error() {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) std::exit(10);
  // The stream is held until the launch has returned: otherwise the fault may come first and
  // the launch's own cudaGetLastError report it (as CUDA may: errors of earlier work surface
  // at any later call).
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  if (engine::sim::enqueue(stream, [released] { released.wait(); }) != cudaSuccess) std::exit(15);
  engine::cuda::launch(faulting_kernel, dim3(2), dim3(64), 0, stream, 5);  // queued: no error yet
  release.set_value();
  if (cudaStreamSynchronize(stream) != cudaErrorLaunchFailure) std::exit(11);
  void* memory = nullptr;
  if (cudaMalloc(&memory, 16) != cudaErrorLaunchFailure) std::exit(12);
  if (cudaGetLastError() != cudaErrorLaunchFailure) std::exit(13);
  if (cudaGetLastError() != cudaErrorLaunchFailure) std::exit(14);  // sticky: never cleared
  std::exit(3);
}

TEST(SimLaunchDeathTest, AKernelFaultIsAStickyLaunchFailureNamingTheKernel) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // stream workers are threads
  EXPECT_EXIT(fault_and_check_sticky_error(), ::testing::ExitedWithCode(3),
              "kernel .*faulting_kernel.* faulted: .*planted fault");
}

TEST_F(SimLaunch, ACensusCountsEachKernelUnderItsName) {
  const uint64_t before = engine::kernel_launches();
  engine::start_launch_census();
  for (int i = 0; i < 3; ++i)
    engine::cuda::launch(scale_kernel, dim3(4), dim3(32), 0, stream, values, 2.f, kN);
  engine::cuda::launch(dynamic_smem_kernel, dim3(1), dim3(32), 128, stream, values, 32);
  const std::vector<std::pair<const void*, uint64_t>> census = engine::stop_launch_census();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(engine::kernel_launches() - before, 4u);
  ASSERT_EQ(census.size(), 2u);
  EXPECT_EQ(census[0], std::make_pair(reinterpret_cast<const void*>(scale_kernel), uint64_t{3}));
  EXPECT_EQ(census[1].second, 1u);
  const std::string name = engine::cuda_runtime::kernel_function_name(census[0].first);
  EXPECT_NE(name.find("scale_kernel(float*, float, int)"), std::string::npos) << name;
  EXPECT_NE(engine::cuda_runtime::kernel_function_name(census[1].first).find("dynamic_smem_kernel"),
            std::string::npos);
  // Stopped: launches count in all, not per kernel.
  engine::cuda::launch(scale_kernel, dim3(4), dim3(32), 0, stream, values, 2.f, kN);
  EXPECT_TRUE(engine::stop_launch_census().empty());
  const char* unnamed = nullptr;
  EXPECT_EQ(cudaFuncGetName(&unnamed, nullptr), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
}

// Runs in the death test's child (a fresh process: the setting is read once): exits 3 when the
// skipped launch was counted, ran nothing, and a bad configuration still failed.
[[noreturn]] void launch_skipped_kernels() {
  setenv("ENGINE_SIM_KERNELS", "skip", 1);
  float* values = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&values), sizeof(float)) != cudaSuccess) std::exit(10);
  values[0] = 1.f;
  const uint64_t before = engine::kernel_launches();
  engine::cuda::launch(scale_kernel, dim3(1), dim3(32), 0, nullptr, values, 2.f, 1);
  if (cudaDeviceSynchronize() != cudaSuccess) std::exit(11);
  if (engine::kernel_launches() - before != 1) std::exit(12);
  if (values[0] != 1.f) std::exit(13);  // ran
  if (launch_error(dim3(1), dim3(2048), 0, nullptr, values).empty()) std::exit(14);
  std::exit(3);
}

// The same with a value the sim device does not take: the launch fails, naming it.
[[noreturn]] void launch_with_bad_kernel_mode() {
  setenv("ENGINE_SIM_KERNELS", "sometimes", 1);
  float* values = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&values), sizeof(float)) != cudaSuccess) std::exit(10);
  const std::string error = launch_error(dim3(1), dim3(32), 0, nullptr, values);
  std::exit(error.find("cudaErrorInvalidValue") != std::string::npos ? 3 : 11);
}

TEST(SimLaunchDeathTest, SkippedKernelsAreCountedButNotRun) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(launch_skipped_kernels(), ::testing::ExitedWithCode(3), "");
  EXPECT_EXIT(launch_with_bad_kernel_mode(), ::testing::ExitedWithCode(3),
              "launch of .*scale_kernel.* rejected: ENGINE_SIM_KERNELS=sometimes, where the sim "
              "device takes run \\(the default\\) or skip");
}

}  // namespace
