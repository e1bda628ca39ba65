#include "nn/layer_scratch.h"

namespace engine::nn {

void SharedScratch::allocate(Device device) {
  if (tensor_.defined() && tensor_.device() == device && tensor_.numel() >= reserved_) return;
  tensor_ = Tensor::empty({reserved_}, DType::f32, device);
}

void LayerScratch::setup(int64_t numel, SharedScratch* shared, Device device) {
  shared_ = shared;
  if (shared != nullptr) {
    shared->reserve(numel);
    own_ = Tensor();
  } else {
    own_ = Tensor::empty({numel}, DType::f32, device);
  }
}

}  // namespace engine::nn
