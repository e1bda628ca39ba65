#include "kernels/cuda_graph.h"

#include <exception>
#include <utility>

#include "kernels/error.h"
#include "kernels/memory.h"

namespace engine {
namespace {

// What the device's caching allocator has done so far: equal before and after a capture when
// the captured work neither allocated nor freed.
struct AllocatorActivity {
  uint64_t allocations = 0;
  size_t bytes_in_use = 0;
  bool operator==(const AllocatorActivity&) const = default;
};

AllocatorActivity activity(const Stream& stream) {
  const CachingAllocator::Stats stats = device_allocator(stream.device().index).stats();
  return {stats.system_allocations + stats.cache_hits, stats.bytes_in_use};
}

}  // namespace

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
      nodes_(std::exchange(other.nodes_, 0)),
      what_(std::move(other.what_)) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    CudaGraph dying(std::move(*this));
    executable_ = std::exchange(other.executable_, nullptr);
    nodes_ = std::exchange(other.nodes_, 0);
    what_ = std::move(other.what_);
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
  const AllocatorActivity before = activity(stream);
  cuda_runtime::stream_begin_capture(stream.native());
  try {
    work();
  } catch (const std::exception& error) {
    cuda_runtime::stream_abandon_capture(stream.native());
    fail(context + ": " + error.what());
  }
  const AllocatorActivity after = activity(stream);
  if (after != before) {
    cuda_runtime::stream_abandon_capture(stream.native());
    fail(context + ": the work allocated or freed device memory while captured (" +
         std::to_string(after.allocations - before.allocations) + " allocations, " +
         std::to_string(static_cast<long long>(after.bytes_in_use) -
                        static_cast<long long>(before.bytes_in_use)) +
         " bytes in use): its buffers must exist before the capture and outlive the graph");
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
  graph.what_ = what;
  return graph;
}

void CudaGraph::replay(const Stream& stream) const {
  if (executable_ == nullptr) fail("CudaGraph::replay: no graph was captured");
  cuda_runtime::graph_launch(executable_, stream.native());
}

}  // namespace engine
