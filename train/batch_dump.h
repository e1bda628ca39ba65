// --dump-batches DIR: each optimizer step's batch, as each rank gave it to the model, in a
// file per step and rank, so that a run can be replayed outside the engine:
// tools/replay_in_torch.py replays the steps after a checkpoint in PyTorch, from the same
// weights and momentum on the same images, and compares every step's loss with ours.
//
// DIR/step-<step, 7 digits>-rank-<rank>.safetensors, <step> as in --step-metrics (the
// optimizer step the batch is for, from 1):
//   images   F32 [n, 3, S, S]  normalized, NCHW (PyTorch's layout; the model reads NHWC)
//   labels   I64 [n]
//   indices  I64 [n]           the samples' positions in the ImageFolder's sorted listing
//   __metadata__  step, epoch, batch_index, rank, world_size
#pragma once
#include <cstdint>
#include <string>

#include "data/loader.h"
#include "kernels/stream.h"

namespace engine::train {

struct BatchDumpPlace {
  int64_t step = 0;  // the optimizer step the batch is for
  int64_t epoch = 0;
  int rank = 0;
  int world_size = 1;
};

std::string batch_dump_path(const std::string& dir, int64_t step, int rank);

// Creates DIR (and its parents) or throws an engine::Error naming the flag, DIR and the reason.
void prepare_batch_dump_dir(const std::string& dir);

// Writes the batch's file atomically (nn::write_safetensors); waits on `stream` for the images.
void dump_batch(const std::string& dir, const data::Batch& batch, const BatchDumpPlace& place,
                Stream& stream);

}  // namespace engine::train
