#include "nn/grad_clip.h"

#include <cmath>
#include <string>
#include <vector>

#include "kernels/error.h"
#include "kernels/ops/copy.h"
#include "kernels/ops/optim.h"
#include "nn/parameter_runs.h"

namespace engine::nn {

GradClip::GradClip(ParameterSet& parameters, float max_norm, Stream& stream)
    : parameters_(parameters), max_norm_(max_norm) {
  if (!(max_norm > 0.f) || !std::isfinite(max_norm)) {
    fail("nn::GradClip: max_norm must be finite and > 0, got " + std::to_string(max_norm));
  }
  if (!parameters_.allocated()) fail("nn::GradClip: the ParameterSet is not allocated");
  const Device device = parameters_.device();
  const int64_t n = parameters_.flat_grads().numel();
  if (n >= (int64_t{1} << 31)) fail("nn::GradClip: " + std::to_string(n) + " gradients");
  segment_ = Tensor::empty({1, kSegmentFields}, DType::i32, device);
  copy(Tensor::from_ints({1, kSegmentFields}, {0, static_cast<int32_t>(n), 0}), segment_, stream);
  stream.synchronize();  // the host row dies here
  blocks_ = sum_squares_blocks(n);
  partials_ = Tensor::zeros(
      {sum_squares_partials({.segments = 1, .blocks_per_segment = blocks_, .inputs = 1})},
      DType::f64, device, stream);
  sum_squares_ = Tensor::zeros({1}, DType::f64, device, stream);
}

void GradClip::clip(Stream& stream) {
  if (!parameters_.grads_hold_values()) {
    fail("nn::GradClip::clip: no gradients since zero_grad() (run backward first)");
  }
  Tensor& grads = parameters_.flat_grads();
  sum_squares({.a = grads,
               .b = Tensor(),
               .segments = segment_,
               .sums = sum_squares_,
               .partials = partials_,
               .blocks_per_segment = blocks_},
              stream);
  clip_grad({.grads = grads, .sum_squares = sum_squares_, .max_norm = max_norm_}, stream);
}

double GradClip::last_norm(Stream& stream) const {
  return std::sqrt(sum_squares_.to_doubles(stream)[0]);
}

}  // namespace engine::nn
