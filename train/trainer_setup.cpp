// Setting up a rank's training run: communicators, the model, SGD and DDP, the loaders, and
// a resumed checkpoint and weight average (trainer_state.h).
#include "train/trainer_state.h"

#include <omp.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <thread>

#include "data/sampler.h"
#include "nn/checkpoint.h"

namespace engine::train {

namespace {

int default_threads(const MpiSession& session) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, session.world().local_size));
}

}  // namespace

void Trainer::State::build() {
  const TrainOptions& o = options;
  omp_set_num_threads(o.threads > 0 ? o.threads : default_threads(session));
  comms.emplace(o, session, device);

  model->build(comms->grad(), stream);
  metrics.emplace(options, rank0(), world(), device);

  const int cores = std::max(1, default_threads(session));
  data::LoaderConfig loader;
  loader.batch_size = static_cast<int>(o.batch_size);
  loader.workers = o.workers > 0 ? o.workers : std::min(cores, 8);
  loader.dtype = o.precision.activations;
  loader.device = device;
  loader.seed = o.seed;
  loader.transform.mean = o.normalize_mean;
  loader.transform.std = o.normalize_std;
  set_image_size(loader, train_image_size(o, 0));
  loader.transform.crop.scale_min = o.crop_scale[0];
  loader.transform.crop.scale_max = o.crop_scale[1];
  loader.bad_files = std::make_shared<data::BadFileLog>();
  if (datasets.train) {
    data::LoaderConfig train = loader;
    train.transform.augmentation = data::Augmentation::train;
    train.drop_last = true;  // every step has the full batch (and BatchNorm at least 2 values)
    train.refill_skipped = true;
    train_loader = std::make_unique<data::Loader>(*datasets.train, train);
    const data::DistributedSampler sampler(static_cast<int64_t>(datasets.train->size()), world(),
                                           session.rank(), true, o.seed);
    // Optimizer steps: --accum-steps batches each; an epoch's last batches that make no whole
    // step are left out, as drop_last leaves out a partial batch.
    steps_per_epoch = sampler.num_samples() / (o.batch_size * o.accum_steps);
    if (steps_per_epoch == 0) {
      fail("--batch-size " + std::to_string(o.batch_size) + " x --accum-steps " +
           std::to_string(o.accum_steps) + ": each of the " + std::to_string(world()) +
           " ranks gets " + std::to_string(sampler.num_samples()) + " of the " +
           std::to_string(datasets.train->size()) +
           " training images per epoch, less than one optimizer step");
    }
    model->set_schedule(steps_per_epoch);
  }
  data::LoaderConfig val = loader;
  val.transform.augmentation = data::Augmentation::eval;
  set_image_size(val, val_image_size(o));
  val_loader = std::make_unique<data::Loader>(datasets.val, val);
}

void Trainer::State::resume() {
  if (options.resume.empty()) {
    model->broadcast_from_rank0(stream);
    return;
  }
  const nn::LoadedCheckpoint checkpoint = nn::load_checkpoint(options.resume, model->net(), stream);
  const nn::CheckpointState& saved = checkpoint.info.state;
  evaluated_epochs = saved.epoch;
  if (checkpoint.info.engine_checkpoint && !options.evaluate) {
    nn::load_optimizer_state(checkpoint, model->sgd(), stream);
    model->set_step(saved.step);
    first_epoch = saved.sampler.epoch;
    const auto extra = [&](const char* key) -> std::optional<std::string> {
      const auto found = saved.extra.find(key);
      if (found == saved.extra.end()) return std::nullopt;
      return found->second;
    };
    if (saved.sampler.index > 0) {
      // Mid-epoch: the same world size and batch give the same sample order onward.
      const std::string here = std::to_string(world()) + " ranks x batch " +
                               std::to_string(options.batch_size) + " x " +
                               std::to_string(options.accum_steps) + " accumulated";
      const std::string then = extra("world_size").value_or("?") + " ranks x batch " +
                               extra("batch_size").value_or("?") + " x " +
                               extra("accum_steps").value_or("1") + " accumulated";
      if (here != then) {
        fail("--resume " + options.resume + " stopped mid-epoch with " + then +
             "; continuing it exactly needs the same, this run has " + here);
      }
      first_batch = saved.sampler.index / options.batch_size;
    }
    // A percent since 2026-12-04 (best_val_top1_pct); earlier checkpoints saved a fraction.
    if (const auto best = extra("best_val_top1_pct")) {
      best_top1 = std::stod(*best) / 100;
    } else if (const auto fraction = extra("best_val_top1")) {
      best_top1 = std::stod(*fraction);
    }
  }
  // Every rank read the same file; rank 0's copy is the one all keep (and a state_dict's
  // BatchNorm buffers reach every rank).
  model->broadcast_from_rank0(stream);
  if (rank0()) {
    metrics->progress().line("resumed from " + options.resume + " (" +
                             (checkpoint.info.engine_checkpoint
                                  ? "epoch " + std::to_string(first_epoch + 1) + ", step " +
                                        std::to_string(model->step())
                                  : std::string("a plain state_dict")) +
                             ")");
  }
}

void Trainer::State::start_ema() {
  if (!model->start_ema(stream)) return;
  if (options.resume.empty()) return;
  const std::string saved =
      (std::filesystem::path(options.resume).parent_path() / "ema.safetensors").string();
  std::string what;
  if (!std::filesystem::exists(saved)) {
    what = "no " + saved + ": the weight average starts from the resumed weights";
  } else if (const int64_t at = nn::read_checkpoint_info(saved).state.step; at != model->step()) {
    what = saved + " is at step " + std::to_string(at) + ", the checkpoint at step " +
           std::to_string(model->step()) +
           ": the weight average starts again from the resumed weights";
  } else {
    // Loaded through the model: its weights are the average's while the two are swapped.
    model->swap_ema(stream);
    nn::load_checkpoint(saved, model->net(), stream);
    model->swap_ema(stream);
    what = "resumed the weight average from " + saved;
  }
  if (rank0()) metrics->progress().line(what);
}

}  // namespace engine::train
