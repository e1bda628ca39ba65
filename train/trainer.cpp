// The run: its pieces set up in order (communicators, the model and optimizer, the figures'
// rows, the loaders, a resumed checkpoint and average), then --evaluate's one validation or
// the loop over epochs with their validation, checkpoints and metrics lines.
#include "train/trainer.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "kernels/stream.h"
#include "train/common_flags.h"
#include "train/json_line.h"
#include "train/stop_signal.h"
#include "train/trainer_checkpoints.h"
#include "train/trainer_comms.h"
#include "train/trainer_data.h"
#include "train/trainer_epoch.h"
#include "train/trainer_metrics.h"
#include "train/trainer_model.h"

namespace engine::train {

namespace {

// This rank's share of its host's cores: --threads 0 and --workers 0 (at most 8) go by it.
int default_threads(const MpiSession& session) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, session.world().local_size));
}

// The run's first line: what trains, on what, over which communicator, with what batch.
std::string banner(const TrainOptions& o, const TrainerData& data, const TrainerComms& comms,
                   Device device, const std::string& graph_status) {
  const int world = comms.world();
  return "resnet_train: " + o.arch + ", " + std::to_string(data.classes().size()) + " classes, " +
         std::to_string(world) + " rank(s) on " + device.str() + " (" + comms.grad().name() + ", " +
         comms.grad_choice().why + "), batch " + std::to_string(o.batch_size) + " per rank" +
         (o.accum_steps > 1 ? " x " + std::to_string(o.accum_steps) + " accumulated"
                            : std::string()) +
         " = " + std::to_string(o.batch_size * o.accum_steps * world) + " global, " +
         std::string(nn::precision_name(o.precision)) + (o.sync_bn ? ", SyncBN" : "") +
         // Only what is not the default, so that an SGD run's banner reads as before.
         (o.opt != OptimizerName::sgd ? ", " + std::string(optimizer_name(o.opt)) : std::string()) +
         (o.clip_grad > 0 ? ", gradients clipped to norm " + json_number(o.clip_grad)
                          : std::string()) +
         (graph_status.empty() ? std::string() : ", " + graph_status);
}

// --trace-steps within the steps this run makes (the same answer on every rank, so all stop
// together before training, rank 0 saying why in one line). Removes the empty trace file the
// preflight's check left.
bool trace_range_reachable(const TrainOptions& o, const TrainerData& data, int64_t steps_done,
                           const TrainerComms& comms) {
  if (o.trace.empty() || o.evaluate || !data.has_train()) return true;
  int64_t last_step = o.epochs * data.steps_per_epoch();
  if (o.max_steps > 0) last_step = std::min(last_step, o.max_steps);
  const std::string why = trace_steps_problem(o.trace_steps, steps_done, last_step);
  if (why.empty()) return true;
  if (comms.rank0()) std::fprintf(stderr, "resnet_train: %s\n", why.c_str());
  std::error_code ignored;
  std::filesystem::remove(trace_path_for_rank(o.trace, comms.rank(), comms.world()), ignored);
  return false;
}

}  // namespace

// What the Trainer is given, and the device it runs on; run() makes the pieces.
struct Trainer::State {
  State(const TrainOptions& o, MpiSession& s, Datasets d)
      : options(o), session(s), datasets(std::move(d)), device(s.device(o.device)), stream(device) {
    cli::check_precision_device(o.precision, device);
    stream.set_fp32_math(o.precision.fp32_math);
  }

  const TrainOptions& options;
  MpiSession& session;
  Datasets datasets;  // until run() hands them to its TrainerData
  Device device;
  Stream stream;
};

Trainer::Trainer(const TrainOptions& options, MpiSession& session, Datasets datasets)
    : state_(std::make_unique<State>(options, session, std::move(datasets))) {}

Trainer::~Trainer() = default;

int Trainer::run(const std::function<void()>& set_up) {
  const TrainOptions& o = state_->options;
  MpiSession& session = state_->session;
  const Device device = state_->device;
  Stream& stream = state_->stream;
  const auto classes = static_cast<int64_t>(state_->datasets.classes().size());

  // The pieces in the order the run has always made them: the communicators (collective),
  // then the device memory (weights, SGD, buckets, the figures' rows, the loaders' batches),
  // so that the collective calls and the allocations keep their order.
  const int compute_threads = o.threads > 0 ? o.threads : default_threads(session);
  omp_set_num_threads(compute_threads);
  TrainerComms comms(o, session, device, compute_threads);
  TrainerModel model(o, classes, device);
  model.build(comms.grad(), stream);
  TrainerMetrics metrics(o, comms.rank(), comms.world(), device);
  TrainerData data(o, comms.rank(), comms.world(), std::move(state_->datasets), device,
                   std::max(1, default_threads(session)));
  if (data.has_train()) model.set_schedule(data.steps_per_epoch());
  TrainerCheckpoints checkpoints(o, comms.rank0(), comms.world(), data.classes());
  checkpoints.resume(model, metrics.progress(), stream);
  if (model.start_ema(stream)) checkpoints.resume_ema(model, metrics.progress(), stream);
  if (!trace_range_reachable(o, data, model.step(), comms)) return 1;
  const std::vector<std::string> conv_lines =
      data.has_train() && !o.evaluate
          ? model.choose_conv_plans(
                train_image_size(o, checkpoints.first_epoch()), comms.rank0(),
                [&comms](std::vector<float>& v) { comms.sum_over_ranks(v); }, stream)
          : std::vector<std::string>{};
  if (set_up) set_up();

  Progress& progress = metrics.progress();
  if (comms.rank0()) {
    progress.line(banner(o, data, comms, device, model.graph_status()));
    for (const std::string& line : conv_lines)
      progress.line(line);
    if (session.world().hosts > 1) progress.line("hosts: " + session.peers().placement());
  }
  if (o.evaluate) {
    const Clock::time_point started = Clock::now();
    EpochFigures figures;
    // The metrics line's "epoch" is the checkpoint's.
    figures.epoch = checkpoints.evaluated_epochs() - 1;
    evaluate(data, model, comms, metrics, stream, figures);
    figures.epoch_s = seconds_since(started);
    char text[200];
    std::snprintf(text, sizeof text, "evaluate: val loss %.4f top1 %.2f%% top5 %.2f%% (%zu images)",
                  figures.val_loss, 100 * figures.val_top1, 100 * figures.val_top5,
                  data.val_size());
    progress.line(text);
    metrics.write_epoch(figures, false, model.step());
    return 0;
  }
  for (int64_t epoch = checkpoints.first_epoch(); epoch < o.epochs; ++epoch) {
    const Clock::time_point started = Clock::now();
    EpochFigures figures;
    figures.epoch = epoch;
    figures.epochs = o.epochs;
    const int stopped_by =
        train_epoch(epoch, o, data, model, comms, checkpoints, metrics, stream, figures);
    if (stopped_by != 0) {
      metrics.trace().write_partial();
      if (comms.rank0()) {
        progress.line(
            std::string("resnet_train: ") +
            (stopped_by > 0 ? "stopped by " + signal_name(stopped_by) : "reached --max-steps") +
            " at step " + std::to_string(model.step()) + "; saved " + checkpoint_path(o, "last") +
            " (continue with --resume)");
      }
      // Rank 0 may still be writing: nobody leaves before it has (mpirun would end it).
      comms.barrier();
      return stopped_by > 0 ? 128 + stopped_by : 0;
    }
    evaluate(data, model, comms, metrics, stream, figures);
    if (model.has_ema()) {
      EpochFigures averaged;
      model.swap_ema(stream);
      evaluate(data, model, comms, metrics, stream, averaged);
      model.swap_ema(stream);
      figures.has_ema = true;
      figures.ema_val_loss = averaged.val_loss;
      figures.ema_val_top1 = averaged.val_top1;
      figures.ema_val_top5 = averaged.val_top5;
    }
    figures.epoch_s = seconds_since(started);
    figures.best = checkpoints.record_val_top1(figures.val_top1);
    checkpoints.save("last", epoch + 1, epoch + 1, 0, model, stream);
    if (figures.best) checkpoints.save("best", epoch + 1, epoch + 1, 0, model, stream);
    metrics.write_epoch(figures, true, model.step());
    progress.epoch_summary(figures);
  }
  comms.barrier();
  return 0;
}

}  // namespace engine::train
