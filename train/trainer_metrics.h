// A training run's figures (trainer.h): the batches' losses and counts held on the device
// until a print point (metric_rows.h), rank 0's progress lines, and the metrics files: one
// JSON line per epoch, and with --step-metrics one per optimizer step; with --tensorboard the
// same figures as TensorBoard scalars ("step/..." per optimizer step, "epoch/..." per epoch,
// both at the optimizer step).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/device.h"
#include "kernels/stream.h"
#include "train/metric_rows.h"
#include "train/progress.h"
#include "train/step_trace.h"
#include "train/tensorboard_writer.h"
#include "train/train_options.h"
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

// An epoch's training figures so far, summed over ranks.
struct EpochTotals {
  StepTotals steps;
  double comm_busy = 0, comm_exposed = 0;
  int64_t comm_unmeasured = 0;  // steps that communicated inside a CUDA graph's launch
};

class TrainerMetrics {
 public:
  TrainerMetrics(const TrainOptions& options, int rank, int world, Device device);

  Progress& progress() { return progress_; }
  // --trace's timeline (records nothing without it); report_steps gives it the all-reduces.
  StepTrace& trace() { return trace_; }
  MetricRows& rows() { return rows_; }

  // Brings the pending steps' figures to the host (and their all-reduce timings from the
  // model), sums them over ranks with every rank's stop request, and reports them (totals,
  // progress, --step-metrics). Returns the signal a rank was stopped by (0: none) and empties
  // `pending`.
  int report_steps(std::vector<PendingStep>& pending, int64_t epoch, EpochTotals& totals,
                   TrainerModel& model, TrainerComms& comms, Stream& stream);
  // Rank 0 appends the epoch's line to the metrics file (`trained`: false for --evaluate,
  // whose training figures are null); `step`: the optimizer steps taken.
  void write_epoch(const EpochFigures& figures, bool trained, int64_t step);

 private:
  const TrainOptions& options_;
  bool rank0_;
  int world_;
  Progress progress_;
  MetricRows rows_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;  // rank 0 with --tensorboard
  StepTrace trace_;
};

}  // namespace engine::train
