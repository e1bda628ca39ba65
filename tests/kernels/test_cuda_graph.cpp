// engine::CudaGraph (kernels/cuda_graph.h): captured work runs only when replayed, each replay
// runs all of it on the buffers as they are then, and capture refuses work that allocates,
// synchronizes, or is not on a CUDA stream, leaving the stream usable. On the sim device in CI
// (its runtime's rules: sim/cuda/capture.h); skipped without a CUDA device.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda_graph.h"
#include "kernels/error.h"
#include "kernels/memory.h"
#include "kernels/ops/activation.h"
#include "kernels/runtime.h"
#include "kernels/tensor.h"
#include "tests/error_text.h"

namespace engine {
namespace {

using testing::contains;
using testing::error_of;

TEST(CudaGraph, NeedsACudaStream) {
  Stream cpu;
  const std::string text = error_of([&] { CudaGraph::capture(cpu, "a CPU step", [] {}); });
  EXPECT_TRUE(contains(text, "capturing a CPU step as a CUDA graph: the stream is on cpu"));
}

class CudaGraphOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  }
};

TEST_F(CudaGraphOnDevice, ReplaysItsKernelsOnTheBuffersAsTheyAreThen) {
  Stream stream(Device::cuda(0));
  const std::vector<float> first = {-1.f, 2.f, -3.f, 4.f}, second = {5.f, -6.f, 7.f, -8.f};
  Tensor x = Tensor::from_floats({4}, first).to(stream.device(), stream);
  Tensor y = Tensor::zeros({4}, DType::f32, stream.device(), stream);
  const CudaGraph graph = CudaGraph::capture(stream, "a ReLU", [&] { relu_forward(x, y, stream); });
  EXPECT_EQ(graph.nodes(), 1u);
  EXPECT_EQ(y.to_floats(stream), std::vector<float>(4, 0.f));  // captured, not run
  graph.replay(stream);
  EXPECT_EQ(y.to_floats(stream), (std::vector<float>{0.f, 2.f, 0.f, 4.f}));
  // New values in the same buffer: the next replay reads them.
  const Tensor update = Tensor::from_floats({4}, second).to(stream.device(), stream);
  copy_bytes("test", x.raw_data(), x.device(), update.raw_data(), update.device(),
             4 * sizeof(float), stream);
  graph.replay(stream);
  EXPECT_EQ(y.to_floats(stream), (std::vector<float>{5.f, 0.f, 7.f, 0.f}));
}

TEST_F(CudaGraphOnDevice, RefusesWorkThatAllocatesOrSynchronizesAndLeavesTheStreamUsable) {
  Stream stream(Device::cuda(0));
  Tensor x = Tensor::from_floats({2}, {-1.f, 1.f}).to(stream.device(), stream);
  { Tensor cached = Tensor::empty({2}, DType::f32, stream.device()); }  // a block to reuse
  std::string text = error_of([&] {
    CudaGraph::capture(stream, "an allocating step", [&] {
      Tensor scratch = Tensor::empty({2}, DType::f32, stream.device());
      relu_forward(x, scratch, stream);
    });
  });
  EXPECT_TRUE(contains(text,
                       "capturing an allocating step as a CUDA graph: the work allocated or freed "
                       "memory while captured (2 caching-allocator calls)"));
  text = error_of(
      [&] { CudaGraph::capture(stream, "a synchronizing step", [&] { stream.synchronize(); }); });
  EXPECT_TRUE(contains(text, "capturing a synchronizing step as a CUDA graph: "));
  EXPECT_TRUE(contains(text, "cudaErrorStreamCaptureUnsupported"));
  // Another thread's allocations are its own business: the loader's go on during a capture.
  const CudaGraph beside = CudaGraph::capture(stream, "an empty step beside a loader", [&] {
    std::thread([&] { Tensor batch = Tensor::empty({4096}, DType::f32, stream.device()); }).join();
  });
  EXPECT_TRUE(beside.defined());
  // The failed captures ended: the stream runs work again, and captures again.
  Tensor y = Tensor::zeros({2}, DType::f32, stream.device(), stream);
  const CudaGraph graph = CudaGraph::capture(stream, "a ReLU", [&] { relu_forward(x, y, stream); });
  graph.replay(stream);
  EXPECT_EQ(y.to_floats(stream), (std::vector<float>{0.f, 1.f}));
  EXPECT_TRUE(contains(error_of([] { CudaGraph().replay(Stream()); }), "no graph was captured"));
}

}  // namespace
}  // namespace engine
