#include "data/batch_keeper.h"

namespace engine::data {

void BatchKeeper::keep(Batch&& batch, const Stream& stream) {
  release_finished();
  if (!stream.device().is_cuda()) return;
  Event read(stream.device());
  read.record(stream);
  held_.emplace_back(std::move(batch), std::move(read));
}

BatchKeeper::~BatchKeeper() {
  if (held_.empty()) return;
  try {
    held_.back().second.synchronize();
  } catch (...) {
    // The device is already failing: nothing more can read the batches.
  }
}

void BatchKeeper::release_finished() {
  // Work on one stream completes in order: the oldest batches go first.
  while (!held_.empty() && held_.front().second.done())
    held_.pop_front();
}

}  // namespace engine::data
