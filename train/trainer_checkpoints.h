// A training run's checkpoints (trainer.h): what --resume restores (the weights, and from an
// engine checkpoint the optimizer state, the step, where the sampler stopped and the best
// validation top-1 so far) and what rank 0 saves: last.safetensors at every epoch's end,
// --save-every-steps and a stop, best.safetensors at a new best, and with --ema the average
// in ema.safetensors beside them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/stream.h"
#include "train/progress.h"
#include "train/train_options.h"
#include "train/trainer_model.h"

namespace engine::train {

class TrainerCheckpoints {
 public:
  TrainerCheckpoints(const TrainOptions& options, bool rank0, int world,
                     std::vector<std::string> classes);

  // --resume: loads the file into the model (and the optimizer and the step), then every rank
  // takes rank 0's weights, as without --resume. Rank 0 says what it resumed. Without it,
  // --pretrained loads only the file's weights (LoadOptions::new_head).
  void resume(TrainerModel& model, Progress& progress, Stream& stream);
  // --ema after resume(): the average starts from the ema.safetensors saved beside the
  // resumed checkpoint at its step, else from the resumed weights. Rank 0 says which.
  void resume_ema(TrainerModel& model, Progress& progress, Stream& stream);

  // Rank 0 writes <checkpoint-dir>/<name>.safetensors; the sampler continues at batch
  // `sampler_batches` of epoch `sampler_epoch`.
  void save(const std::string& name, int64_t epochs_done, int64_t sampler_epoch,
            int64_t sampler_batches, TrainerModel& model, Stream& stream);

  // The epoch training starts at, and the loader batch `epoch` starts at (a resumed
  // mid-epoch checkpoint's position, else 0).
  int64_t first_epoch() const { return first_epoch_; }
  int64_t first_batch(int64_t epoch) const { return epoch == first_epoch_ ? first_batch_ : 0; }
  // --evaluate: the epochs the checkpoint had trained.
  int64_t evaluated_epochs() const { return evaluated_epochs_; }
  // Whether `val_top1` beats the best so far (which it then becomes).
  bool record_val_top1(double val_top1);

 private:
  void start_from_pretrained(TrainerModel& model, Progress& progress, Stream& stream);

  const TrainOptions& options_;
  bool rank0_;
  int world_;
  std::vector<std::string> classes_;
  int64_t first_epoch_ = 0, first_batch_ = 0;
  double best_top1_ = -1;
  int64_t evaluated_epochs_ = 0;
};

}  // namespace engine::train
