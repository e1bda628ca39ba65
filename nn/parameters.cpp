#include "nn/parameters.h"

#include <algorithm>

#include "kernels/error.h"

namespace engine::nn {
namespace {

int64_t aligned(int64_t offset) {
  return (offset + kParameterAlignment - 1) / kParameterAlignment * kParameterAlignment;
}

template <typename Info>
const Info& checked(const std::vector<Info>& infos, int id, std::string_view what) {
  if (id < 0 || id >= static_cast<int>(infos.size())) {
    fail("ParameterSet: no " + std::string(what) + " with id " + std::to_string(id));
  }
  return infos[static_cast<size_t>(id)];
}

}  // namespace

std::string_view parameter_kind_name(ParameterKind kind) {
  switch (kind) {
    case ParameterKind::conv_filter:
      return "conv_filter";
    case ParameterKind::linear_weight:
      return "linear_weight";
    case ParameterKind::bias:
      return "bias";
    case ParameterKind::norm_weight:
      return "norm_weight";
    case ParameterKind::norm_bias:
      return "norm_bias";
  }
  return "unknown";
}

bool is_norm_or_bias(ParameterKind kind) {
  return kind == ParameterKind::bias || kind == ParameterKind::norm_weight ||
         kind == ParameterKind::norm_bias;
}

void ParameterSet::require_unallocated(std::string_view what, std::string_view name) const {
  if (allocated()) {
    fail("ParameterSet: cannot add " + std::string(what) + " '" + std::string(name) +
         "' after allocate()");
  }
}

void ParameterSet::require_new_name(std::string_view name) const {
  const bool taken = find(name) != nullptr || find_buffer(name) != nullptr ||
                     std::any_of(counters_.begin(), counters_.end(),
                                 [&](const CounterInfo& c) { return c.name == name; });
  if (name.empty() || taken) {
    fail("ParameterSet: the name '" + std::string(name) + "' is " +
         (name.empty() ? "empty" : "already registered"));
  }
}

void ParameterSet::require_allocated(std::string_view what) const {
  if (!allocated()) fail("ParameterSet: " + std::string(what) + " before allocate()");
}

ParameterId ParameterSet::add_parameter(std::string name, Shape shape, ParameterKind kind) {
  require_unallocated("parameter", name);
  require_new_name(name);
  if (shape.empty() || shape_numel(shape) <= 0) {
    fail("ParameterSet: parameter '" + name + "' has the empty shape " + shape_str(shape));
  }
  parameters_.push_back({std::move(name), std::move(shape), kind});
  return static_cast<ParameterId>(parameters_.size() - 1);
}

BufferId ParameterSet::add_buffer(std::string name, Shape shape) {
  require_unallocated("buffer", name);
  require_new_name(name);
  buffers_.push_back({std::move(name), std::move(shape)});
  return static_cast<BufferId>(buffers_.size() - 1);
}

CounterId ParameterSet::add_counter(std::string name) {
  require_unallocated("counter", name);
  require_new_name(name);
  counters_.push_back({std::move(name), 0});
  return static_cast<CounterId>(counters_.size() - 1);
}

void ParameterSet::allocate(Device device, Stream& stream) {
  if (allocated()) fail("ParameterSet::allocate: already allocated");
  int64_t end = 0;
  for (auto it = parameters_.rbegin(); it != parameters_.rend(); ++it) {
    it->offset = aligned(end);
    end = it->offset + it->numel();
  }
  int64_t buffer_end = 0;
  for (BufferInfo& b : buffers_) {
    b.offset = aligned(buffer_end);
    buffer_end = b.offset + shape_numel(b.shape);
  }
  device_ = device;
  values_ = Tensor::zeros({aligned(end)}, DType::f32, device, stream);
  grads_ = Tensor::zeros({aligned(end)}, DType::f32, device, stream);
  buffer_store_ = Tensor::zeros({aligned(buffer_end)}, DType::f32, device, stream);
  grads_hold_values_ = false;
}

const ParameterInfo& ParameterSet::info(ParameterId id) const {
  return checked(parameters_, id, "parameter");
}

const ParameterInfo* ParameterSet::find(std::string_view name) const {
  for (const ParameterInfo& p : parameters_)
    if (p.name == name) return &p;
  return nullptr;
}

const BufferInfo* ParameterSet::find_buffer(std::string_view name) const {
  for (const BufferInfo& b : buffers_)
    if (b.name == name) return &b;
  return nullptr;
}

int64_t ParameterSet::parameter_count() const {
  int64_t count = 0;
  for (const ParameterInfo& p : parameters_)
    count += p.numel();
  return count;
}

Tensor ParameterSet::value(ParameterId id) const {
  require_allocated("value()");
  const ParameterInfo& p = info(id);
  return values_.view(p.offset, p.shape);
}

Tensor ParameterSet::grad(ParameterId id) const {
  require_allocated("grad()");
  const ParameterInfo& p = info(id);
  return grads_.view(p.offset, p.shape);
}

Tensor ParameterSet::buffer(BufferId id) const {
  require_allocated("buffer()");
  const BufferInfo& b = checked(buffers_, id, "buffer");
  return buffer_store_.view(b.offset, b.shape);
}

int64_t& ParameterSet::counter(CounterId id) {
  checked(counters_, id, "counter");
  return counters_[static_cast<size_t>(id)].value;
}

int64_t ParameterSet::counter(CounterId id) const {
  return checked(counters_, id, "counter").value;
}

}  // namespace engine::nn
