#include "train/trainer.h"

#include "train/stop_signal.h"
#include "train/trainer_state.h"

namespace engine::train {

int Trainer::State::run(const std::function<void()>& set_up) {
  build();
  checkpoints.emplace(options, rank0(), world(), data->classes());
  checkpoints->resume(*model, metrics->progress(), stream);
  if (model->start_ema(stream)) checkpoints->resume_ema(*model, metrics->progress(), stream);
  if (set_up) set_up();
  if (rank0()) {
    metrics->progress().line(
        "resnet_train: " + options.arch + ", " + std::to_string(data->classes().size()) +
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
    figures.epoch =
        checkpoints->evaluated_epochs() - 1;  // the metrics line's "epoch" is the checkpoint's
    evaluate(figures);
    figures.epoch_s = seconds_since(started);
    char text[200];
    std::snprintf(text, sizeof text, "evaluate: val loss %.4f top1 %.2f%% top5 %.2f%% (%zu images)",
                  figures.val_loss, 100 * figures.val_top1, 100 * figures.val_top5,
                  data->val_size());
    metrics->progress().line(text);
    metrics->write_epoch(figures, false, model->step());
    return 0;
  }
  for (int64_t epoch = checkpoints->first_epoch(); epoch < options.epochs; ++epoch) {
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
    figures.best = checkpoints->record_val_top1(figures.val_top1);
    checkpoints->save("last", epoch + 1, epoch + 1, 0, *model, stream);
    if (figures.best) checkpoints->save("best", epoch + 1, epoch + 1, 0, *model, stream);
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
