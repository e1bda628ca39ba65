#include "train/trainer_metrics.h"

#include <cmath>
#include <string>

#include "kernels/error.h"
#include "train/json_line.h"
#include "train/stop_signal.h"

namespace engine::train {

TrainerMetrics::TrainerMetrics(const TrainOptions& options, bool rank0, int world, Device device)
    : options_(options),
      rank0_(rank0),
      world_(world),
      progress_(rank0, options.print_freq),
      rows_(kMetricRows, device) {}

int TrainerMetrics::report_steps(std::vector<PendingStep>& pending, int64_t epoch,
                                 EpochTotals& totals, TrainerModel& model, TrainerComms& comms,
                                 Stream& stream) {
  if (pending.empty()) return 0;
  const std::vector<MetricRow> rows = rows_.drain(stream);                // the steps have finished
  const std::vector<nn::CommTiming> timings = model.take_comm_timings();  // so has their comm
  if (timings.size() != pending.size()) {
    fail("resnet_train: " + std::to_string(pending.size()) + " steps to report but " +
         std::to_string(timings.size()) + " communication timings");
  }
  // A step's figures sum its micro-batches' rows (equal batches: drop_last and refills keep
  // every training batch full). Rows past the last step are of a step never taken.
  std::vector<float> sums;
  size_t row = 0;
  for (const PendingStep& p : pending) {
    const auto micro_samples = static_cast<float>(p.samples / options_.accum_steps);
    float loss_sum = 0, correct1 = 0, correct5 = 0;
    for (int64_t m = 0; m < options_.accum_steps; ++m, ++row) {
      if (row >= rows.size()) fail("resnet_train: fewer metric rows than micro-batches");
      loss_sum += rows[row].mean_loss * micro_samples;
      correct1 += rows[row].correct1;
      correct5 += rows[row].correct5;
    }
    sums.insert(sums.end(), {loss_sum, correct1, correct5, static_cast<float>(p.samples)});
  }
  sums.push_back(static_cast<float>(stop_signal() != 0));
  sums.push_back(static_cast<float>(stop_signal()));
  comms.sum_over_ranks(sums);
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingStep& p = pending[i];
    const nn::CommTiming& timing = timings[i];
    const StepTotals step_totals{sums[4 * i], sums[4 * i + 1], sums[4 * i + 2], sums[4 * i + 3]};
    totals.steps.add(step_totals);
    totals.comm_busy += timing.comm_busy_s;
    totals.comm_exposed += timing.exposed_s;
    progress_.step(p.index, step_totals, p.lr);
    if (rank0_ && !options_.step_metrics.empty()) {
      append_line(options_.step_metrics,
                  JsonLine()
                      .add("step", p.step)
                      .add("epoch", epoch)
                      .add("loss", step_totals.loss_sum / step_totals.samples)
                      .add("lr", p.lr)
                      .add("comm_hidden_pct", 100 * timing.hidden_fraction)
                      .str());
    }
  }
  pending.clear();
  const float stopping = sums[sums.size() - 2], signal_sum = sums.back();
  // The signal the stopping ranks got (their mean: the same one, as a rule).
  return stopping > 0 ? static_cast<int>(std::lround(signal_sum / stopping)) : 0;
}

void TrainerMetrics::write_epoch(const EpochFigures& f, bool trained, int64_t step) {
  if (!rank0_) return;
  JsonLine line;
  line.add("epoch", f.epoch + 1);
  const double none = std::nan("");
  // Accuracies and shares in percents, as the progress lines print them (--help says so).
  line.add("train_loss", trained ? f.train_loss : none)
      .add("train_top1_pct", trained ? 100 * f.train_top1 : none)
      .add("val_loss", f.val_loss)
      .add("val_top1_pct", 100 * f.val_top1)
      .add("val_top5_pct", 100 * f.val_top5)
      .add("lr", trained ? f.lr : none)
      .add("images_per_s", trained ? f.images_per_s : none)
      .add("epoch_s", f.epoch_s)
      .add("skipped_files", f.skipped_files)
      .add("comm_hidden_pct", trained ? 100 * f.comm_hidden : none)
      .add("step", step)
      .add("world_size", world_)
      .add("arch", options_.arch);
  if (f.has_ema) {
    line.add("ema_val_loss", f.ema_val_loss)
        .add("ema_val_top1_pct", 100 * f.ema_val_top1)
        .add("ema_val_top5_pct", 100 * f.ema_val_top5);
  }
  append_line(metrics_path(options_), line.str());
}

}  // namespace engine::train
