// A training run's model and what trains it (trainer.h): the ResNet and its loss, the DDP
// reducer that all-reduces the gradients while backward runs, the optimizer (--opt: SGD,
// AdamW or LARS) at the LR schedule's rate after --clip-grad, with the count of optimizer
// steps taken, and the --ema weight average.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "kernels/conv_plans.h"
#include "kernels/device.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"
#include "nn/cross_entropy.h"
#include "nn/data_parallel.h"
#include "nn/grad_clip.h"
#include "nn/lr_schedule.h"
#include "nn/optimizer.h"
#include "nn/resnet.h"
#include "train/micro_step_graphs.h"
#include "train/train_options.h"
#include "train/weight_ema.h"

namespace engine::train {

class TrainerModel {
 public:
  TrainerModel(const TrainOptions& options, int64_t classes, Device device);
  // Allocates and initializes the weights, converts to SyncBN (--sync-bn) and makes the
  // optimizer (--opt), the --clip-grad clipper and the DDP reducer over `grad_comm`.
  void build(Communicator& grad_comm, Stream& stream);
  // The schedule for epochs of `steps_per_epoch` optimizer steps (training only).
  void set_schedule(int64_t steps_per_epoch);
  // --ema (not with --evaluate): starts the average from the current weights. Returns
  // whether there is one.
  bool start_ema(Stream& stream);

  nn::ResNet& net() { return model_; }
  nn::Optimizer& optimizer() { return *optimizer_; }
  // BatchNorm's running statistics (empty for a model without BatchNorm).
  Tensor& buffers() { return model_.params().flat_buffers(); }
  // Every rank takes rank 0's weights and buffers (its initialization or resumed checkpoint).
  void broadcast_from_rank0(Stream& stream) { ddp_->broadcast_from_rank0(stream); }
  // The all-reduce timings of the steps since the last call (their comm has finished).
  std::vector<nn::CommTiming> take_comm_timings() { return ddp_->take_timings(); }

  int64_t step() const { return step_; }  // optimizer steps taken
  void set_step(int64_t step) { step_ = step; }

  // The convolutions' CUDA algorithms for training batches of `image_size` px (--conv-tuning):
  // rank 0 chooses (nn/conv_tuning.h), `sum_over_ranks` (a sum of floats over all ranks)
  // gives every rank its choice. Before the first setup. Returns rank 0's lines for the
  // banner and its warnings (empty on the other ranks and on the CPU).
  std::vector<std::string> choose_conv_plans(
      int64_t image_size, bool rank0,
      const std::function<void(std::vector<float>&)>& sum_over_ranks, Stream& stream);
  // Sets the model up for a batch of these images' shape (NHWC), when it changes, with the
  // chosen algorithms (shapes without a choice run the heuristic's).
  void ensure_setup(const Tensor& images, Stream& stream);
  void zero_grad() { model_.params().zero_grad(); }
  const Tensor& forward(const Tensor& images, nn::Pass& pass) {
    return model_.forward(images, pass);
  }
  // The batch's mean loss (f32, one element, on the device), against class labels or, under
  // --mixup/--cutmix, the batch's soft targets (f32[N, K] on the device).
  const Tensor& mean_loss(const Tensor& logits, const Tensor& labels, Stream& stream) {
    return loss_.forward(logits, labels, stream);
  }
  const Tensor& mean_soft_loss(const Tensor& logits, const Tensor& targets, Stream& stream) {
    return loss_.forward_soft(logits, targets, stream);
  }
  // Backward of the last mean_loss times `loss_scale`; with `sync` (a step's last
  // micro-batch) the gradients are all-reduced as backward finishes them, else they
  // accumulate locally (no_sync).
  void backward(nn::Pass& pass, bool sync, float loss_scale, Stream& stream);
  // --cuda-graph: whether micro-steps run through graphed_micro_step (decided by build(): a
  // CUDA device, one rank, no --trace), and how the banner says it ("" on the CPU).
  bool graphed() const { return graphs_ != nullptr; }
  const std::string& graph_status() const { return graph_status_; }
  // forward, mean_loss (or mean_soft_loss) and backward of one micro-batch as a CUDA graph's
  // replay (train/micro_step_graphs.h); `first`: the step's first micro-batch (zero_grad).
  // With `sync` (the step's last micro-batch) optimizer_step() follows in the same graph, its
  // rate then last_lr().
  MicroStepGraphs::Outputs graphed_micro_step(const MicroStepGraphs::Batch& batch, bool first,
                                              bool sync, float loss_scale, Stream& stream);
  double last_lr() const { return last_lr_; }
  // --clip-grad on the all-reduced gradients (every rank clips the same average by the same
  // factor), the optimizer at the schedule's rate for the next step, then the --ema average.
  // Returns the rate.
  double optimizer_step(Stream& stream);

  bool has_ema() const { return ema_ != nullptr; }
  // Exchanges the average with the model's weights (to evaluate or save it); again to undo.
  void swap_ema(Stream& stream) { ema_->swap(stream); }

 private:
  void decide_cuda_graph(const Communicator& grad_comm);
  // optimizer_step() in two halves (nn::Optimizer::stage_step, launch_step): the schedule's
  // rate written to the device, then the launches a graph may hold.
  double stage_optimizer_step(Stream& stream);
  void launch_optimizer_step(Stream& stream);

  const TrainOptions& options_;
  int64_t classes_;
  Device device_;
  nn::ResNet model_;
  nn::CrossEntropyLoss loss_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::unique_ptr<nn::GradClip> clip_;
  std::unique_ptr<nn::DataParallel> ddp_;
  std::unique_ptr<WeightEma> ema_;
  std::unique_ptr<MicroStepGraphs> graphs_;
  double last_lr_ = 0;
  std::string graph_status_;
  nn::LrSchedule schedule_;
  int64_t step_ = 0;
  Shape model_shape_;  // the shape ensure_setup last saw
  ConvPlans conv_plans_;
};

}  // namespace engine::train
