// A model's state in three flat buffers (llm.c's malloc_and_point_parameters is the model):
// every trainable parameter in one f32 buffer, every gradient in a second of the same
// layout, and the BatchNorm running statistics in a third (broadcast, never all-reduced).
// Layers register what they own while the model is built, then allocate() lays it all out
// once and layers take views.
//
// Layout: parameters in the reverse of their registration order, so that a model that
// registers in forward order and runs backward in reverse finishes its gradients from
// offset 0 upwards: a gradient bucket is then a contiguous range of the gradient buffer and
// the optimizer is one fused call over the parameter buffer. Each parameter starts at a
// multiple of kParameterAlignment elements (64 bytes), so no view defeats the kernels'
// vector paths; the gaps are zero and stay zero.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/device.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::nn {

inline constexpr int64_t kParameterAlignment = 16;

// What a parameter is for: weight decay may exclude norm and bias parameters, and
// checkpoints convert filter layouts by kind.
enum class ParameterKind { conv_filter, linear_weight, bias, norm_weight, norm_bias };
std::string_view parameter_kind_name(ParameterKind kind);
bool is_norm_or_bias(ParameterKind kind);

struct ParameterInfo {
  std::string name;  // torchvision's, e.g. "layer1.0.conv1.weight"
  Shape shape;       // the engine's layout: KRSC for a conv filter
  ParameterKind kind;
  int64_t offset = -1;  // into the flat buffers, once allocated
  int64_t numel() const { return shape_numel(shape); }
};

// A BatchNorm running statistic (f32) in the buffer store.
struct BufferInfo {
  std::string name;  // e.g. "bn1.running_mean"
  Shape shape;
  int64_t offset = -1;
};

// A host-side integer state, e.g. BatchNorm's num_batches_tracked (int64 in torchvision).
struct CounterInfo {
  std::string name;
  int64_t value = 0;
};

using ParameterId = int;
using BufferId = int;
using CounterId = int;

class ParameterSet {
 public:
  ParameterSet() = default;
  ParameterSet(const ParameterSet&) = delete;
  ParameterSet& operator=(const ParameterSet&) = delete;

  // Registration, before allocate(). Names must be unique; shapes non-empty.
  ParameterId add_parameter(std::string name, Shape shape, ParameterKind kind);
  BufferId add_buffer(std::string name, Shape shape);
  CounterId add_counter(std::string name);

  // Lays out and allocates the three buffers on device, every element zero.
  void allocate(Device device, Stream& stream);
  bool allocated() const { return values_.defined(); }
  Device device() const { return device_; }

  // In registration order (torchvision's state_dict order when the model registers so).
  const std::vector<ParameterInfo>& parameters() const { return parameters_; }
  const std::vector<BufferInfo>& buffers() const { return buffers_; }
  const std::vector<CounterInfo>& counters() const { return counters_; }
  const ParameterInfo& info(ParameterId id) const;
  // nullptr when no parameter has that name.
  const ParameterInfo* find(std::string_view name) const;
  const BufferInfo* find_buffer(std::string_view name) const;
  // The sum of the parameters' elements (without the alignment gaps).
  int64_t parameter_count() const;

  // Views into the flat buffers (after allocate()).
  Tensor value(ParameterId id) const;
  Tensor grad(ParameterId id) const;
  Tensor buffer(BufferId id) const;
  int64_t& counter(CounterId id);
  int64_t counter(CounterId id) const;
  // Writers take the values here: each call counts as a write (values_version()), which tells
  // a compute copy the optimizer wrote with its step (nn/compute_weight.h) that it is stale.
  // Readers take the const overload.
  Tensor& flat_values() {
    ++values_version_;
    return values_;
  }
  Tensor& flat_grads() { return grads_; }
  Tensor& flat_buffers() { return buffer_store_; }
  const Tensor& flat_values() const { return values_; }
  const Tensor& flat_grads() const { return grads_; }
  const Tensor& flat_buffers() const { return buffer_store_; }
  uint64_t values_version() const { return values_version_; }

  // The gradient rule: parameter gradients accumulate over backward passes until
  // zero_grad(), after which the next backward overwrites them (no memset is needed).
  void zero_grad() { grads_hold_values_ = false; }
  bool grads_hold_values() const { return grads_hold_values_; }
  void mark_grads_written() { grads_hold_values_ = true; }

 private:
  void require_unallocated(std::string_view what, std::string_view name) const;
  void require_new_name(std::string_view name) const;
  void require_allocated(std::string_view what) const;

  std::vector<ParameterInfo> parameters_;
  std::vector<BufferInfo> buffers_;
  std::vector<CounterInfo> counters_;
  Device device_ = Device::cpu();
  Tensor values_, grads_, buffer_store_;
  bool grads_hold_values_ = false;
  uint64_t values_version_ = 0;
};

}  // namespace engine::nn
