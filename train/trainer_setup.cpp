// Setting up a rank's training run: communicators, the model, SGD and DDP, the figures' rows
// and the loaders (trainer_state.h).
#include "train/trainer_state.h"

#include <omp.h>

#include <algorithm>
#include <thread>

#include "data/sampler.h"

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

}  // namespace engine::train
