#include "train/trainer.h"

#include "nn/checkpoint.h"
#include "train/json_line.h"
#include "train/stop_signal.h"
#include "train/trainer_state.h"

namespace engine::train {

void Trainer::State::save(const std::string& name, int64_t epochs_done, int64_t sampler_epoch,
                          int64_t sampler_batches) {
  if (!rank0()) return;
  nn::CheckpointState state;
  state.epoch = epochs_done;
  state.step = model->step();
  state.sampler = {sampler_epoch, sampler_batches * options.batch_size};
  state.classes = datasets.classes();
  state.image_size = options.image_size;
  state.normalize_mean.assign(options.normalize_mean.begin(), options.normalize_mean.end());
  state.normalize_std.assign(options.normalize_std.begin(), options.normalize_std.end());
  state.seed = options.seed;
  state.extra["world_size"] = std::to_string(world());
  state.extra["batch_size"] = std::to_string(options.batch_size);
  state.extra["accum_steps"] = std::to_string(options.accum_steps);
  state.extra["lr_schedule"] = std::string(schedule_name(options.lr_schedule));
  if (best_top1 >= 0) state.extra["best_val_top1_pct"] = json_number(100 * best_top1);
  if (model->has_ema() && name == "last") {
    // Written before `last`: a run killed between the two finds an average of a later step
    // than `last`, which --resume names and starts again rather than mixing them.
    model->swap_ema(stream);
    nn::save_checkpoint(checkpoint_path(options, "ema"), model->net(), state, stream);
    model->swap_ema(stream);
  }
  nn::save_checkpoint(checkpoint_path(options, name), model->net(), model->sgd(), state, stream);
}

int Trainer::State::run(const std::function<void()>& set_up) {
  build();
  resume();
  start_ema();
  if (set_up) set_up();
  if (rank0()) {
    metrics->progress().line(
        "resnet_train: " + options.arch + ", " + std::to_string(datasets.classes().size()) +
        " classes, " + std::to_string(world()) + " rank(s) on " + device.str() + " (" +
        comms->grad().name() + ", " + comms->grad_choice().why + "), batch " +
        std::to_string(options.batch_size) + " per rank" +
        (options.accum_steps > 1 ? " x " + std::to_string(options.accum_steps) + " accumulated"
                                 : std::string()) +
        " = " + std::to_string(options.batch_size * options.accum_steps * world()) + " global, " +
        std::string(nn::precision_name(options.precision)) + (options.sync_bn ? ", SyncBN" : ""));
    if (session.world().hosts > 1)
      metrics->progress().line("hosts: " + session.peers().placement());
  }
  if (options.evaluate) {
    const Clock::time_point started = Clock::now();
    EpochFigures figures;
    figures.epoch = evaluated_epochs - 1;  // the metrics line's "epoch" is the checkpoint's
    evaluate(figures);
    figures.epoch_s = seconds_since(started);
    char text[200];
    std::snprintf(text, sizeof text, "evaluate: val loss %.4f top1 %.2f%% top5 %.2f%% (%zu images)",
                  figures.val_loss, 100 * figures.val_top1, 100 * figures.val_top5,
                  datasets.val.size());
    metrics->progress().line(text);
    metrics->write_epoch(figures, false, model->step());
    return 0;
  }
  for (int64_t epoch = first_epoch; epoch < options.epochs; ++epoch) {
    const Clock::time_point started = Clock::now();
    EpochFigures figures;
    figures.epoch = epoch;
    figures.epochs = options.epochs;
    const int stopped_by = train_epoch(epoch, figures);
    if (stopped_by != 0) {
      if (rank0()) {
        metrics->progress().line(
            std::string("resnet_train: ") +
            (stopped_by > 0 ? "stopped by " + signal_name(stopped_by) : "reached --max-steps") +
            " at step " + std::to_string(model->step()) + "; saved " +
            checkpoint_path(options, "last") + " (continue with --resume)");
      }
      // Rank 0 may still be writing: nobody leaves before it has (mpirun would end it).
      comms->barrier();
      return stopped_by > 0 ? 128 + stopped_by : 0;
    }
    evaluate(figures);
    if (model->has_ema()) {
      EpochFigures averaged;
      model->swap_ema(stream);
      evaluate(averaged);
      model->swap_ema(stream);
      figures.has_ema = true;
      figures.ema_val_loss = averaged.val_loss;
      figures.ema_val_top1 = averaged.val_top1;
      figures.ema_val_top5 = averaged.val_top5;
    }
    figures.epoch_s = seconds_since(started);
    figures.best = figures.val_top1 > best_top1;
    if (figures.best) best_top1 = figures.val_top1;
    save("last", epoch + 1, epoch + 1, 0);
    if (figures.best) save("best", epoch + 1, epoch + 1, 0);
    metrics->write_epoch(figures, true, model->step());
    metrics->progress().epoch_summary(figures);
  }
  comms->barrier();
  return 0;
}

Trainer::Trainer(const TrainOptions& options, MpiSession& session, Datasets datasets)
    : state_(std::make_unique<State>(options, session, std::move(datasets))) {}

Trainer::~Trainer() = default;

int Trainer::run(const std::function<void()>& set_up) {
  return state_->run(set_up);
}

}  // namespace engine::train
