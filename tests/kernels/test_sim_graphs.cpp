// Stream capture and CUDA graphs on the sim device (sim/cuda/capture.h, graphs.h): captured work
// runs only when its graph is launched, every launch runs all of it in order, forks must be
// joined, and what the runtime refuses during a capture is refused and invalidates it.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "sim/cuda/streams.h"

namespace {

class SimGraphs : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming), cudaSuccess);
    ASSERT_EQ(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming), cudaSuccess);
  }
  void TearDown() override {
    EXPECT_EQ(cudaEventDestroy(forked), cudaSuccess);
    EXPECT_EQ(cudaEventDestroy(joined), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(a), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(b), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // every test reads the errors it provokes
  }
  // Ends the capture on `a`, expecting `status`; the graph, or nullptr.
  cudaGraph_t end_capture(cudaError_t status) {
    cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(1);
    EXPECT_EQ(cudaStreamEndCapture(a, &graph), status);
    if (status != cudaSuccess) {
      EXPECT_EQ(graph, nullptr);
      EXPECT_EQ(cudaGetLastError(), status);
    }
    return graph;
  }
  cudaStreamCaptureStatus capture_status(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    EXPECT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
    return status;
  }
  cudaStream_t a = nullptr, b = nullptr;
  cudaEvent_t forked = nullptr, joined = nullptr;
};

TEST_F(SimGraphs, CapturedWorkRunsOnlyWhenItsGraphIsLaunchedAndAllOfItEachTime) {
  int* device = nullptr;
  int* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), sizeof(int)), cudaSuccess);
  *pinned = 5;
  std::vector<int> seen;
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(capture_status(a), cudaStreamCaptureStatusActive);
  EXPECT_EQ(capture_status(b), cudaStreamCaptureStatusNone);
  // The pinned value as the graph's launch finds it, doubled on the device, read back.
  ASSERT_EQ(cudaMemcpyAsync(device, pinned, sizeof(int), cudaMemcpyHostToDevice, a), cudaSuccess);
  ASSERT_EQ(engine::sim::enqueue(a, [device] { *device *= 2; }), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, device, sizeof(int), cudaMemcpyDeviceToHost, a), cudaSuccess);
  ASSERT_EQ(engine::sim::enqueue(a, [&seen, pinned] { seen.push_back(*pinned); }), cudaSuccess);
  cudaGraph_t graph = end_capture(cudaSuccess);
  EXPECT_EQ(capture_status(a), cudaStreamCaptureStatusNone);
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  EXPECT_TRUE(seen.empty());  // recorded, not run
  EXPECT_EQ(*pinned, 5);
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 4u);
  cudaGraphExec_t executable = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&executable, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);  // the executable keeps the work
  for (int launch = 0; launch < 3; ++launch) {
    ASSERT_EQ(cudaGraphLaunch(executable, a), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
    *pinned += 1;  // the next launch reads what the host writes between launches
  }
  EXPECT_EQ(seen, (std::vector<int>{10, 22, 46}));
  ASSERT_EQ(cudaGraphExecDestroy(executable), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(executable), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

TEST_F(SimGraphs, AForkedStreamMustBeJoinedBeforeTheCaptureEnds) {
  std::vector<char> order;
  for (const bool join : {false, true}) {
    ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
    ASSERT_EQ(engine::sim::enqueue(a, [&order] { order.push_back('a'); }), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(forked, a), cudaSuccess);
    ASSERT_EQ(cudaStreamWaitEvent(b, forked, 0), cudaSuccess);  // b joins the capture
    EXPECT_EQ(capture_status(b), cudaStreamCaptureStatusActive);
    EXPECT_EQ(cudaEventQuery(forked), cudaErrorCapturedEvent);
    EXPECT_EQ(cudaGetLastError(), cudaErrorCapturedEvent);
    ASSERT_EQ(engine::sim::enqueue(b, [&order] { order.push_back('b'); }), cudaSuccess);
    cudaGraph_t wrong = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(b, &wrong), cudaErrorStreamCaptureUnmatched);
    EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureUnmatched);
    if (join) {
      ASSERT_EQ(cudaEventRecord(joined, b), cudaSuccess);
      ASSERT_EQ(cudaStreamWaitEvent(a, joined, 0), cudaSuccess);
      ASSERT_EQ(engine::sim::enqueue(a, [&order] { order.push_back('c'); }), cudaSuccess);
    }
    cudaGraph_t graph = end_capture(join ? cudaSuccess : cudaErrorStreamCaptureUnjoined);
    EXPECT_EQ(capture_status(b), cudaStreamCaptureStatusNone);  // the capture took b along
    if (!join) continue;
    cudaGraphExec_t executable = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&executable, graph, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(executable, a), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
    EXPECT_EQ(order, (std::vector<char>{'a', 'b', 'c'}));
    EXPECT_EQ(cudaGraphExecDestroy(executable), cudaSuccess);
    EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  }
  // Once the capture has ended, the event's captured record is no event to wait for.
  EXPECT_EQ(cudaStreamWaitEvent(b, forked, 0), cudaErrorCapturedEvent);
  EXPECT_EQ(cudaGetLastError(), cudaErrorCapturedEvent);
  ASSERT_EQ(cudaEventRecord(forked, a), cudaSuccess);  // recorded again: an ordinary event
  EXPECT_EQ(cudaStreamWaitEvent(b, forked, 0), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(forked), cudaSuccess);
}

TEST_F(SimGraphs, SynchronizingACapturingStreamInvalidatesTheCapture) {
  int ran = 0;
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeRelaxed), cudaSuccess);
  ASSERT_EQ(engine::sim::enqueue(a, [&ran] { ++ran; }), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(a), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(capture_status(a), cudaStreamCaptureStatusInvalidated);
  EXPECT_EQ(engine::sim::enqueue(a, [&ran] { ++ran; }), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
  end_capture(cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(ran, 0);
  // A query of the capturing stream does the same; so does a copy from pageable memory.
  int pageable = 1;
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, sizeof(int)), cudaSuccess);
  for (int call = 0; call < 2; ++call) {
    ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeRelaxed), cudaSuccess);
    const cudaError_t refused =
        call == 0 ? cudaStreamQuery(a)
                  : cudaMemcpyAsync(device, &pageable, sizeof(int), cudaMemcpyHostToDevice, a);
    EXPECT_EQ(refused, cudaErrorStreamCaptureUnsupported);
    EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
    end_capture(cudaErrorStreamCaptureInvalidated);
  }
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

// cudaMalloc stands for the potentially unsafe calls: refused from any thread under a global
// capture, from the capturing thread only under a thread-local one, never under a relaxed one.
TEST_F(SimGraphs, UnsafeCallsAreRefusedAsTheCaptureModeSays) {
  const auto malloc_from = [](bool other_thread) {
    cudaError_t status = cudaSuccess;
    const auto call = [&status] {
      void* block = nullptr;
      status = cudaMalloc(&block, 256);
      if (status == cudaSuccess) status = cudaFree(block);
      cudaGetLastError();
    };
    if (other_thread) {
      std::thread(call).join();
    } else {
      call();
    }
    return status;
  };
  struct Case {
    cudaStreamCaptureMode mode;
    bool other_thread;
    cudaError_t expected;
  };
  for (const Case c :
       {Case{cudaStreamCaptureModeGlobal, true, cudaErrorStreamCaptureUnsupported},
        Case{cudaStreamCaptureModeThreadLocal, true, cudaSuccess},
        Case{cudaStreamCaptureModeThreadLocal, false, cudaErrorStreamCaptureUnsupported},
        Case{cudaStreamCaptureModeRelaxed, false, cudaSuccess}}) {
    SCOPED_TRACE(testing::Message() << "mode " << c.mode << ", other thread " << c.other_thread);
    ASSERT_EQ(cudaStreamBeginCapture(a, c.mode), cudaSuccess);
    EXPECT_EQ(malloc_from(c.other_thread), c.expected);
    const cudaError_t ended =
        c.expected == cudaSuccess ? cudaSuccess : cudaErrorStreamCaptureInvalidated;
    if (cudaGraph_t graph = end_capture(ended)) {
      EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
    }
  }
}

TEST_F(SimGraphs, CaptureCallsOutOfTurnAreErrors) {
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(a, &graph), cudaErrorIllegalState);  // nothing to end
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalState);
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalState);
  // A global capture ends on the thread that began it.
  cudaError_t elsewhere = cudaSuccess;
  std::thread([&] {
    cudaGraph_t g = nullptr;
    elsewhere = cudaStreamEndCapture(a, &g);
    cudaGetLastError();
  }).join();
  EXPECT_EQ(elsewhere, cudaErrorStreamCaptureWrongThread);
  // b's work is not part of a's capture: waiting on it would cross the capture's boundary.
  ASSERT_EQ(cudaEventRecord(joined, b), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(a, joined, 0), cudaErrorStreamCaptureIsolation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureIsolation);
  end_capture(cudaErrorStreamCaptureInvalidated);
  // A graph launched into a capture would be a child graph: not emulated.
  ASSERT_EQ(cudaStreamBeginCapture(b, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(b, &graph), cudaSuccess);
  cudaGraphExec_t executable = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&executable, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaGraphLaunch(executable, a), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
  cudaGraph_t empty = end_capture(cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(empty), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(executable), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

}  // namespace
