// A piece of CUDA work captured once as a graph and replayed: one launch instead of hundreds,
// and no host time between the kernels (what the training step on a GPU runs, DESIGN.md).
//
// Capture records what `work` queues on the stream (and on streams forked from it through
// events) without running it; every replay runs all of it again, with the same kernels, the
// same arguments and the same buffers. So whatever must change from one replay to the next
// (a learning rate, a flag) has to be read by the kernels from device memory that is written
// before the replay, and `work` must neither allocate nor free device memory: the caching
// allocator could hand a block the graph still uses to someone else. Capture refuses both
// (the capturing thread's caching-allocator calls are counted; other threads, the data
// loader's, may allocate meanwhile) and anything that synchronizes with the host.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/stream.h"

namespace engine {

class CudaGraph {
 public:
  CudaGraph() = default;  // holds nothing: replay() is an error
  ~CudaGraph();
  CudaGraph(CudaGraph&& other) noexcept;
  CudaGraph& operator=(CudaGraph&& other) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Captures what `work` queues on `stream` (a CUDA stream); nothing runs. Throws
  // engine::Error naming `what` when `work` throws, allocates or frees device memory, or
  // does something a capture refuses (the runtime's code says which; the sim device also
  // names the call on stderr). The stream is usable again after a failure.
  static CudaGraph capture(const Stream& stream, const std::string& what,
                           const std::function<void()>& work);

  // Queues everything captured on `stream`, as one piece of work.
  void replay(const Stream& stream) const;
  bool defined() const { return executable_ != nullptr; }
  // The graph's nodes: kernels, copies, memsets and host functions captured.
  size_t nodes() const { return nodes_; }

 private:
  cudaGraphExec_t executable_ = nullptr;
  size_t nodes_ = 0;
};

}  // namespace engine
