// The sim device's emulated CUDA runtime (sim/cuda/): stream order, waits on events across
// streams, tracked allocations and their errors, memsets and synchronous copies, memory and
// pointer queries, device properties, devices and capacity from the environment
// (ctest sets ENGINE_SIM_DEVICE_COUNT=2 and ENGINE_SIM_DEVICE_MEMORY_MIB=64).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "sim/cuda/streams.h"

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

// Holds `stream` until the returned promise is set: work queued on it later waits behind.
std::promise<void> hold(cudaStream_t stream) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  EXPECT_EQ(engine::sim::enqueue(stream, [released] { released.wait(); }), cudaSuccess);
  return release;
}

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
  // The first task holds the stream: nothing after it may run, and the host does not wait.
  std::promise<void> release = hold(a);
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
  std::promise<void> release = hold(a);
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

TEST_F(SimRuntime, MemoryInfoFollowsTheAllocationsOfTheCurrentDevice) {
  size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EQ(total, size_t{64} << 20);
  EXPECT_EQ(free, total);
  void* block = nullptr;
  ASSERT_EQ(cudaMalloc(&block, 10u << 20), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EQ(free, total - (10u << 20));
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);  // device 1 holds nothing
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EQ(free, total);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaFree(block), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EQ(free, total);
  EXPECT_EQ(cudaMemGetInfo(nullptr, &total), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST_F(SimRuntime, PointerAttributesTellDevicePinnedAndPageableMemory) {
  void* device = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device, 256), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 256), cudaSuccess);
  int pageable = 0;
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, static_cast<char*>(device) + 100), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 1);
  EXPECT_EQ(attributes.devicePointer, static_cast<char*>(device) + 100);
  EXPECT_EQ(attributes.hostPointer, nullptr);
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, pinned), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  EXPECT_EQ(attributes.hostPointer, pinned);
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, &pageable), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeUnregistered);
  EXPECT_EQ(attributes.devicePointer, nullptr);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

TEST_F(SimRuntime, DevicePropertiesAreAnH100sWithTheConfiguredMemory) {
  cudaDeviceProp properties{};
  ASSERT_EQ(cudaGetDeviceProperties(&properties, 1), cudaSuccess);
  EXPECT_EQ(properties.major, 9);
  EXPECT_EQ(properties.minor, 0);
  EXPECT_EQ(properties.multiProcessorCount, 132);
  EXPECT_EQ(properties.warpSize, 32);
  EXPECT_EQ(properties.maxThreadsPerBlock, 1024);
  EXPECT_EQ(properties.sharedMemPerBlock, size_t{48} << 10);
  EXPECT_EQ(properties.sharedMemPerBlockOptin, size_t{227} << 10);
  EXPECT_EQ(properties.totalGlobalMem, size_t{64} << 20);
  int value = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  EXPECT_EQ(value, 132);
  ASSERT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrMaxBlockDimZ, 0), cudaSuccess);
  EXPECT_EQ(value, 64);
  ASSERT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0),
            cudaSuccess);
  EXPECT_EQ(value, 227 << 10);
  EXPECT_EQ(cudaGetDeviceProperties(&properties, 2), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, -1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

TEST_F(SimRuntime, MemsetsFillTheirRangeInStreamOrderAndStayInsideAllocations) {
  unsigned char* device = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), 64), cudaSuccess);
  std::vector<unsigned char> host(64, 7), back(64, 0);
  EXPECT_EQ(cudaMemcpyAsync(device, host.data(), 64, cudaMemcpyHostToDevice, a), cudaSuccess);
  // Queued after the copy on the same stream: bytes 8..23 become 0xAB, the rest stay 7.
  EXPECT_EQ(cudaMemsetAsync(device + 8, 0xAB, 16, a), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(back.data(), device, 64, cudaMemcpyDeviceToHost, a), cudaSuccess);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(back[i], i >= 8 && i < 24 ? 0xAB : 7) << "byte " << i;
  // cudaMemset waits for the device's streams, so it lands after what stream b still holds.
  std::promise<void> release = hold(b);
  EXPECT_EQ(cudaMemsetAsync(device, 1, 64, b), cudaSuccess);
  std::future<cudaError_t> cleared =
      std::async(std::launch::async, [device] { return cudaMemset(device, 0, 64); });
  EXPECT_EQ(cleared.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  release.set_value();
  EXPECT_EQ(cleared.get(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(back.data(), device, 64, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, std::vector<unsigned char>(64, 0));
  // Past the allocation's end, and pageable host memory.
  EXPECT_EQ(cudaMemsetAsync(device + 60, 0, 5, a), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(host.data(), 0, 64), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

TEST_F(SimRuntime, SynchronousCopiesCheckTheirKindAndWaitForTheStreams) {
  unsigned char* device = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), 32), cudaSuccess);
  std::vector<unsigned char> host(32, 3), back(32, 0);
  std::promise<void> release = hold(a);
  const std::vector<unsigned char> later(32, 9);
  ASSERT_EQ(cudaMemsetAsync(device, 9, 32, a), cudaSuccess);  // queued behind the gate
  std::future<cudaError_t> copied = std::async(std::launch::async, [&] {
    return cudaMemcpy(back.data(), device, 32, cudaMemcpyDeviceToHost);
  });
  EXPECT_EQ(copied.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  release.set_value();
  EXPECT_EQ(copied.get(), cudaSuccess);
  EXPECT_EQ(back, later);  // the copy saw the memset queued before it
  EXPECT_EQ(cudaMemcpy(device, host.data(), 32, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(back.data(), device, 32, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(back, host);
  EXPECT_EQ(cudaMemcpy(device, host.data(), 32, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(device, host.data(), 33, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(device, host.data(), 32, static_cast<cudaMemcpyKind>(7)),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

TEST_F(SimRuntime, StreamOrderedFreesReleaseTheMemoryWhenTheStreamGetsThere) {
  void* block = nullptr;
  ASSERT_EQ(cudaMallocAsync(&block, 8u << 20, a), cudaSuccess);
  size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EQ(free, total - (8u << 20));
  std::promise<void> release = hold(a);
  EXPECT_EQ(cudaFreeAsync(block, a), cudaSuccess);  // returns at once, behind the gate
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EQ(free, total - (8u << 20));
  release.set_value();
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EQ(free, total);
  int on_the_stack = 0;
  EXPECT_EQ(cudaFreeAsync(&on_the_stack, a), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

}  // namespace
