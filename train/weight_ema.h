// An exponential moving average of the model's weights and BatchNorm running statistics,
// updated after every optimizer step: ema = decay * ema + (1 - decay) * w, as timm's ModelEmaV2
// and torchvision's reference (--model-ema, buffers included) keep one. It starts from the
// weights it is given (or a file saved beside a resumed checkpoint) and is evaluated and saved
// by swapping it into the model.
#pragma once

#include "kernels/stream.h"
#include "kernels/tensor.h"
#include "nn/parameters.h"

namespace engine::train {

class WeightEma {
 public:
  // Starts the average from the model's current weights and buffers. decay in [0, 1).
  WeightEma(nn::ParameterSet& params, double decay, Stream& stream);

  // One step of the average toward the model's current weights and buffers.
  void update(Stream& stream);
  // Exchanges the average with the model's weights and buffers: the model then holds the
  // average (to evaluate or save it); a second swap restores both.
  void swap(Stream& stream);

  double decay() const { return decay_; }

 private:
  nn::ParameterSet& params_;
  double decay_;
  Tensor values_, buffers_, scratch_;
};

}  // namespace engine::train
