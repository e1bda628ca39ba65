#include "nn/sequential.h"

#include "nn/gradient_arena.h"
#include "nn/shape_checks.h"

namespace engine::nn {

Shape Sequential::setup(const Shape& input, const SetupContext& context) {
  if (layers_.empty()) fail_in(*this, "has no layers");
  Shape shape = input;
  SetupContext inner = context;
  const bool takes_turns =
      context.gradients != nullptr && context.gradients->scopes_children_of(this);
  for (auto& layer : layers_) {
    if (takes_turns) context.gradients->next_layer();
    shape = layer->setup(shape, inner);
    inner.input_grad = true;
  }
  return shape;
}

namespace {

// Takes the pass's observer for the outermost Sequential alone: nested containers (a
// block's downsample) then run unobserved, and it is given back afterwards.
class TakenObserver {
 public:
  explicit TakenObserver(Pass& pass) : pass_(pass), observer_(pass.layer_observer) {
    pass_.layer_observer = nullptr;
  }
  ~TakenObserver() { pass_.layer_observer = observer_; }
  TakenObserver(const TakenObserver&) = delete;
  TakenObserver& operator=(const TakenObserver&) = delete;
  LayerObserver* get() const { return observer_; }

 private:
  Pass& pass_;
  LayerObserver* observer_;
};

}  // namespace

const Tensor& Sequential::forward(const Tensor& x, Pass& pass) {
  const Tensor* y = &x;
  if (pass.layer_observer == nullptr) {
    for (auto& layer : layers_)
      y = &layer->forward(*y, pass);
    return *y;
  }
  const TakenObserver observer(pass);
  for (auto& layer : layers_) {
    observer.get()->layer_begin(*layer, false, pass.stream);
    y = &layer->forward(*y, pass);
    observer.get()->layer_end(*layer, false, pass.stream);
  }
  return *y;
}

const Tensor& Sequential::backward(const Tensor& dy, Pass& pass) {
  const Tensor* g = &dy;
  if (pass.layer_observer == nullptr) {
    for (auto it = layers_.rbegin(); it != layers_.rend(); ++it)
      g = &(*it)->backward(*g, pass);
    return *g;
  }
  const TakenObserver observer(pass);
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
    observer.get()->layer_begin(**it, true, pass.stream);
    g = &(*it)->backward(*g, pass);
    observer.get()->layer_end(**it, true, pass.stream);
  }
  return *g;
}

void Sequential::for_each_child(const std::function<void(Layer&)>& fn) {
  for (auto& layer : layers_)
    fn(*layer);
}

}  // namespace engine::nn
