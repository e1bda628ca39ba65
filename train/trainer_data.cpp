#include "train/trainer_data.h"

#include <algorithm>
#include <cmath>

#include "data/sampler.h"
#include "data/shard_sampler.h"
#include "kernels/error.h"

namespace engine::train {

namespace {

// A crop of `size` px; validation first resizes the shorter side to size / 0.875, as
// torchvision's references (224 from 256).
void set_image_size(data::LoaderConfig& config, int64_t size) {
  config.transform.output_size = static_cast<int>(size);
  config.transform.resize_size = static_cast<int>(std::lround(static_cast<double>(size) / 0.875));
}

}  // namespace

TrainerData::TrainerData(const TrainOptions& options, int rank, int world, Datasets datasets,
                         Device device, int cores)
    : options_(options), rank_(rank), world_(world), datasets_(std::move(datasets)) {
  const TrainOptions& o = options;
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
  if (datasets_.train) {
    data::LoaderConfig train = loader;
    train.transform.augmentation = data::Augmentation::train;
    train.transform.auto_augment.policy = o.auto_augment;
    train.transform.auto_augment.magnitude = static_cast<int>(o.ra_magnitude);
    train.transform.auto_augment.num_ops = static_cast<int>(o.ra_num_ops);
    train.transform.random_erasing.probability = o.random_erase;
    train.transform.random_erasing.random_values = o.random_erase_normal;
    train.drop_last = true;  // every step has the full batch (and BatchNorm at least 2 values)
    train.refill_skipped = true;
    train.mix = o.mix;
    train.mix.label_smoothing = o.label_smoothing;
    train.mix_rank = static_cast<uint64_t>(rank_);
    train_loader_ = std::make_unique<data::Loader>(*datasets_.train, train);
    const int64_t samples_per_rank = train_sampler(0).num_samples;
    // Optimizer steps: --accum-steps batches each; an epoch's last batches that make no whole
    // step are left out, as drop_last leaves out a partial batch.
    steps_per_epoch_ = samples_per_rank / (o.batch_size * o.accum_steps);
    if (steps_per_epoch_ == 0) {
      fail("--batch-size " + std::to_string(o.batch_size) + " x --accum-steps " +
           std::to_string(o.accum_steps) + ": each of the " + std::to_string(world_) +
           " ranks gets " + std::to_string(samples_per_rank) + " of the " +
           std::to_string(datasets_.train->size()) +
           " training images per epoch, less than one optimizer step");
    }
  }
  data::LoaderConfig val = loader;
  val.transform.augmentation = data::Augmentation::eval;
  set_image_size(val, val_image_size(o));
  val_loader_ = std::make_unique<data::Loader>(datasets_.val, val);
}

int64_t TrainerData::set_train_crop(int64_t epoch) {
  if (const int64_t size = train_image_size(options_, epoch);
      size != train_loader_->config().transform.output_size) {
    data::LoaderConfig config = train_loader_->config();
    set_image_size(config, size);
    train_loader_.reset();
    train_loader_ = std::make_unique<data::Loader>(*datasets_.train, config);
  }
  return train_loader_->config().transform.output_size;
}

TrainerData::EpochOrder TrainerData::train_sampler(int64_t epoch) const {
  const data::ImageFolder& train = *datasets_.train;
  if (const data::ShardIndex* shards = train.shards()) {
    data::ShardSampler sampler(*shards, world_, rank_, true, options_.seed,
                               options_.shuffle_buffer);
    sampler.set_epoch(epoch);
    return {sampler.num_samples(), [sampler] { return sampler.indices(); }};
  }
  data::DistributedSampler sampler(static_cast<int64_t>(train.size()), world_, rank_, true,
                                   options_.seed);
  sampler.set_epoch(epoch);
  return {sampler.num_samples(), [sampler] { return sampler.indices(); }};
}

void TrainerData::start_train_epoch(int64_t epoch, int64_t first_batch) {
  train_loader_->start_epoch(epoch, train_sampler(epoch).indices(), first_batch);
}

void TrainerData::start_validation() {
  const auto size = static_cast<int64_t>(datasets_.val.size());
  if (datasets_.val.shards()) {
    val_loader_->start_epoch(0, data::shard_evaluation_indices(size, world_, rank_));
    return;
  }
  const data::EvaluationSampler sampler(size, world_, rank_);
  val_loader_->start_epoch(0, sampler.indices());
}

}  // namespace engine::train
