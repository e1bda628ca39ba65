// A model's precision as the command lines name it (--precision):
//   fp32  f32 activations and weights, exact fp32 math;
//   tf32  f32 activations and weights; convolutions and linear layers on a CUDA device's
//         TF32 tensor cores (kernels/fp32_math.h), as PyTorch runs cuDNN convolutions by
//         default; the CPU has no TF32 math, so the tools refuse it there;
//   bf16  bf16 activations on fp32 master weights (nn/compute_weight.h).
// The activation dtype goes to the layers' setup; the math is the compute Stream's.
#pragma once

#include <optional>
#include <string_view>

#include "kernels/dtype.h"
#include "kernels/fp32_math.h"

namespace engine::nn {

struct Precision {
  DType activations = DType::f32;
  Fp32Math fp32_math = Fp32Math::exact;
  bool operator==(const Precision&) const = default;
};

// "fp32", "tf32" or "bf16"; nullopt for anything else.
std::optional<Precision> precision_from_name(std::string_view name);
std::string_view precision_name(const Precision& precision);

}  // namespace engine::nn
