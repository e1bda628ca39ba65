#include "nn/precision.h"

namespace engine::nn {

std::optional<Precision> precision_from_name(std::string_view name) {
  if (name == "fp32") return Precision{DType::f32, Fp32Math::exact};
  if (name == "tf32") return Precision{DType::f32, Fp32Math::tf32};
  if (name == "bf16") return Precision{DType::bf16, Fp32Math::exact};
  return std::nullopt;
}

std::string_view precision_name(const Precision& precision) {
  if (precision.activations == DType::bf16) return "bf16";
  return precision.fp32_math == Fp32Math::tf32 ? "tf32" : "fp32";
}

}  // namespace engine::nn
