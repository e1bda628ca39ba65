#include "nn/sync_batchnorm.h"

#include "nn/batchnorm2d.h"

namespace engine::nn {

void BatchNorm2d::set_sync_group(Communicator* comm) {
  sync_ = comm;
  sync_sum_ = nullptr;
  if (comm == nullptr) return;
  // One rank's sums are the global ones: nothing is queued on the communicator then, whose
  // watchdog polls its work's events, which a CUDA graph's capture forbids (resnet_train
  // --sync-bn on one GPU replays its micro-steps as graphs: gpu-check part M's one-rank run).
  sync_sum_ = [comm](Tensor& tensor, Stream& stream) {
    if (comm->size() > 1) comm->all_reduce(tensor, ReduceOp::sum, stream);
  };
}

void convert_sync_batchnorm(Layer& root, Communicator& comm) {
  walk(root, [&](Layer& layer) {
    if (auto* norm = dynamic_cast<BatchNorm2d*>(&layer)) norm->set_sync_group(&comm);
  });
}

int count_sync_batchnorm(const Layer& root) {
  int count = 0;
  walk(root, [&](const Layer& layer) {
    const auto* norm = dynamic_cast<const BatchNorm2d*>(&layer);
    if (norm != nullptr && norm->sync_group() != nullptr) ++count;
  });
  return count;
}

}  // namespace engine::nn
