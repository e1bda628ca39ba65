#include "kernels/cuda_graph.h"

#include <exception>
#include <utility>

#include "kernels/caching_allocator.h"
#include "kernels/error.h"

namespace engine {

CudaGraph::~CudaGraph() {
  if (executable_ != nullptr) {
    try {
      cuda_runtime::graph_destroy(executable_);
    } catch (...) {
      // Destroying a graph only fails when the runtime is already gone.
    }
  }
}

CudaGraph::CudaGraph(CudaGraph&& other) noexcept
    : executable_(std::exchange(other.executable_, nullptr)),
      nodes_(std::exchange(other.nodes_, 0)) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    CudaGraph dying(std::move(*this));
    executable_ = std::exchange(other.executable_, nullptr);
    nodes_ = std::exchange(other.nodes_, 0);
  }
  return *this;
}

CudaGraph CudaGraph::capture(const Stream& stream, const std::string& what,
                             const std::function<void()>& work) {
  if (!stream.device().is_cuda()) {
    fail("capturing " + what + " as a CUDA graph: the stream is on " + stream.device().str() +
         ", not a CUDA device");
  }
  const std::string context = "capturing " + what + " as a CUDA graph";
  // The capturing thread's own calls: the loader's threads may allocate meanwhile.
  const uint64_t before = CachingAllocator::calls_on_this_thread();
  cuda_runtime::stream_begin_capture(stream.native());
  try {
    work();
  } catch (const std::exception& error) {
    cuda_runtime::stream_abandon_capture(stream.native());
    fail(context + ": " + error.what());
  }
  const uint64_t calls = CachingAllocator::calls_on_this_thread() - before;
  if (calls != 0) {
    cuda_runtime::stream_abandon_capture(stream.native());
    fail(context + ": the work allocated or freed memory while captured (" + std::to_string(calls) +
         " caching-allocator calls): its buffers must exist before the capture and outlive "
         "the graph");
  }
  cuda_runtime::CapturedGraph captured;
  try {
    captured = cuda_runtime::stream_end_capture(stream.native());
  } catch (const std::exception& error) {
    fail(context +
         " failed (something in it synchronized with the host, allocated, or forked a "
         "stream it did not join again): " +
         error.what());
  }
  CudaGraph graph;
  graph.executable_ = captured.executable;
  graph.nodes_ = captured.nodes;
  return graph;
}

void CudaGraph::replay(const Stream& stream) const {
  if (executable_ == nullptr) fail("CudaGraph::replay: no graph was captured");
  cuda_runtime::graph_launch(executable_, stream.native());
}

}  // namespace engine
