#include "train/weight_ema.h"

#include <algorithm>
#include <utility>

#include "kernels/ops.h"

namespace engine::train {

namespace {

// ema -= (1 - decay) * (ema - w), i.e. decay * ema + (1 - decay) * w, by the fused SGD step on
// every device: with the weights as its gradient scaled by -1, weight decay 1 and lr 1 - decay,
// SGD's p -= lr * (grad_scale * grad + weight_decay * p) is exactly that update.
void step_toward(Tensor& average, const Tensor& weights, double decay, Stream& stream) {
  if (!average.defined() || average.numel() == 0) return;
  SgdOptions options;
  options.lr = static_cast<float>(1.0 - decay);
  options.weight_decay = 1.f;
  options.grad_scale = -1.f;
  Tensor no_momentum;
  sgd_step(options,
           {.params = average,
            .grads = weights,
            .momentum_buffer = no_momentum,
            .buffer_state = MomentumBuffer::filled},
           stream);
}

void exchange(Tensor& a, Tensor& b, Tensor& scratch, Stream& stream) {
  if (!a.defined() || a.numel() == 0) return;
  Tensor held = scratch.view(0, a.shape());
  copy(a, held, stream);
  copy(b, a, stream);
  copy(held, b, stream);
}

}  // namespace

WeightEma::WeightEma(nn::ParameterSet& params, double decay, Stream& stream)
    : params_(params), decay_(decay) {
  const Device device = params.flat_values().device();
  values_ = params.flat_values().clone(stream);
  Tensor& buffers = params.flat_buffers();
  if (buffers.defined()) buffers_ = buffers.clone(stream);
  const int64_t largest =
      std::max(values_.numel(), buffers_.defined() ? buffers_.numel() : int64_t{0});
  scratch_ = Tensor::empty({largest}, DType::f32, device);
}

void WeightEma::update(Stream& stream) {
  // Read only: the const overload, which leaves the values' version (nn/parameters.h) as is.
  step_toward(values_, std::as_const(params_).flat_values(), decay_, stream);
  step_toward(buffers_, params_.flat_buffers(), decay_, stream);
}

void WeightEma::swap(Stream& stream) {
  exchange(values_, params_.flat_values(), scratch_, stream);
  exchange(buffers_, params_.flat_buffers(), scratch_, stream);
}

}  // namespace engine::train
