// How the optimizers cut a ParameterSet's flat buffers: into runs of neighbouring parameters
// that share a weight-decay flag (one fused step per run: nn::Sgd, nn::AdamW), and into a
// segment table of one row per parameter tensor (per-tensor norms: nn::Lars, nn::GradClip).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/stream.h"
#include "kernels/tensor.h"
#include "nn/parameters.h"

namespace engine::nn {

// A contiguous range of the flat buffers updated by one fused step. The alignment gaps
// between parameters belong to the run of the parameter before them: gaps are zero in
// values and gradients, so any update leaves them zero.
struct DecayRun {
  int64_t offset = 0;
  int64_t numel = 0;
  bool weight_decay = true;
};

// One run over everything when nothing is excluded (weight_decay 0 or decay_norm_and_bias),
// else the runs where decay is on (conv filters, linear weights) or off (is_norm_or_bias).
std::vector<DecayRun> decay_runs(const ParameterSet& parameters, float weight_decay,
                                 bool decay_norm_and_bias);

// The i32 [parameters, 3] table {begin, end, flags} of kernels/ops/optim.h on the parameters'
// device, one row per parameter in offset order, each reaching the next parameter's offset
// (gaps included, as zeros they add nothing to a norm); flags kSegmentAdapt on the rows
// `adapt` names.
enum class SegmentAdapt { none, weights, all };  // weights: conv filters and linear weights
Tensor parameter_segments(const ParameterSet& parameters, SegmentAdapt adapt, Stream& stream);

// Blocks per segment for sum_squares: enough that a block sums about 64K elements of the
// largest segment, at least 1 and at most 1024.
int sum_squares_blocks(int64_t largest_segment);

}  // namespace engine::nn
