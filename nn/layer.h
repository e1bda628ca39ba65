// The layer contract of nn/: explicit forward and backward, no general autograd.
//
// - setup(input shape) allocates everything forward and backward touch (outputs, saved
//   tensors, input gradients, workspaces) once; forward and backward never allocate. Call it
//   again only when the input shape changes (a smaller last batch). With
//   SetupContext::allocate false it only works out the shapes.
// - forward(x) returns the layer's own output tensor, valid until its next forward; it keeps
//   what backward needs (usually a handle to x, whose owner does not overwrite it before the
//   backward).
// - backward(dy) returns the gradient of the input (the layer's own tensor; overwritten each
//   time, and undefined when setup was told no input gradient is needed, as for the stem).
// - Parameter gradients accumulate: backward adds to them, unless the ParameterSet's
//   gradients were zeroed since the last backward, in which case it overwrites them (the
//   Pass says which). Activation gradients always overwrite.
// - As soon as a parameter's gradient is final for this backward, the layer reports it to
//   Pass::grad_ready, in the order backward produces them: the data-parallel reducer
//   starts all-reducing a bucket from there.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "kernels/device.h"
#include "kernels/ops/grad_write.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"
#include "nn/batchnorm_fusion.h"
#include "nn/layer_scratch.h"
#include "nn/parameters.h"

namespace engine {
class ConvPlans;
}

namespace engine::nn {

class ComputeWeightCopy;
class GradientArena;

struct SetupContext {
  Device device;
  DType dtype = DType::f32;
  Stream& stream;
  // false for the first layer of a network: its input gradient is never used.
  bool input_grad = true;
  // false: only work out the shapes (a layer table, a memory estimate); allocate nothing and
  // touch no parameter. forward/backward must not follow such a setup.
  bool allocate = true;
  // The network's shared scratch (nn/layer_scratch.h); null: each layer allocates its own.
  SharedScratch* scratch = nullptr;
  // The network's activation gradients (nn/gradient_arena.h); null: each layer allocates its
  // own. With one, the planning pass (allocate false) counts what the layers take.
  GradientArena* gradients = nullptr;
  // The convolutions' CUDA algorithms (kernels/conv_plans.h: the tuner's choices); null or a
  // problem without a row: the heuristic's.
  const ConvPlans* conv_plans = nullptr;
  // Training on CUDA: how much of each BatchNorm its convolutions do (nn/batchnorm_fusion.h;
  // --fusion).
  BatchNormFusion fusion = BatchNormFusion::full;
  // The model's copy of its parameters in the activations' dtype (nn/compute_weight.h), which
  // layers computing in bf16 take views of; null: each such layer keeps and casts its own.
  ComputeWeightCopy* weight_copy = nullptr;
};

class Layer;

// Told when each top-level layer of a network starts and ends its forward or backward (the
// --trace timeline, train/step_trace.h). Only the outermost Sequential reports, and only its
// own children ("conv1", "layer1.0", ... "fc"), so that a timeline stays readable and its
// cost is two calls per top-level layer; with no observer nothing at all is called.
class LayerObserver {
 public:
  virtual ~LayerObserver() = default;
  virtual void layer_begin(const Layer& layer, bool backward, Stream& stream) = 0;
  virtual void layer_end(const Layer& layer, bool backward, Stream& stream) = 0;
};

// A number no other Pass of this process has (a model's bf16 weight copy is cast once per pass:
// nn/compute_weight.h).
uint64_t next_pass_id();

struct Pass {
  Stream& stream;
  bool training = true;
  // Add parameter gradients to what the gradient buffer holds (false: overwrite).
  bool accumulate_grads = false;
  // Called with each parameter whose gradient is final; may be empty.
  std::function<void(ParameterId)> on_grad_ready;
  // Null unless a timeline is being recorded (see LayerObserver).
  LayerObserver* layer_observer = nullptr;
  uint64_t id = next_pass_id();

  void grad_ready(ParameterId id) const {
    if (on_grad_ready) on_grad_ready(id);
  }
  // How this pass's backward writes parameter gradients (accumulate_grads as the ops take it).
  GradWrite grad_write() const {
    return accumulate_grads ? GradWrite::accumulate : GradWrite::overwrite;
  }
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // The torchvision module path ("layer1.0.conv1"); empty for the root.
  const std::string& name() const { return name_; }
  virtual std::string_view type() const = 0;

  // Returns the output shape for an NHWC input shape.
  virtual Shape setup(const Shape& input, const SetupContext& context) = 0;
  virtual const Tensor& forward(const Tensor& x, Pass& pass) = 0;
  virtual const Tensor& backward(const Tensor& dy, Pass& pass) = 0;

  // Containers call fn on each direct child, in forward order; leaves do nothing.
  virtual void for_each_child(const std::function<void(Layer&)>& fn) { (void)fn; }
  void for_each_child(const std::function<void(const Layer&)>& fn) const;

 private:
  std::string name_;
};

// "layer1.0" + "conv1" -> "layer1.0.conv1"; "" + "conv1" -> "conv1".
std::string child_name(std::string_view parent, std::string_view child);

// Calls fn on every layer of the tree rooted at root, depth first, in forward order.
void walk(Layer& root, const std::function<void(Layer&)>& fn);
void walk(const Layer& root, const std::function<void(const Layer&)>& fn);

}  // namespace engine::nn
