#include "train/micro_step_graphs.h"

#include "kernels/error.h"
#include "kernels/memory.h"
#include "kernels/ops/copy.h"

namespace engine::train {

MicroStepGraphs::MicroStepGraphs(nn::ResNet& model, nn::CrossEntropyLoss& loss,
                                 nn::DataParallel& ddp)
    : model_(model), loss_(loss), ddp_(ddp) {}

void MicroStepGraphs::clear() {
  graphs_.clear();
  images_ = labels_ = targets_ = Tensor();
  logits_ = mean_loss_ = nullptr;
}

void MicroStepGraphs::fill_inputs(const Batch& batch, Stream& stream) {
  const Device device = batch.images.device();
  const auto n = batch.images.size(0);
  if (!images_.defined() || images_.shape() != batch.images.shape() ||
      images_.dtype() != batch.images.dtype()) {
    if (!graphs_.empty()) {
      fail("resnet_train: a batch of " + batch.images.describe() +
           " reached the CUDA graphs of another shape without a new set-up");
    }
    images_ = Tensor::empty(batch.images.shape(), batch.images.dtype(), device);
    labels_ = Tensor::empty({n}, DType::i32, device);
  }
  if (static_cast<int64_t>(batch.labels.size()) != n) {
    fail("resnet_train: " + std::to_string(batch.labels.size()) + " labels for a batch of " +
         std::to_string(n) + " images");
  }
  copy_bytes("the CUDA graphs' images", images_.raw_data(), device, batch.images.raw_data(), device,
             batch.images.nbytes(), stream);
  if (batch.device_labels.defined()) {
    copy(batch.device_labels, labels_, stream);
  } else {
    copy_bytes("the CUDA graphs' labels", labels_.raw_data(), device, batch.labels.data(),
               Device::cpu(), batch.labels.size() * sizeof(int32_t), stream);
  }
  if (batch.targets.empty()) return;
  if (batch.targets.size() % static_cast<size_t>(n) != 0) {
    fail("resnet_train: " + std::to_string(batch.targets.size()) +
         " soft target values for a batch of " + std::to_string(n));
  }
  const auto classes = static_cast<int64_t>(batch.targets.size()) / n;
  if (!targets_.defined()) targets_ = Tensor::empty({n, classes}, DType::f32, device);
  if (batch.device_targets.defined()) {
    copy(batch.device_targets, targets_, stream);
  } else {
    copy_bytes("the CUDA graphs' soft targets", targets_.raw_data(), device, batch.targets.data(),
               Device::cpu(), batch.targets.size() * sizeof(float), stream);
  }
}

MicroStepGraphs::Outputs MicroStepGraphs::run(const Batch& batch, bool first, bool sync,
                                              float loss_scale, Stream& stream, const Tail* tail) {
  if (tail != nullptr && !sync) {
    fail("resnet_train: the optimizer step follows only the step's last micro-batch");
  }
  fill_inputs(batch, stream);
  const bool soft = !batch.targets.empty();
  if (first) model_.params().zero_grad();  // host state: the backward below overwrites
  // With more than one rank the gradients' all-reduces (and SyncBN's) are captured too, each
  // bucket's where backward finished it, so a launch overlaps them with backward as the eager
  // step does.
  const auto micro_step = [&, this] {
    nn::Pass pass{stream, true, false, {}};
    const Tensor& logits = model_.forward(images_, pass);
    const Tensor& loss = soft ? loss_.forward_soft(logits, targets_, stream)
                              : loss_.forward(logits, labels_, stream);
    ddp_.begin_backward(pass, sync);
    model_.backward(loss_.backward(stream, loss_scale), pass);
    ddp_.end_backward(stream);
    if (tail != nullptr) (*tail)(stream);
    logits_ = &logits;
    mean_loss_ = &loss;
  };
  Entry& entry = graphs_[{first, sync, soft, tail != nullptr}];
  if (!entry.graph.defined() && entry.runs++ == 0) {
    micro_step();
    return {*logits_, labels_, *mean_loss_};
  }
  if (!entry.graph.defined()) {
    entry.graph = CudaGraph::capture(stream, "the training micro-step", micro_step);
  }
  entry.graph.replay(stream);
  // What backward and the all-reduces' bookkeeping did on the host when captured, done again
  // for the launch.
  model_.params().mark_grads_written();
  ddp_.replayed_backward(stream, sync);
  return {*logits_, labels_, *mean_loss_};
}

}  // namespace engine::train
