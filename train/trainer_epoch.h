// One epoch of a rank's training run (trainer.h): its steps, with the gradients all-reduced
// during backward and the steps' figures summed over ranks with the stop requests, and
// validation. Each takes the run's pieces it touches.
#pragma once

#include <cstdint>

#include "kernels/stream.h"
#include "train/progress.h"
#include "train/train_options.h"
#include "train/trainer_checkpoints.h"
#include "train/trainer_comms.h"
#include "train/trainer_data.h"
#include "train/trainer_metrics.h"
#include "train/trainer_model.h"

namespace engine::train {

// Trains epoch `epoch` (from a resumed mid-epoch position, when it has one) and fills the
// training figures. Returns the signal that stopped the epoch (after saving `last`), -1 when
// --max-steps did, 0 when it ran to its end.
int train_epoch(int64_t epoch, const TrainOptions& options, TrainerData& data, TrainerModel& model,
                TrainerComms& comms, TrainerCheckpoints& checkpoints, TrainerMetrics& metrics,
                Stream& stream, EpochFigures& figures);

// Validates the model's current weights (rank 0's BatchNorm statistics) on every validation
// sample once and fills the validation figures.
void evaluate(TrainerData& data, TrainerModel& model, TrainerComms& comms, TrainerMetrics& metrics,
              Stream& stream, EpochFigures& figures);

}  // namespace engine::train
