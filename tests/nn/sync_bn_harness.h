// What the SyncBN suite runs on every rank: one BatchNorm2d training step (forward, backward)
// on this rank's slice of a global batch, with or without a sync group, and the same layer on
// the whole global batch, which each rank builds deterministically from (seed, rank) for
// every rank. Weights, biases and the incoming gradient are the same functions of the seed on
// every rank, so rank r's SyncBN rows must equal rows [offset_r, offset_r + rows_r) of the
// global BatchNorm2d.
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

#include "kernels/ops/copy.h"
#include "nn/batchnorm2d.h"
#include "tests/kernels/batchnorm_cases.h"
#include "tests/kernels/close_values.h"

namespace engine::testing {

// A global batch split over ranks: rank r holds batches[r] images of h x w x channels.
struct BnBatch {
  std::vector<int64_t> batches;
  int64_t h = 1, w = 1, channels = 1;
  double mean = 0.0, std = 1.0;
  uint32_t seed = 1;

  int64_t image_values() const { return h * w * channels; }
  int64_t global_batch() const {
    return std::accumulate(batches.begin(), batches.end(), int64_t{0});
  }
  int64_t offset(int rank) const {
    return std::accumulate(batches.begin(), batches.begin() + rank, int64_t{0}) * image_values();
  }
  Shape shape(int64_t batch) const { return {batch, h, w, channels}; }
};

// Rank r's x, dy or residual (which = 0, 1, 2): its own seed, so the ranks' data differ.
inline std::vector<float> rank_values(const BnBatch& b, int rank, int which) {
  const double mean = which == 0 ? b.mean : 0.0;
  const double std = which == 0 ? b.std : 1.0;
  return normal_values(b.batches[rank] * b.image_values(),
                       b.seed * 7919u + static_cast<uint32_t>(rank) * 31u + which, DType::f32, mean,
                       std);
}

// Every rank's values one after the other: the global batch.
inline std::vector<float> global_values(const BnBatch& b, int which) {
  std::vector<float> all;
  for (int r = 0; r < static_cast<int>(b.batches.size()); ++r) {
    const std::vector<float> part = rank_values(b, r, which);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

inline std::vector<float> rows_of(const std::vector<float>& global, const BnBatch& b, int rank) {
  const int64_t begin = b.offset(rank);
  return {global.begin() + begin, global.begin() + begin + b.batches[rank] * b.image_values()};
}

struct BnStep {
  bool relu = false;
  bool residual = false;
  bool training = true;
};

struct BnResult {
  std::vector<float> y, dx, residual_grad, dweight, dbias, running_mean, running_var;
  int64_t batches_tracked = 0;
};

// One step of a fresh BatchNorm2d (weight and bias from the seed, running stats 0 and 1) on
// x / dy / residual of `batch` images, on the stream's device; comm: the sync group, or nullptr
// for plain BN. An eval
// step first trains once on the same x so the running statistics are not the initial ones
// (that training step communicates too).
inline BnResult run_bn(const BnBatch& b, int64_t batch, const std::vector<float>& x,
                       const std::vector<float>& dy, const std::vector<float>& residual,
                       const BnStep& step, Communicator* comm, Stream& stream) {
  const Device device = stream.device();
  nn::ParameterSet params;
  nn::BatchNorm2d bn(params, "bn", {b.channels, 1e-5f, 0.1f, step.relu, step.residual});
  params.allocate(device, stream);
  bn.reset_state(stream);
  const std::vector<float> weight = normal_values(b.channels, b.seed + 101, DType::f32, 1.0, 0.5);
  const std::vector<float> bias = normal_values(b.channels, b.seed + 102, DType::f32, 0.0, 0.5);
  Tensor w = params.value(bn.weight_id()), bb = params.value(bn.bias_id());
  copy(Tensor::from_floats({b.channels}, weight).to(device, stream), w, stream);
  copy(Tensor::from_floats({b.channels}, bias).to(device, stream), bb, stream);
  if (comm != nullptr) bn.set_sync_group(comm);
  const Shape shape = b.shape(batch);
  bn.setup(shape, {device, DType::f32, stream, true, true});
  const Tensor tx = Tensor::from_floats(shape, x).to(device, stream);
  const Tensor tres =
      step.residual ? Tensor::from_floats(shape, residual).to(device, stream) : Tensor();
  auto forward = [&](nn::Pass& pass) -> const Tensor& {
    return step.residual ? bn.forward(tx, tres, pass) : bn.forward(tx, pass);
  };
  BnResult result;
  if (!step.training) {
    nn::Pass train{stream, true, false, {}};
    forward(train);
    nn::Pass eval{stream, false, false, {}};
    result.y = forward(eval).to_floats(stream);
  } else {
    nn::Pass pass{stream, true, false, {}};
    result.y = forward(pass).to_floats(stream);
    result.dx =
        bn.backward(Tensor::from_floats(shape, dy).to(device, stream), pass).to_floats(stream);
    if (step.relu && !step.residual) {
      // No residual to continue: the layer keeps no ReLU gradient (both of its backward passes
      // mask dy in registers). The reference's: dy where y > 0, as relu_backward.
      result.residual_grad = dy;
      for (size_t i = 0; i < dy.size(); ++i)
        if (!(result.y[i] > 0.f)) result.residual_grad[i] = 0.f;
    } else {
      result.residual_grad = bn.residual_grad().to_floats(stream);
    }
    result.dweight = params.grad(bn.weight_id()).to_floats(stream);
    result.dbias = params.grad(bn.bias_id()).to_floats(stream);
  }
  result.running_mean = bn.running_mean().to_floats(stream);
  result.running_var = bn.running_var().to_floats(stream);
  result.batches_tracked = bn.batches_tracked();
  return result;
}

}  // namespace engine::testing
