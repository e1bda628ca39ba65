#include "train/trainer_metrics.h"

#include <cmath>
#include <string>

#include "kernels/error.h"
#include "train/json_line.h"
#include "train/stop_signal.h"

namespace engine::train {

TrainerMetrics::TrainerMetrics(const TrainOptions& options, int rank, int world, Device device)
    : options_(options),
      rank0_(rank == 0),
      world_(world),
      progress_(rank0_, options.print_freq),
      rows_(kMetricRows, device),
      trace_(options.trace.empty() ? "" : trace_path_for_rank(options.trace, rank, world),
             options.trace_steps, rank, world, device) {
  if (rank0_ && !options.tensorboard.empty()) {
    tensorboard_ = std::make_unique<TensorBoardWriter>(options.tensorboard);
  }
}

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
    trace_.add_comm_timing(p.step, timing);
    if (timing.measured) {
      totals.comm_busy += timing.comm_busy_s;
      totals.comm_exposed += timing.exposed_s;
    } else {
      ++totals.comm_unmeasured;
    }
    progress_.step(p.index, step_totals, p.lr);
    const double loss = step_totals.loss_sum / step_totals.samples;
    if (rank0_ && !options_.step_metrics.empty()) {
      append_line(options_.step_metrics, JsonLine()
                                             .add("step", p.step)
                                             .add("epoch", epoch)
                                             .add("loss", loss)
                                             .add("lr", p.lr)
                                             .add("comm_hidden_pct", 100 * timing.hidden_fraction)
                                             .str());
    }
    if (tensorboard_) {
      tensorboard_->scalar("step/loss", p.step, loss);
      tensorboard_->scalar("step/top1_pct", p.step,
                           100 * step_totals.correct1 / step_totals.samples);
      tensorboard_->scalar("step/lr", p.step, p.lr);
      if (timing.measured) {
        tensorboard_->scalar("step/comm_hidden_pct", p.step, 100 * timing.hidden_fraction);
      }
    }
  }
  if (tensorboard_) tensorboard_->flush();
  pending.clear();
  const float stopping = sums[sums.size() - 2], signal_sum = sums.back();
  // The signal the stopping ranks got (their mean: the same one, as a rule).
  return stopping > 0 ? static_cast<int>(std::lround(signal_sum / stopping)) : 0;
}

void TrainerMetrics::write_epoch(const EpochFigures& f, bool trained, int64_t step) {
  if (!rank0_) return;
  const double none = std::nan("");
  // Accuracies and shares in percents, as the progress lines print them (--help says so).
  std::vector<std::pair<const char*, double>> figures = {
      {"train_loss", trained ? f.train_loss : none},
      {"train_top1_pct", trained ? 100 * f.train_top1 : none},
      {"val_loss", f.val_loss},
      {"val_top1_pct", 100 * f.val_top1},
      {"val_top5_pct", 100 * f.val_top5},
      {"lr", trained ? f.lr : none},
      {"images_per_s", trained ? f.images_per_s : none},
      {"epoch_s", f.epoch_s}};
  const std::vector<std::pair<const char*, double>> later = {
      {"comm_hidden_pct", trained ? 100 * f.comm_hidden : none}};
  const std::vector<std::pair<const char*, double>> ema = {
      {"ema_val_loss", f.ema_val_loss},
      {"ema_val_top1_pct", 100 * f.ema_val_top1},
      {"ema_val_top5_pct", 100 * f.ema_val_top5}};
  JsonLine line;
  line.add("epoch", f.epoch + 1);
  for (const auto& [key, value] : figures)
    line.add(key, value);
  line.add("skipped_files", f.skipped_files);
  for (const auto& [key, value] : later)
    line.add(key, value);
  line.add("step", step).add("world_size", world_).add("arch", options_.arch);
  if (f.has_ema) {
    for (const auto& [key, value] : ema)
      line.add(key, value);
  }
  append_line(metrics_path(options_), line.str());
  if (tensorboard_) {
    figures.insert(figures.end(), later.begin(), later.end());
    if (f.has_ema) figures.insert(figures.end(), ema.begin(), ema.end());
    for (const auto& [key, value] : figures)
      tensorboard_->scalar(std::string("epoch/") + key, step, value);
    tensorboard_->flush();
  }
}

}  // namespace engine::train
