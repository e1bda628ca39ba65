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
#include "nn/sync_batchnorm.h"

namespace engine::train {

namespace {

nn::LrSchedule make_schedule(const TrainOptions& o, int64_t steps_per_epoch) {
  nn::LrSchedule schedule;
  schedule.steps_per_epoch = steps_per_epoch;
  schedule.warmup = {o.warmup_epochs, o.warmup_start_factor};
  const int64_t main_epochs = std::max<int64_t>(1, o.epochs - o.warmup_epochs);
  switch (o.lr_schedule) {
    case ScheduleName::constant:
      schedule.kind = nn::ConstantLr{};
      break;
    case ScheduleName::step:
      schedule.kind = nn::StepLr{o.lr_step_size, o.lr_gamma};
      break;
    case ScheduleName::cosine:
      schedule.kind = nn::CosineLr{main_epochs, 0};
      break;
    case ScheduleName::onecycle:
      schedule.kind = nn::OneCycleLr{.max_lr = o.lr, .total_steps = o.epochs * steps_per_epoch};
      break;
  }
  nn::validate_lr_schedule(schedule);
  return schedule;
}

int default_threads(const MpiSession& session) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, session.world().local_size));
}

}  // namespace

void Trainer::State::build() {
  const TrainOptions& o = options;
  omp_set_num_threads(o.threads > 0 ? o.threads : default_threads(session));
  comms.emplace(o, session, device);

  model.allocate(device, stream);
  if (o.sync_bn) nn::convert_sync_batchnorm(model.layers(), comms->grad());
  nn::SgdConfig sgd_config;
  sgd_config.lr = static_cast<float>(o.lr);
  sgd_config.momentum = static_cast<float>(o.momentum);
  sgd_config.weight_decay = static_cast<float>(o.weight_decay);
  sgd_config.nesterov = o.nesterov;
  sgd_config.decay_norm_and_bias = o.norm_weight_decay;
  sgd = std::make_unique<nn::Sgd>(model.params(), sgd_config, stream);
  ddp = std::make_unique<nn::DataParallel>(
      model.params(), comms->grad(),
      nn::DataParallelOptions{.bucket_cap_mb = o.bucket_cap_mb, .overlap = true});
  metric_rows = std::make_unique<MetricRows>(kMetricRows, device);

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
    schedule = make_schedule(o, steps_per_epoch);
  }
  data::LoaderConfig val = loader;
  val.transform.augmentation = data::Augmentation::eval;
  set_image_size(val, val_image_size(o));
  val_loader = std::make_unique<data::Loader>(datasets.val, val);
}

void Trainer::State::resume() {
  if (options.resume.empty()) {
    ddp->broadcast_from_rank0(stream);
    return;
  }
  const nn::LoadedCheckpoint checkpoint = nn::load_checkpoint(options.resume, model, stream);
  const nn::CheckpointState& saved = checkpoint.info.state;
  evaluated_epochs = saved.epoch;
  if (checkpoint.info.engine_checkpoint && !options.evaluate) {
    nn::load_optimizer_state(checkpoint, *sgd, stream);
    step = saved.step;
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
  ddp->broadcast_from_rank0(stream);
  if (rank0()) {
    progress.line("resumed from " + options.resume + " (" +
                  (checkpoint.info.engine_checkpoint ? "epoch " + std::to_string(first_epoch + 1) +
                                                           ", step " + std::to_string(step)
                                                     : std::string("a plain state_dict")) +
                  ")");
  }
}

void Trainer::State::start_ema() {
  if (options.ema_decay < 0 || options.evaluate) return;
  ema = std::make_unique<WeightEma>(model.params(), options.ema_decay, stream);
  if (options.resume.empty()) return;
  const std::string saved =
      (std::filesystem::path(options.resume).parent_path() / "ema.safetensors").string();
  std::string what;
  if (!std::filesystem::exists(saved)) {
    what = "no " + saved + ": the weight average starts from the resumed weights";
  } else if (const int64_t at = nn::read_checkpoint_info(saved).state.step; at != step) {
    what = saved + " is at step " + std::to_string(at) + ", the checkpoint at step " +
           std::to_string(step) + ": the weight average starts again from the resumed weights";
  } else {
    // Loaded through the model: its weights are the average's while the two are swapped.
    ema->swap(stream);
    nn::load_checkpoint(saved, model, stream);
    ema->swap(stream);
    what = "resumed the weight average from " + saved;
  }
  if (rank0()) progress.line(what);
}

void Trainer::State::ensure_setup(const Tensor& images) {
  const Shape shape = {images.size(0), images.size(1), images.size(2), 3};
  const int64_t batch = shape[0];
  if (shape == model_shape) return;
  model.setup(shape, options.precision.activations, stream);
  loss.setup(batch, static_cast<int64_t>(datasets.classes().size()), options.precision.activations,
             device);
  model_shape = shape;
}

}  // namespace engine::train
