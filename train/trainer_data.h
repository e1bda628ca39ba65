// A training run's data (trainer.h): the datasets, a rank's loaders over them, and how many
// optimizer steps an epoch has. Each epoch's training order is the DistributedSampler's for
// (seed, epoch), or over tar shards the ShardSampler's (whole shards per rank, a shuffle
// buffer); validation counts every sample once over the ranks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/batch_keeper.h"
#include "data/loader.h"
#include "kernels/device.h"
#include "train/preflight.h"
#include "train/train_options.h"

namespace engine::train {

class TrainerData {
 public:
  // Builds the loaders (--workers 0: `cores`, at most 8). Fails when an epoch gives a rank
  // less than one optimizer step.
  TrainerData(const TrainOptions& options, int rank, int world, Datasets datasets, Device device,
              int cores);
  TrainerData(const TrainerData&) = delete;  // the loaders hold references to the datasets
  TrainerData& operator=(const TrainerData&) = delete;

  const std::vector<std::string>& classes() const { return datasets_.classes(); }
  bool has_train() const { return datasets_.train.has_value(); }  // no train/ with --evaluate
  size_t val_size() const { return datasets_.val.size(); }
  // Optimizer steps per epoch (--accum-steps batches each); 0 without train/.
  int64_t steps_per_epoch() const { return steps_per_epoch_; }

  // The training crop of `epoch` (progressive resizing): a new loader when it changes, since
  // the loader's workers hold their transform. Returns the crop in px.
  int64_t set_train_crop(int64_t epoch);
  // The epoch's batches from loader batch `first_batch` on (a resumed mid-epoch position).
  void start_train_epoch(int64_t epoch, int64_t first_batch);
  std::optional<data::Batch> next_train_batch() { return train_loader_->next(); }
  // Call once the work reading a batch (of either loader) is queued on `stream`: its device
  // tensors are kept until that work has run (data/batch_keeper.h).
  void done_with(data::Batch&& batch, const Stream& stream) {
    keeper_.keep(std::move(batch), stream);
  }
  int64_t train_skipped() const { return train_loader_->summary().skipped; }

  void start_validation();
  std::optional<data::Batch> next_val_batch() { return val_loader_->next(); }
  int64_t val_skipped() const { return val_loader_->summary().skipped; }

 private:
  struct EpochOrder {
    int64_t num_samples;                            // per rank, padding included
    std::function<std::vector<int64_t>()> indices;  // this rank's, in training order
  };
  // The training sampler of `epoch`: DistributedSampler for a folder, ShardSampler for shards.
  EpochOrder train_sampler(int64_t epoch) const;

  const TrainOptions& options_;
  int rank_, world_;
  Datasets datasets_;
  std::unique_ptr<data::Loader> train_loader_, val_loader_;
  // Destroyed before the loaders, once the last batch's readers have run.
  data::BatchKeeper keeper_;
  int64_t steps_per_epoch_ = 0;
};

}  // namespace engine::train
