// The training run of resnet_train: one rank's part of a data-parallel job.
//
// Per epoch: DistributedSampler order for (seed, epoch); each step forward, loss, backward with
// the gradient buckets all-reduced while backward runs (nn::DataParallel), SGD at the
// schedule's rate; then validation on DIR/val, each sample counted once over all ranks; rank 0
// appends the epoch's metrics and saves last.safetensors (and best.safetensors). Figures are
// global: the loss and correct counts of every step are summed over ranks in one small
// all-reduce that also carries the ranks' stop requests, so all ranks stop at the same step.
#pragma once

#include <functional>
#include <memory>

#include "collectives/bootstrap.h"
#include "train/preflight.h"
#include "train/train_options.h"

namespace engine::train {

class Trainer {
 public:
  Trainer(const TrainOptions& options, MpiSession& session, Datasets datasets);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains (or with --evaluate validates) and returns the exit status: 0, or 128 + signal
  // when a SIGINT/SIGTERM stopped it. Throws engine::Error on failure. `set_up` is called
  // once the collective setup is done (communicators, weights, a resumed checkpoint).
  int run(const std::function<void()>& set_up = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace engine::train
