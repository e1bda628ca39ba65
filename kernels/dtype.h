// Element types of tensors. Statistics and accumulations are always fp32, whatever the
// storage type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "kernels/bfloat16.h"

namespace engine {

enum class DType : uint8_t { f32, bf16 };

constexpr size_t dtype_size(DType dtype) {
  return dtype == DType::f32 ? 4 : 2;
}
std::string_view dtype_name(DType dtype);
// "f32"/"float32"/"fp32" or "bf16"/"bfloat16"; throws engine::Error naming the text otherwise.
DType parse_dtype(std::string_view text);

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) {
    return DType::f32;
  } else {
    static_assert(std::is_same_v<T, bf16>, "tensor element types are float and engine::bf16");
    return DType::bf16;
  }
}

// Calls fn.template operator()<T>() with T = float or bf16 for the given dtype.
template <typename Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  if (dtype == DType::f32) return fn.template operator()<float>();
  return fn.template operator()<bf16>();
}

}  // namespace engine
