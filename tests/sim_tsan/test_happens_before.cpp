// No false positives: each happens-before edge CUDA promises (sim/cuda/happens_before.h)
// orders a kernel's writes on one stream before the reads on the other side, so this suite,
// built under ThreadSanitizer with halt_on_error, passes only when TSan stays silent; the
// values are checked too. The planted programs next to it show that TSan does report when
// the edge is missing.
#include "tests/sim_tsan/stream_kernels.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

constexpr int kN = 300;  // five blocks, the last one partial

class HappensBefore : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&written), kN * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&doubled), kN * sizeof(float)), cudaSuccess);
  }
  void TearDown() override {
    EXPECT_EQ(cudaFree(written), cudaSuccess);
    EXPECT_EQ(cudaFree(doubled), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(a), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(b), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }

  void write_on(cudaStream_t stream, float base) {
    engine::cuda::launch(sim_tsan::write_ramp_kernel, sim_tsan::blocks_for(kN),
                         dim3(sim_tsan::kThreads), 0, stream, written, base, kN);
  }
  // write_on(stream), then a record of `event` (created here) after it.
  void write_and_record_on(cudaStream_t stream, float base, cudaEvent_t& event) {
    ASSERT_EQ(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), cudaSuccess);
    write_on(stream, base);
    ASSERT_EQ(cudaEventRecord(event, stream), cudaSuccess);
  }
  void double_on(cudaStream_t stream) {
    engine::cuda::launch(sim_tsan::read_double_kernel, sim_tsan::blocks_for(kN),
                         dim3(sim_tsan::kThreads), 0, stream, written, doubled, kN);
  }
  // Host reads (device memory is host memory on the sim device).
  static void expect_ramp(const float* values, float base, float factor = 1.f) {
    for (int i = 0; i < kN; ++i)
      ASSERT_EQ(values[i], factor * (base + static_cast<float>(i))) << i;
  }

  cudaStream_t a = nullptr, b = nullptr;
  float* written = nullptr;
  float* doubled = nullptr;
};

TEST_F(HappensBefore, TheHostsWritesComeBeforeTheWorkItQueues) {
  for (int i = 0; i < kN; ++i)
    written[i] = static_cast<float>(i);
  double_on(a);
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  expect_ramp(doubled, 0.f, 2.f);
}

TEST_F(HappensBefore, AStreamRunsItsKernelsInOrder) {
  write_on(a, 1.f);
  double_on(a);
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  expect_ramp(doubled, 1.f, 2.f);
}

TEST_F(HappensBefore, AWaitOrdersTheOtherStreamAfterTheRecord) {
  sim_tsan::Gate gate;
  gate.hold(b);  // b reads after a has written: in real time only, not for TSan
  cudaEvent_t written_event = nullptr;
  write_and_record_on(a, 2.f, written_event);
  gate.open_after(a);
  ASSERT_EQ(cudaStreamWaitEvent(b, written_event, 0), cudaSuccess);
  double_on(b);
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  expect_ramp(doubled, 2.f, 2.f);
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);  // the gate's last use, before it goes
  EXPECT_EQ(cudaEventDestroy(written_event), cudaSuccess);
}

// A replay runs what was captured in its order, the forked stream's kernel before the join, and
// is ordered like any work queued on its stream: after the host's writes before the launch, and
// before the host's reads after a synchronize. The host writes new input between replays.
TEST_F(HappensBefore, AGraphReplayIsOrderedLikeTheWorkItCaptured) {
  cudaEvent_t forked = nullptr, joined = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  double_on(a);
  ASSERT_EQ(cudaEventRecord(forked, a), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(b, forked, 0), cudaSuccess);
  write_on(b, 7.f);
  ASSERT_EQ(cudaEventRecord(joined, b), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(a, joined, 0), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(a, &graph), cudaSuccess);
  cudaGraphExec_t executable = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&executable, graph, 0), cudaSuccess);
  for (const float base : {1.f, 2.f}) {
    for (int i = 0; i < kN; ++i)
      written[i] = base + static_cast<float>(i);
    ASSERT_EQ(cudaGraphLaunch(executable, a), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
    expect_ramp(doubled, base, 2.f);  // the host's values, doubled before b overwrote them
    expect_ramp(written, 7.f);
  }
  EXPECT_EQ(cudaGraphExecDestroy(executable), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(forked), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(joined), cudaSuccess);
}

TEST_F(HappensBefore, EventSynchronizeOrdersTheHostAfterTheRecord) {
  cudaEvent_t written_event = nullptr;
  write_and_record_on(a, 3.f, written_event);
  ASSERT_EQ(cudaEventSynchronize(written_event), cudaSuccess);
  expect_ramp(written, 3.f);
  EXPECT_EQ(cudaEventDestroy(written_event), cudaSuccess);
}

TEST_F(HappensBefore, AnEventQueryThatSaysDoneOrdersTheHostAfterTheRecord) {
  cudaEvent_t written_event = nullptr;
  write_and_record_on(a, 4.f, written_event);
  cudaError_t status = cudaErrorNotReady;
  while ((status = cudaEventQuery(written_event)) == cudaErrorNotReady)
    std::this_thread::yield();
  ASSERT_EQ(status, cudaSuccess);
  expect_ramp(written, 4.f);
  EXPECT_EQ(cudaEventDestroy(written_event), cudaSuccess);
}

TEST_F(HappensBefore, StreamSynchronizeOrdersTheHostAfterTheStream) {
  write_on(a, 5.f);
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  expect_ramp(written, 5.f);
}

TEST_F(HappensBefore, AStreamQueryThatSaysDoneOrdersTheHostAfterTheStream) {
  write_on(a, 6.f);
  cudaError_t status = cudaErrorNotReady;
  while ((status = cudaStreamQuery(a)) == cudaErrorNotReady)
    std::this_thread::yield();
  ASSERT_EQ(status, cudaSuccess);
  expect_ramp(written, 6.f);
}

TEST_F(HappensBefore, DeviceSynchronizeOrdersTheHostAfterEveryStream) {
  write_on(a, 7.f);
  engine::cuda::launch(sim_tsan::write_ramp_kernel, sim_tsan::blocks_for(kN),
                       dim3(sim_tsan::kThreads), 0, b, doubled, 70.f, kN);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_ramp(written, 7.f);
  expect_ramp(doubled, 70.f);
}

TEST_F(HappensBefore, APageableCopyIsSynchronous) {
  write_on(a, 8.f);
  std::vector<float> host(kN, -1.f);  // pageable: the copy returns once it has run
  ASSERT_EQ(cudaMemcpyAsync(host.data(), written, kN * sizeof(float), cudaMemcpyDeviceToHost, a),
            cudaSuccess);
  expect_ramp(host.data(), 8.f);
  // And the other way: the host may reuse its buffer as soon as the call returns.
  std::vector<float> ramp(kN);
  for (int i = 0; i < kN; ++i)
    ramp[i] = 80.f + static_cast<float>(i);
  ASSERT_EQ(cudaMemcpyAsync(written, ramp.data(), kN * sizeof(float), cudaMemcpyHostToDevice, b),
            cudaSuccess);
  ramp.assign(kN, 0.f);
  double_on(b);
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  expect_ramp(doubled, 80.f, 2.f);
}

TEST_F(HappensBefore, AFreeWaitsForTheKernelsThatUseTheMemory) {
  float* scratch = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&scratch), kN * sizeof(float)), cudaSuccess);
  engine::cuda::launch(sim_tsan::write_ramp_kernel, sim_tsan::blocks_for(kN),
                       dim3(sim_tsan::kThreads), 0, a, scratch, 9.f, kN);
  engine::cuda::launch(sim_tsan::read_double_kernel, sim_tsan::blocks_for(kN),
                       dim3(sim_tsan::kThreads), 0, a, scratch, doubled, kN);
  // No synchronize: the free must wait for both kernels, and it orders the host after them
  // (freeing memory a kernel still reads, unordered, would be a race with the free).
  ASSERT_EQ(cudaFree(scratch), cudaSuccess);
  expect_ramp(doubled, 9.f, 2.f);
}

}  // namespace
