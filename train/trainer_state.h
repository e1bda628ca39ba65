// The state of one rank's training run (trainer.h), shared by the files that make it up:
// trainer_setup.cpp (communicators, model, optimizer, loaders, a resumed checkpoint),
// trainer_epoch.cpp (an epoch's steps, their figures, validation) and trainer.cpp (the run's
// loop over epochs, checkpoints and metrics). Only those include it.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/error.h"
#include "train/common_flags.h"
#include "train/trainer.h"
#include "train/trainer_checkpoints.h"
#include "train/trainer_comms.h"
#include "train/trainer_data.h"
#include "train/trainer_metrics.h"
#include "train/trainer_model.h"

namespace engine::train {

struct Trainer::State {
  State(const TrainOptions& o, MpiSession& s, Datasets d)
      : options(o), session(s), datasets(std::move(d)), device(s.device(o.device)), stream(device) {
    model.emplace(o, static_cast<int64_t>(datasets.classes().size()), device);
    cli::check_precision_device(o.precision, device);
    stream.set_fp32_math(o.precision.fp32_math);
  }

  const TrainOptions& options;
  MpiSession& session;
  Datasets datasets;  // until build() hands them to `data`
  Device device;
  Stream stream;

  std::optional<TrainerComms> comms;
  std::optional<TrainerModel> model;  // after comms: its DDP reducer uses them
  std::optional<TrainerMetrics> metrics;
  std::optional<TrainerCheckpoints> checkpoints;
  std::optional<TrainerData> data;

  bool rank0() const { return session.rank() == 0; }
  int world() const { return session.size(); }

  void build();
  int run(const std::function<void()>& set_up);
  // Returns the signal that stopped the epoch (0: it ran to its end).
  int train_epoch(int64_t epoch, EpochFigures& figures);
  void evaluate(EpochFigures& figures);
};

}  // namespace engine::train
