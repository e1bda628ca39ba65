// Arguments of the loss entry points, one struct per entry point, shared by the dispatcher
// (kernels/ops/loss.cpp), the CPU twin (kernels/cpu/loss.h) and the CUDA launcher
// (kernels/cuda/loss.h); see kernels/args/batchnorm.h for why. logits are [n, k] of dtype,
// labels [n] i32 class indices (device pointers on CUDA; kernels/ops/loss.h).
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace engine {

struct CrossEntropyForwardArgs {
  DType dtype = DType::f32;
  const void* logits = nullptr;
  const int32_t* labels = nullptr;
  int64_t n = 0;
  int64_t k = 0;
  float label_smoothing = 0.f;
  float* sample_loss = nullptr;  // f32[n]
  float* loss = nullptr;         // f32[1]: the mean
};

struct CrossEntropyBackwardArgs {
  DType dtype = DType::f32;
  const void* logits = nullptr;
  const int32_t* labels = nullptr;
  int64_t n = 0;
  int64_t k = 0;
  float label_smoothing = 0.f;
  float grad_loss = 1.f;    // the gradient at the mean loss
  void* dlogits = nullptr;  // may alias logits
};

// Soft targets (mixup, CutMix): targets f32[n, k], each row a distribution over the classes.
struct SoftCrossEntropyForwardArgs {
  DType dtype = DType::f32;
  const void* logits = nullptr;
  const float* targets = nullptr;
  int64_t n = 0;
  int64_t k = 0;
  float* sample_loss = nullptr;  // f32[n]
  float* loss = nullptr;         // f32[1]: the mean
};

struct SoftCrossEntropyBackwardArgs {
  DType dtype = DType::f32;
  const void* logits = nullptr;
  const float* targets = nullptr;
  int64_t n = 0;
  int64_t k = 0;
  float grad_loss = 1.f;    // the gradient at the mean loss
  void* dlogits = nullptr;  // may alias logits
};

struct TopkCorrectArgs {
  DType dtype = DType::f32;
  const void* logits = nullptr;
  const int32_t* labels = nullptr;
  int64_t n = 0;
  int64_t k = 0;
  float* correct = nullptr;  // f32[2]: the top-1 and top-5 counts
};

}  // namespace engine
