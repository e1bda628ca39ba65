#include "nn/gradient_arena.h"

#include <algorithm>
#include <string>

#include "kernels/error.h"
#include "nn/layer.h"

namespace engine::nn {

namespace {
// Each take starts on a 256-element boundary (512 bytes in bf16): aligned for every vector
// access the kernels make, as a buffer of its own is.
constexpr int64_t kAlignment = 256;
}  // namespace

void GradientArena::begin(const Layer* top, bool planning) {
  top_ = top;
  planning_ = planning;
  layer_ = -1;
  region_ = GradientRegion::layer;
  used_ = {};
  if (planning) {
    planned_layers_.clear();
    planned_total_ = 0;
  }
}

void GradientArena::next_layer() {
  ++layer_;
  region_ = GradientRegion::layer;
  used_ = {};
  if (planning_) planned_layers_.push_back({});
}

void GradientArena::enter(GradientRegion region) {
  region_ = region;
  if (region != GradientRegion::layer) used_[static_cast<int>(region)] = 0;
}

void GradientArena::plan(Layer& top, const Shape& input, const SetupContext& context) {
  SetupContext planning = context;
  planning.allocate = false;
  planning.gradients = this;
  begin(&top, true);
  top.setup(input, planning);
}

Shape GradientArena::setup(Layer& top, const Shape& input, const SetupContext& context) {
  allocate(context.dtype, context.device);
  SetupContext allocating = context;
  allocating.gradients = this;
  begin(&top, false);
  return top.setup(input, allocating);
}

void GradientArena::allocate(DType dtype, Device device) {
  // Each parity's buffer holds its largest layer: the layer's regions one after another.
  std::array<int64_t, 2> needed{};
  for (size_t layer = 0; layer < planned_layers_.size(); ++layer) {
    const RegionSizes& sizes = planned_layers_[layer];
    needed[layer % 2] = std::max(needed[layer % 2], sizes[0] + sizes[1] + sizes[2]);
  }
  for (int parity = 0; parity < 2; ++parity) {
    const Tensor& held = buffers_[parity];
    const bool fits = held.defined() && held.dtype() == dtype && held.device() == device &&
                      held.numel() >= needed[parity];
    if (!fits) {
      // Let go of the old buffer before taking the new one.
      buffers_[parity] = Tensor();
      buffers_[parity] = Tensor::empty({needed[parity]}, dtype, device);
    }
  }
}

Tensor GradientArena::take(const Shape& shape, DType dtype) {
  if (layer_ < 0) fail("GradientArena::take before the first top-level layer");
  const int region = static_cast<int>(region_);
  // Each region's takes count from its start (next_layer, enter); the regions lie one after
  // another in the layer's share of its parity's buffer, which its largest layer sizes.
  const int64_t offset = used_[region];
  used_[region] = (offset + shape_numel(shape) + kAlignment - 1) / kAlignment * kAlignment;
  if (planning_) {
    RegionSizes& sizes = planned_layers_.back();
    sizes[region] = std::max(sizes[region], used_[region]);
    planned_total_ += shape_numel(shape);
    return Tensor();
  }
  const Tensor& buffer = buffers_[layer_ % 2];
  const bool planned = layer_ < static_cast<int64_t>(planned_layers_.size()) &&
                       used_[region] <= planned_layers_[layer_][region];
  if (!buffer.defined() || buffer.dtype() != dtype || !planned) {
    fail("GradientArena: top-level layer " + std::to_string(layer_) + " takes " + shape_str(shape) +
         " " + std::string(dtype_name(dtype)) +
         " beyond what the planning pass counted (a setup whose two passes differ)");
  }
  int64_t start = 0;
  for (int r = 0; r < region; ++r)
    start += planned_layers_[layer_][r];
  return buffer.view(start + offset, shape);
}

void setup_gradient_buffer(Tensor& buffer, const SetupContext& context, const Shape& shape,
                           bool needed) {
  GradientArena* arena = context.gradients;
  if (!context.allocate && arena == nullptr) return;
  if (!needed) {
    if (context.allocate) buffer = Tensor();
    return;
  }
  if (arena == nullptr) {
    buffer = Tensor::empty(shape, context.dtype, context.device);
    return;
  }
  Tensor taken = arena->take(shape, context.dtype);
  if (context.allocate) buffer = std::move(taken);
}

}  // namespace engine::nn
