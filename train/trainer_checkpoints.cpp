#include "train/trainer_checkpoints.h"

#include <filesystem>
#include <optional>

#include "kernels/error.h"
#include "nn/checkpoint.h"
#include "train/json_line.h"

namespace engine::train {

TrainerCheckpoints::TrainerCheckpoints(const TrainOptions& options, bool rank0, int world,
                                       std::vector<std::string> classes)
    : options_(options), rank0_(rank0), world_(world), classes_(std::move(classes)) {}

void TrainerCheckpoints::resume(TrainerModel& model, Progress& progress, Stream& stream) {
  if (options_.resume.empty()) {
    if (!options_.pretrained.empty()) start_from_pretrained(model, progress, stream);
    model.broadcast_from_rank0(stream);
    return;
  }
  const nn::LoadedCheckpoint checkpoint = nn::load_checkpoint(options_.resume, model.net(), stream);
  const nn::CheckpointState& saved = checkpoint.info.state;
  evaluated_epochs_ = saved.epoch;
  if (checkpoint.info.engine_checkpoint && !options_.evaluate) {
    nn::load_optimizer_state(checkpoint, model.optimizer(), stream);
    model.set_step(saved.step);
    first_epoch_ = saved.sampler.epoch;
    const auto extra = [&](const char* key) -> std::optional<std::string> {
      const auto found = saved.extra.find(key);
      if (found == saved.extra.end()) return std::nullopt;
      return found->second;
    };
    if (saved.sampler.index > 0) {
      // Mid-epoch: the same world size and batch give the same sample order onward.
      const std::string here = std::to_string(world_) + " ranks x batch " +
                               std::to_string(options_.batch_size) + " x " +
                               std::to_string(options_.accum_steps) + " accumulated";
      const std::string then = extra("world_size").value_or("?") + " ranks x batch " +
                               extra("batch_size").value_or("?") + " x " +
                               extra("accum_steps").value_or("1") + " accumulated";
      if (here != then) {
        fail("--resume " + options_.resume + " stopped mid-epoch with " + then +
             "; continuing it exactly needs the same, this run has " + here);
      }
      first_batch_ = saved.sampler.index / options_.batch_size;
    }
    // A percent since 2026-12-04 (best_val_top1_pct); earlier checkpoints saved a fraction.
    if (const auto best = extra("best_val_top1_pct")) {
      best_top1_ = std::stod(*best) / 100;
    } else if (const auto fraction = extra("best_val_top1")) {
      best_top1_ = std::stod(*fraction);
    }
  }
  // Every rank read the same file; rank 0's copy is the one all keep (and a state_dict's
  // BatchNorm buffers reach every rank).
  model.broadcast_from_rank0(stream);
  if (rank0_) {
    progress.line("resumed from " + options_.resume + " (" +
                  (checkpoint.info.engine_checkpoint ? "epoch " + std::to_string(first_epoch_ + 1) +
                                                           ", step " + std::to_string(model.step())
                                                     : std::string("a plain state_dict")) +
                  ")");
  }
}

void TrainerCheckpoints::start_from_pretrained(TrainerModel& model, Progress& progress,
                                               Stream& stream) {
  const nn::LoadedCheckpoint loaded =
      nn::load_checkpoint(options_.pretrained, model.net(), stream, {.new_head = true});
  if (!rank0_) return;
  const std::string head = loaded.new_head ? "; its " + std::to_string(loaded.info.num_classes) +
                                                 "-class fc replaced by a new one for these " +
                                                 std::to_string(classes_.size()) +
                                                 " classes, initialized as torchvision's"
                                           : "";
  progress.line("started from the weights of " + options_.pretrained + head);
}

void TrainerCheckpoints::resume_ema(TrainerModel& model, Progress& progress, Stream& stream) {
  if (options_.resume.empty()) return;
  const std::string saved =
      (std::filesystem::path(options_.resume).parent_path() / "ema.safetensors").string();
  const int64_t step = model.step();
  std::string what;
  if (!std::filesystem::exists(saved)) {
    what = "no " + saved + ": the weight average starts from the resumed weights";
  } else if (const int64_t at = nn::read_checkpoint_info(saved).state.step; at != step) {
    what = saved + " is at step " + std::to_string(at) + ", the checkpoint at step " +
           std::to_string(step) + ": the weight average starts again from the resumed weights";
  } else {
    // Loaded through the model: its weights are the average's while the two are swapped.
    model.swap_ema(stream);
    nn::load_checkpoint(saved, model.net(), stream);
    model.swap_ema(stream);
    what = "resumed the weight average from " + saved;
  }
  if (rank0_) progress.line(what);
}

void TrainerCheckpoints::save(const std::string& name, int64_t epochs_done, int64_t sampler_epoch,
                              int64_t sampler_batches, TrainerModel& model, Stream& stream) {
  if (!rank0_) return;
  nn::CheckpointState state;
  state.epoch = epochs_done;
  state.step = model.step();
  state.sampler = {sampler_epoch, sampler_batches * options_.batch_size};
  state.classes = classes_;
  state.image_size = options_.image_size;
  state.normalize_mean.assign(options_.normalize_mean.begin(), options_.normalize_mean.end());
  state.normalize_std.assign(options_.normalize_std.begin(), options_.normalize_std.end());
  state.seed = options_.seed;
  state.extra["world_size"] = std::to_string(world_);
  state.extra["batch_size"] = std::to_string(options_.batch_size);
  state.extra["accum_steps"] = std::to_string(options_.accum_steps);
  state.extra["lr_schedule"] = std::string(schedule_name(options_.lr_schedule));
  if (best_top1_ >= 0) state.extra["best_val_top1_pct"] = json_number(100 * best_top1_);
  if (model.has_ema() && name == "last") {
    // Written before `last`: a run killed between the two finds an average of a later step
    // than `last`, which --resume names and starts again rather than mixing them.
    model.swap_ema(stream);
    nn::save_checkpoint(checkpoint_path(options_, "ema"), model.net(), state, stream);
    model.swap_ema(stream);
  }
  nn::save_checkpoint(checkpoint_path(options_, name), model.net(), model.optimizer(), state,
                      stream);
}

bool TrainerCheckpoints::record_val_top1(double val_top1) {
  if (!(val_top1 > best_top1_)) return false;
  best_top1_ = val_top1;
  return true;
}

}  // namespace engine::train
