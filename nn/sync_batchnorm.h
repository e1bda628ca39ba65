// torch.nn.SyncBatchNorm.convert_sync_batchnorm for the engine's models: every BatchNorm2d
// of a layer tree computes its training statistics over the ranks of a communicator (see
// nn/batchnorm2d.h). Parameters, buffers, names and the flat buffers' layout are unchanged,
// so a converted model loads and saves the same checkpoints.
#pragma once

#include "collectives/communicator.h"
#include "nn/layer.h"

namespace engine::nn {

// Attaches comm to every BatchNorm2d under root (root included); their type() then reads
// "SyncBatchNorm". Converting again (with the same or another communicator) re-attaches.
// comm must outlive the model's training passes.
void convert_sync_batchnorm(Layer& root, Communicator& comm);

// How many layers under root are SyncBatchNorm (a converted model has every BN so).
int count_sync_batchnorm(const Layer& root);

}  // namespace engine::nn
