// Keeps the loader's batches on a CUDA device alive until the compute stream has finished the
// work queued on them: PyTorch's record_stream, for the loader's copies.
//
// The loader copies each batch to the device on a stream of its own (data/loader.h). Blocks of
// the caching allocator are reused without stream bookkeeping (kernels/caching_allocator.h):
// dropped as soon as the host has queued a step, a batch's images would go straight to the next
// batch of their size, whose copy on the loader's stream could land while the compute stream
// still reads them (the first convolution's filter gradient reads the images last, at the end
// of backward). Kept here, a batch goes back only once an event recorded after its last reader
// has completed; the host never waits for that.
#pragma once

#include <deque>
#include <utility>

#include "data/loader.h"
#include "kernels/stream.h"

namespace engine::data {

class BatchKeeper {
 public:
  // After everything that reads `batch`'s device tensors has been queued on `stream`. Batches
  // whose work has completed meanwhile are let go; a CPU batch is let go at once.
  void keep(Batch&& batch, const Stream& stream);
  // Waits for the last kept batch's readers (what is dropped here is then unused).
  ~BatchKeeper();
  BatchKeeper() = default;
  BatchKeeper(const BatchKeeper&) = delete;
  BatchKeeper& operator=(const BatchKeeper&) = delete;
  // How many batches are held now.
  size_t held() const { return held_.size(); }

 private:
  void release_finished();

  std::deque<std::pair<Batch, Event>> held_;
};

}  // namespace engine::data
