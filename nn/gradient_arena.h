// Where a network's activation gradients live: two buffers, one for the top-level layers at
// even positions and one for those at odd positions, instead of a buffer per layer.
//
// Why that is safe: a network's backward runs its top-level layers (the stem's, each residual
// block, the pooling, fc) in reverse; layer k reads the gradient layer k+1 wrote and writes
// its own, and no gradient of layer k (its input gradient, and inside a block every inner one,
// the residual branch's too) is read after the backward of layer k-1 has run: full fusion's
// gate is the furthest reach, block k-1 reading block k's input gradient as its last
// BatchNorm's dy and residual gradient. So layer k's gradients and layer k+2's, which never
// overlap in time, can share memory, and layer k's and k+1's, which do, cannot: each layer's
// are carved one after another from the buffer of its position's parity.
//
// Inside a top-level layer, gradients live shorter still: a residual block's backward is a
// chain (the last BatchNorm, the last convolution, the BatchNorm before, ...), each link
// reading the gradient the link before it wrote and nothing older, while its first
// convolution's input gradient and the identity branch's live through the whole block. So a
// layer's buffer has three regions: `layer`, whose takes lie side by side, and two chain
// regions a and b, which the links use in turn (ResidualBlock::setup: its BatchNorms a, its
// inner convolutions and the downsample's BatchNorm b): each enter() of a chain region starts
// it over, so a link's gradients lie where the link two before it had its own, which by then
// nothing reads.
//
// Setup runs twice (plan, then setup; ResNet::setup calls both): a planning pass that
// allocates nothing and counts what each layer takes in each region, then the allocating pass,
// which hands out views of buffers that large. The stored outputs, statistics and scratch stay
// the layers' own.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "kernels/device.h"
#include "kernels/tensor.h"

namespace engine::nn {

class Layer;
struct SetupContext;

// Where a top-level layer's next takes go (GradientArena::enter).
enum class GradientRegion { layer, chain_a, chain_b };

class GradientArena {
 public:
  // The planning pass: `top`'s setup (its children are the top-level layers) on `input` with
  // `context`, allocating nothing, counting what each layer takes.
  void plan(Layer& top, const Shape& input, const SetupContext& context);
  // The allocating pass after plan(): buffers of the context's dtype on its device, at least as
  // large as planned, and `top`'s setup taking views of them. Returns top's output shape.
  Shape setup(Layer& top, const Shape& input, const SetupContext& context);
  // Whether `container` is the one whose children take turns (the network's root).
  bool scopes_children_of(const Layer* container) const { return container == top_; }
  // Before each top-level layer's setup: its takes start at the beginning of its buffer, in
  // its layer region.
  void next_layer();
  // The takes after this go to `region` of the current top-level layer: after those it took
  // before for the layer region; from the region's start for a chain region (a new link).
  void enter(GradientRegion region);
  // A gradient buffer for the current top-level layer: its elements follow those it took
  // before in the current region. Undefined in a planning pass.
  Tensor take(const Shape& shape, DType dtype);
  // Gives both buffers back (the layers' views keep theirs until their next setup).
  void release() { buffers_ = {}; }
  // The elements both buffers hold, and what the last planning pass counted for a buffer per
  // take instead (its takes' sum).
  int64_t numel() const { return buffers_[0].numel() + buffers_[1].numel(); }
  int64_t planned_per_layer_numel() const { return planned_total_; }

 private:
  // Starts a setup pass of the network rooted at `top`.
  void begin(const Layer* top, bool planning);
  void allocate(DType dtype, Device device);

  using RegionSizes = std::array<int64_t, 3>;  // elements, by GradientRegion

  const Layer* top_ = nullptr;
  bool planning_ = true;
  int64_t layer_ = -1;
  GradientRegion region_ = GradientRegion::layer;
  RegionSizes used_{};  // the current layer's, per region (a chain's current link)
  std::vector<RegionSizes> planned_layers_;  // each layer's regions as the planning pass sized them
  int64_t planned_total_ = 0;                // the planning pass's takes, summed
  std::array<Tensor, 2> buffers_;
};

// A layer's activation-gradient buffer `buffer` of `shape` (needed: false leaves it undefined):
// from the network's arena when the setup has one (counted in its planning pass, a view in
// the allocating one), else a tensor of its own. A setup that allocates nothing without an
// arena leaves the buffer as it was. Call it before a setup's early return for allocate false.
void setup_gradient_buffer(Tensor& buffer, const SetupContext& context, const Shape& shape,
                           bool needed = true);

}  // namespace engine::nn
