// A small ParameterSet with every parameter kind and alignment gaps, and deterministic flat
// patterns for it: the optimizer tests' model (test_sgd.cpp, test_adamw.cpp, test_lars.cpp).
// tools/make_optim_goldens.py names the same parameters with the same element counts.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops/copy.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"
#include "nn/optimizer.h"
#include "nn/parameters.h"

namespace engine::nn::testing {

// Registered as a ResNet registers (conv, norm, ..., fc), odd sizes so that gaps exist. The
// layout is the reverse: fc.bias@0, fc.weight@16, conv2.bias@48, conv2.weight@64,
// bn1.bias@128, bn1.weight@144, conv1.weight@160, 176 elements in all.
inline void register_tiny_model(ParameterSet& set) {
  set.add_parameter("conv1.weight", {3, 1, 1, 5}, ParameterKind::conv_filter);
  set.add_parameter("bn1.weight", {3}, ParameterKind::norm_weight);
  set.add_parameter("bn1.bias", {3}, ParameterKind::norm_bias);
  set.add_parameter("conv2.weight", {2, 3, 3, 3}, ParameterKind::conv_filter);
  set.add_parameter("conv2.bias", {2}, ParameterKind::bias);
  set.add_parameter("fc.weight", {4, 7}, ParameterKind::linear_weight);
  set.add_parameter("fc.bias", {4}, ParameterKind::bias);
}
constexpr int64_t kFlatSize = 176;

inline double pseudo_random(uint64_t seed, int64_t i) {  // in [-1, 1)
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return static_cast<double>(x >> 11) / static_cast<double>(1ull << 52) - 1.0;
}

// Flat values of `seed` inside the parameters and zero in the gaps, as f32 and as doubles.
inline std::vector<float> flat_pattern(const ParameterSet& set, uint64_t seed) {
  std::vector<float> flat(static_cast<size_t>(set.flat_values().numel()), 0.f);
  for (const ParameterInfo& p : set.parameters())
    for (int64_t i = 0; i < p.numel(); ++i)
      flat[static_cast<size_t>(p.offset + i)] =
          static_cast<float>(pseudo_random(seed, p.offset + i));
  return flat;
}

inline void write_flat(Tensor& flat, const std::vector<float>& values, Stream& stream) {
  copy(Tensor::from_floats(flat.shape(), values), flat, stream);
}

// The tiny model allocated on `device`, its values flat_pattern(seed).
inline void make_tiny_model(ParameterSet& set, Device device, uint64_t seed, Stream& stream) {
  register_tiny_model(set);
  set.allocate(device, stream);
  write_flat(set.flat_values(), flat_pattern(set, seed), stream);
}

// Gradients of pattern `seed`, marked written as a backward leaves them.
inline void write_tiny_grads(ParameterSet& set, uint64_t seed, Stream& stream) {
  write_flat(set.flat_grads(), flat_pattern(set, seed), stream);
  set.mark_grads_written();
}

// The optimizer's state as a checkpoint holds it: its buffers through the host.
inline OptimizerState saved_state(const Optimizer& optimizer, Stream& stream) {
  OptimizerState state{
      .started = optimizer.started(), .buffers = {}, .metadata = optimizer.state_metadata()};
  for (const auto& [name, tensor] : optimizer.state_buffers())
    state.buffers[name] = tensor->to_floats(stream);
  return state;
}

}  // namespace engine::nn::testing
