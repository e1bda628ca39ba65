// The sim device's emulated CUDA runtime (kernels/sim/): stream order, waits on events across
// streams, tracked allocations and their errors, devices and capacity from the environment
// (ctest sets ENGINE_SIM_DEVICE_COUNT=2 and ENGINE_SIM_DEVICE_MEMORY_MIB=64).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "kernels/sim/streams.h"

namespace {

class SimRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    EXPECT_EQ(cudaStreamDestroy(a), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(b), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // every test reads the errors it provokes
  }
  cudaStream_t a = nullptr, b = nullptr;
};

TEST_F(SimRuntime, DevicesComeFromTheEnvironment) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(cudaSetDevice(1), cudaSuccess);
  int device = -1;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 1);
  EXPECT_EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // not sticky: read once, then cleared
  EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST_F(SimRuntime, AStreamRunsItsWorkInOrderOffTheHostThread) {
  std::vector<int> order;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  // The first task holds the stream: nothing after it may run, and the host does not wait.
  ASSERT_EQ(engine::sim::enqueue(a, [released] { released.wait(); }), cudaSuccess);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(engine::sim::enqueue(a, [&order, i] { order.push_back(i); }), cudaSuccess);
  }
  EXPECT_EQ(cudaStreamQuery(a), cudaErrorNotReady);
  EXPECT_TRUE(order.empty());
  release.set_value();
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(order[i], i);
  EXPECT_EQ(cudaStreamQuery(a), cudaSuccess);
}

TEST_F(SimRuntime, AStreamWaitsForAnEventRecordedOnAnother) {
  cudaEvent_t produced = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming), cudaSuccess);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> value{0};
  std::atomic<int> seen_by_b{-1};
  ASSERT_EQ(engine::sim::enqueue(a,
                                 [released, &value] {
                                   released.wait();
                                   value = 42;
                                 }),
            cudaSuccess);
  ASSERT_EQ(cudaEventRecord(produced, a), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(b, produced, 0), cudaSuccess);
  ASSERT_EQ(engine::sim::enqueue(b, [&] { seen_by_b = value.load(); }), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cudaEventQuery(produced), cudaErrorNotReady);
  EXPECT_EQ(cudaStreamQuery(b), cudaErrorNotReady);
  EXPECT_EQ(seen_by_b.load(), -1);
  release.set_value();
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  EXPECT_EQ(seen_by_b.load(), 42);
  EXPECT_EQ(cudaEventQuery(produced), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(produced), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(produced), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

TEST_F(SimRuntime, ElapsedTimeNeedsTimingEventsThatCompleted) {
  cudaEvent_t start = nullptr, end = nullptr, untimed = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&start, cudaEventDefault), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&end, cudaEventDefault), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
  float ms = -1.f;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, end), cudaErrorInvalidResourceHandle);  // unrecorded
  ASSERT_EQ(cudaEventRecord(start, a), cudaSuccess);
  ASSERT_EQ(
      engine::sim::enqueue(a, [] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }),
      cudaSuccess);
  ASSERT_EQ(cudaEventRecord(end, a), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(untimed, a), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(end), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, end), cudaSuccess);
  EXPECT_GE(ms, 4.f);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  for (cudaEvent_t event : {start, end, untimed})
    EXPECT_EQ(cudaEventDestroy(event), cudaSuccess);
}

TEST_F(SimRuntime, FreesOfUnknownPointersAndDoubleFreesAreInvalidValues) {
  void* device = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 1000), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&pinned, 1000, cudaHostAllocPortable), cudaSuccess);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(device) % 256, 0u);
  int on_the_stack = 0;
  EXPECT_EQ(cudaFree(&on_the_stack), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(static_cast<char*>(device) + 8), cudaErrorInvalidValue);  // inside one
  EXPECT_EQ(cudaFree(pinned), cudaErrorInvalidValue);                          // wrong kind
  EXPECT_EQ(cudaFreeHost(device), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaErrorInvalidValue);  // twice
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST_F(SimRuntime, AFreeWaitsForTheWorkQueuedOnTheDevice) {
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 64), cudaSuccess);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  ASSERT_EQ(engine::sim::enqueue(a, [released] { released.wait(); }), cudaSuccess);
  std::future<cudaError_t> freed = std::async(std::launch::async, [device] {
    return cudaFree(device);  // a host thread of its own: device 0 is its current device too
  });
  EXPECT_EQ(freed.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  release.set_value();
  EXPECT_EQ(freed.get(), cudaSuccess);
}

TEST_F(SimRuntime, EachDeviceHoldsItsConfiguredCapacity) {
  void* most = nullptr;
  void* more = nullptr;
  ASSERT_EQ(cudaMalloc(&most, 48u << 20), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&more, 32u << 20), cudaErrorMemoryAllocation);
  EXPECT_EQ(more, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);  // the other device has its own 64 MiB
  EXPECT_EQ(cudaMalloc(&more, 32u << 20), cudaSuccess);
  EXPECT_EQ(cudaFree(more), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaFree(most), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&more, 32u << 20), cudaSuccess);  // freed memory is available again
  EXPECT_EQ(cudaFree(more), cudaSuccess);
}

TEST_F(SimRuntime, CopiesAreCheckedAgainstTheAllocations) {
  void* device = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 64), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&pinned, 64, cudaHostAllocPortable), cudaSuccess);
  std::vector<unsigned char> host(64, 7);
  EXPECT_EQ(cudaMemcpyAsync(device, host.data(), 64, cudaMemcpyHostToDevice, a), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(pinned, device, 64, cudaMemcpyDefault, a), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  EXPECT_EQ(static_cast<unsigned char*>(pinned)[63], 7);
  // Past the end of the device allocation, and a kind that contradicts the pointers.
  EXPECT_EQ(cudaMemcpyAsync(device, host.data(), 65, cudaMemcpyHostToDevice, a),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpyAsync(host.data(), device, 64, cudaMemcpyHostToDevice, a),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpyAsync(device, pinned, 64, cudaMemcpyDefault, nullptr), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

}  // namespace
