#include "train/trainer_epoch.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "nn/layer.h"
#include "train/batch_dump.h"

namespace engine::train {
namespace {

// One micro-batch kernel by kernel, each phase a span under --trace: forward, the loss (against
// the labels or, under --mixup/--cutmix, the batch's soft targets; top-1 still counts the
// labels), backward (gradients overwritten for the step's first micro-batch, all-reduced for its
// last); the figures' row pushed. Returns the backward's span.
int eager_micro_step(const data::Batch& batch, int64_t micro, int64_t accum, TrainerModel& model,
                     TrainerMetrics& metrics, StepTrace& trace, Stream& stream) {
  const int64_t n = batch.images.size(0);
  const Tensor labels = batch.device_labels.defined()
                            ? batch.device_labels
                            : Tensor::from_ints({n}, batch.labels).to(stream.device(), stream);
  nn::Pass pass{stream, true, false, {}, trace.layer_observer()};
  if (micro == 0) model.zero_grad();
  const int forward_span = trace.begin_span("forward", stream, micro);
  const Tensor& logits = model.forward(batch.images, pass);
  const int loss_span = trace.begin_span("loss", stream, micro);
  const Tensor& loss =
      batch.targets.empty() ? model.mean_loss(logits, labels, stream)
      : batch.device_targets.defined()
          ? model.mean_soft_loss(logits, batch.device_targets, stream)
          : model.mean_soft_loss(
                logits,
                Tensor::from_floats({n, static_cast<int64_t>(batch.targets.size()) / n},
                                    batch.targets)
                    .to(stream.device(), stream),
                stream);
  trace.end_span(loss_span, stream);
  trace.end_span(forward_span, stream);
  metrics.rows().push(logits, labels, loss, stream);
  const int backward_span = trace.begin_span("backward", stream, micro);
  model.backward(pass, micro == accum - 1, 1.f / static_cast<float>(accum), stream);
  trace.end_span(backward_span, stream);
  return backward_span;
}

}  // namespace

int train_epoch(int64_t epoch, const TrainOptions& options, TrainerData& data, TrainerModel& model,
                TrainerComms& comms, TrainerCheckpoints& checkpoints, TrainerMetrics& metrics,
                Stream& stream, EpochFigures& figures) {
  const int64_t accum = options.accum_steps;
  const int64_t start_batch = checkpoints.first_batch(epoch);  // loader batches
  const int64_t steps_per_epoch = data.steps_per_epoch();
  const int64_t crop = data.set_train_crop(epoch);
  if (comms.rank0() && options.progressive.min > 0) {
    metrics.progress().line("epoch " + std::to_string(epoch + 1) + ": training crop " +
                            std::to_string(crop) + " px");
  }
  data.start_train_epoch(epoch, start_batch);
  metrics.progress().start_epoch(epoch, options.epochs, steps_per_epoch, start_batch / accum);
  const Clock::time_point started = Clock::now();
  EpochTotals totals;
  std::vector<PendingStep> pending;
  double lr = 0;
  int stopped_by = 0;
  // No step waits for the device: the figures are fetched (and the ranks' stop requests
  // exchanged) at the print points, at the epoch's end, at --max-steps and when the metric
  // rows fill up, the same steps on every rank.
  // With --accum-steps N each optimizer step takes N loader batches: the gradients of the
  // first N - 1 accumulate locally (no_sync), the N-th's backward all-reduces the sum, each
  // batch's loss scaled by 1/N, so the step is that of one N times larger batch (BatchNorm
  // aside: it normalizes each batch on its own, as in PyTorch).
  int64_t step_samples = 0;
  StepTrace& trace = metrics.trace();
  for (int64_t batch_index = start_batch;; ++batch_index) {
    const int64_t index = batch_index / accum;  // the optimizer step within the epoch
    const int64_t micro = batch_index % accum;
    if (micro == 0 && index < steps_per_epoch) trace.begin_step(model.step() + 1, stream);
    trace.begin_data_wait();
    std::optional<data::Batch> batch = data.next_train_batch();
    trace.end_data_wait();
    if (!batch) break;
    if (index >= steps_per_epoch) break;  // batches that make no whole step
    if (batch->ready) stream.wait(*batch->ready);
    const int64_t n = batch->images.size(0);
    model.ensure_setup(batch->images, stream);
    if (!options.dump_batches.empty()) {
      dump_batch(options.dump_batches, *batch,
                 {model.step() + 1, epoch, comms.rank(), comms.world()}, stream);
    }
    int backward_span = -1;
    if (model.graphed()) {
      // eager_micro_step's work, and at the last micro-batch the optimizer step's, as one CUDA
      // graph's replay (no layer is traced: --trace turns the graphs off).
      const MicroStepGraphs::Outputs out = model.graphed_micro_step(
          {batch->images, batch->labels, batch->targets, batch->device_labels,
           batch->device_targets},
          micro == 0, micro == accum - 1, 1.f / static_cast<float>(accum), stream);
      metrics.rows().push(out.logits, out.labels, out.loss, stream);
    } else {
      backward_span = eager_micro_step(*batch, micro, accum, model, metrics, trace, stream);
    }
    data.done_with(std::move(*batch), stream);
    step_samples += n;
    if (micro != accum - 1) continue;
    trace.mark_synced_backward(backward_span);
    if (model.graphed()) {
      lr = model.last_lr();  // the graphed micro-step took the optimizer step
    } else {
      const int optimizer_span = trace.begin_span("optimizer", stream);
      lr = model.optimizer_step(stream);
      trace.end_span(optimizer_span, stream);
    }
    trace.end_step();
    const int64_t step = model.step();
    pending.push_back({.index = index, .step = step, .samples = step_samples, .lr = lr});
    metrics.progress().tick(index, static_cast<double>(step_samples * comms.world()), lr);
    step_samples = 0;
    const bool at_max_steps = options.max_steps > 0 && step >= options.max_steps;
    // Inside the epoch only: its end saves `last` after the evaluation.
    const bool save_point = options.save_every_steps > 0 && step % options.save_every_steps == 0 &&
                            index + 1 < steps_per_epoch;
    // The metric rows must have room for the next step's micro-batches.
    if ((index + 1) % options.print_freq == 0 || index + 1 == steps_per_epoch || at_max_steps ||
        save_point || metrics.rows().size() + accum > kMetricRows) {
      stopped_by = metrics.report_steps(pending, epoch, totals, model, comms, stream);
      if (stopped_by != 0 || at_max_steps) {
        if (stopped_by == 0) stopped_by = -1;
        checkpoints.save("last", epoch, epoch, batch_index + 1, model, stream);
        break;
      }
      if (save_point) {
        checkpoints.save("last", epoch, epoch, batch_index + 1, model, stream);
        if (comms.rank0()) {
          metrics.progress().line("saved " + checkpoint_path(options, "last") + " at step " +
                                  std::to_string(step));
        }
      }
    }
  }
  // A loader that ended early (every rank alike).
  metrics.report_steps(pending, epoch, totals, model, comms, stream);
  const double elapsed = seconds_since(started);
  figures.train_loss = totals.steps.loss_sum / std::max(1.0, totals.steps.samples);
  figures.train_top1 = totals.steps.correct1 / std::max(1.0, totals.steps.samples);
  figures.lr = lr;
  figures.images_per_s = totals.steps.samples / std::max(1e-9, elapsed);
  // Not measured (NaN) when CUDA graphs' launches communicated: a share of the eager steps
  // alone would misstate the epoch.
  figures.comm_hidden = totals.comm_unmeasured > 0 ? std::nan("")
                        : totals.comm_busy > 0
                            ? std::clamp(1 - totals.comm_exposed / totals.comm_busy, 0.0, 1.0)
                            : 1.0;
  std::vector<float> skipped = {static_cast<float>(data.train_skipped())};
  comms.sum_over_ranks(skipped);
  figures.skipped_files = static_cast<int64_t>(skipped[0]);
  return stopped_by;
}

void evaluate(TrainerData& data, TrainerModel& model, TrainerComms& comms, TrainerMetrics& metrics,
              Stream& stream, EpochFigures& figures) {
  // BatchNorm running statistics differ between ranks with local BN; evaluate rank 0's, as
  // PyTorch's DDP does (broadcast_buffers) and as the checkpoint keeps them.
  Tensor& buffers = model.buffers();
  if (comms.world() > 1 && buffers.defined() && buffers.numel() > 0) {
    comms.grad().broadcast(buffers, 0, stream);
  }
  data.start_validation();
  double loss_sum = 0, correct1 = 0, correct5 = 0, samples = 0;
  std::vector<int64_t> batch_sizes;  // of the batches in the metric rows
  const auto add_pending = [&] {
    const std::vector<MetricRow> rows = metrics.rows().drain(stream);
    for (size_t i = 0; i < rows.size(); ++i) {
      loss_sum += rows[i].mean_loss * static_cast<double>(batch_sizes[i]);
      correct1 += rows[i].correct1;
      correct5 += rows[i].correct5;
      samples += static_cast<double>(batch_sizes[i]);
    }
    batch_sizes.clear();
  };
  while (std::optional<data::Batch> batch = data.next_val_batch()) {
    if (batch->ready) stream.wait(*batch->ready);
    const int64_t n = batch->images.size(0);
    if (n == 0) continue;
    model.ensure_setup(batch->images, stream);
    const Tensor labels = batch->device_labels.defined()
                              ? batch->device_labels
                              : Tensor::from_ints({n}, batch->labels).to(stream.device(), stream);
    nn::Pass pass{stream, false, false, {}};
    const Tensor& logits = model.forward(batch->images, pass);
    metrics.rows().push(logits, labels, model.mean_loss(logits, labels, stream), stream);
    data.done_with(std::move(*batch), stream);
    batch_sizes.push_back(n);
    if (metrics.rows().full()) add_pending();
  }
  add_pending();
  std::vector<float> sums = {static_cast<float>(loss_sum), static_cast<float>(correct1),
                             static_cast<float>(correct5), static_cast<float>(samples),
                             static_cast<float>(data.val_skipped())};
  comms.sum_over_ranks(sums);
  const double total = std::max(1.0f, sums[3]);
  figures.val_loss = sums[0] / total;
  figures.val_top1 = sums[1] / total;
  figures.val_top5 = sums[2] / total;
  figures.skipped_files += static_cast<int64_t>(sums[4]);
}

}  // namespace engine::train
