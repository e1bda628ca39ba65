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

#include "data/loader.h"
#include "kernels/error.h"
#include "train/common_flags.h"
#include "train/metric_rows.h"
#include "train/progress.h"
#include "train/trainer.h"
#include "train/trainer_comms.h"
#include "train/trainer_model.h"

namespace engine::train {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Batches whose figures wait on the device at most (a trainer drains them at every print
// point and whenever they fill up).
inline constexpr int64_t kMetricRows = 64;

// A training step whose loss and counts are still on the device (metric_rows): what the host
// knows of it.
struct PendingStep {
  int64_t index = 0, step = 0;  // within the epoch; the optimizer step it made
  int64_t samples = 0;          // this rank's batch (all its --accum-steps micro-batches)
  double lr = 0;
};

// A crop of `size` px; validation first resizes the shorter side to size / 0.875, as
// torchvision's references (224 from 256).
inline void set_image_size(data::LoaderConfig& config, int64_t size) {
  config.transform.output_size = static_cast<int>(size);
  config.transform.resize_size = static_cast<int>(std::lround(static_cast<double>(size) / 0.875));
}

// An epoch's training figures so far, summed over ranks.
struct EpochTotals {
  StepTotals steps;
  double comm_busy = 0, comm_exposed = 0;
};

struct Trainer::State {
  State(const TrainOptions& o, MpiSession& s, Datasets d)
      : options(o),
        session(s),
        datasets(std::move(d)),
        device(s.device(o.device)),
        stream(device),
        progress(s.rank() == 0, o.print_freq) {
    model.emplace(o, static_cast<int64_t>(datasets.classes().size()), device);
    cli::check_precision_device(o.precision, device);
    stream.set_fp32_math(o.precision.fp32_math);
  }

  const TrainOptions& options;
  MpiSession& session;
  Datasets datasets;
  Device device;
  Stream stream;
  Progress progress;

  std::optional<TrainerComms> comms;
  std::optional<TrainerModel> model;  // after comms: its DDP reducer uses them
  std::unique_ptr<data::Loader> train_loader, val_loader;
  int64_t steps_per_epoch = 0;

  std::unique_ptr<MetricRows> metric_rows;  // the batches' figures not yet on the host
  int64_t first_epoch = 0, first_batch = 0;
  double best_top1 = -1;
  int64_t evaluated_epochs = 0;  // --evaluate: the epochs the checkpoint had trained

  bool rank0() const { return session.rank() == 0; }
  int world() const { return session.size(); }

  void build();
  void resume();
  // --ema: the average starts from the (resumed) weights, or from the ema.safetensors saved
  // beside the resumed checkpoint at its step.
  void start_ema();
  int run(const std::function<void()>& set_up);
  // Returns the signal that stopped the epoch (0: it ran to its end).
  int train_epoch(int64_t epoch, EpochFigures& figures);
  // Brings the pending steps' figures to the host, sums them over ranks with every rank's
  // stop request, and reports them (totals, progress, --step-metrics). Returns the signal a
  // rank was stopped by (0: none) and empties `pending`.
  int report_steps(std::vector<PendingStep>& pending, int64_t epoch, EpochTotals& totals);
  void evaluate(EpochFigures& figures);
  void save(const std::string& name, int64_t epochs_done, int64_t sampler_epoch,
            int64_t sampler_batches);
  void write_epoch_metrics(const EpochFigures& figures, bool trained);
};

}  // namespace engine::train
