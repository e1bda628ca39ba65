// Scratch memory the layers of one network share: the CUDA conv passes' split-K partials
// (kernels/ops/conv.h's *_workspace_numel). The layers run one after another on the
// network's stream, so one buffer of the largest size any of them asks for serves them all.
// Per-layer buffers would sum to 896 MiB for resnet50 at 224 px, batch 32 (the largest one
// layer needs is 24 MiB); on the CPU every size is 0.
#pragma once
#include <cstdint>

#include "kernels/device.h"
#include "kernels/tensor.h"

namespace engine::nn {

class SharedScratch {
 public:
  // Starts a setup: what the layers reserve from here on is what allocate() provides.
  void begin() { reserved_ = 0; }
  // During a layer's setup: it needs `numel` f32 elements.
  void reserve(int64_t numel) { reserved_ = numel > reserved_ ? numel : reserved_; }
  // After every layer's setup: allocates on `device` unless the buffer already holds enough.
  void allocate(Device device);
  // At least every reserve() since begin(); defined (possibly empty) after allocate().
  Tensor& tensor() { return tensor_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  int64_t reserved_ = 0;
  Tensor tensor_;
};

// A layer's scratch: the network's shared one when its setup had one (SetupContext::scratch),
// else a buffer of its own.
class LayerScratch {
 public:
  // numel: what the layer's passes need; `shared` may be null.
  void setup(int64_t numel, SharedScratch* shared, Device device);
  Tensor& get() { return shared_ != nullptr ? shared_->tensor() : own_; }

 private:
  SharedScratch* shared_ = nullptr;
  Tensor own_;
};

}  // namespace engine::nn
