// Element types of tensors. Statistics and accumulations are always fp32, whatever the
// storage type.
//
// f32 and bf16 are the float dtypes: activations, weights, gradients. i32 holds integers the
// ops produce or consume as indices (class labels); u8 holds small codes one byte each (the
// max-pool argmax: a position within its window, a quarter of an i32's traffic). No float op
// accepts either.
// f64 carries the few values that must not lose digits in a sum over ranks (SyncBN's
// per-channel sum and sum of squares): the collectives and copy/fill take it, and the ops
// that produce or consume it name it; it is not a float dtype, so no float kernel reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "kernels/bfloat16.h"

namespace engine {

enum class DType : uint8_t { f32, bf16, i32, f64, u8 };

constexpr size_t dtype_size(DType dtype) {
  return dtype == DType::u8 ? 1 : dtype == DType::bf16 ? 2 : dtype == DType::f64 ? 8 : 4;
}
constexpr bool is_float_dtype(DType dtype) {
  return dtype == DType::f32 || dtype == DType::bf16;
}
std::string_view dtype_name(DType dtype);  // "f32", "bf16", "i32", "f64", "u8"
// "f32"/"float32"/"fp32", "bf16"/"bfloat16", "i32"/"int32", "f64"/"float64"/"fp64" or
// "u8"/"uint8"; throws
// engine::Error naming the text otherwise.
DType parse_dtype(std::string_view text);

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) {
    return DType::f32;
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return DType::i32;
  } else if constexpr (std::is_same_v<T, double>) {
    return DType::f64;
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return DType::u8;
  } else {
    static_assert(std::is_same_v<T, bf16>,
                  "tensor element types are float, engine::bf16, int32_t, double and uint8_t");
    return DType::bf16;
  }
}

// Throws engine::Error: "<where>: <dtype> is not a float dtype (f32 or bf16)".
[[noreturn]] void fail_not_float_dtype(DType dtype, std::string_view where);

// Calls fn.template operator()<T>() with T = float or bf16 for the given dtype, and throws for
// any other: an i32 or u8 buffer must never be read as bf16 by a float kernel.
template <typename Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  if (dtype == DType::f32) return fn.template operator()<float>();
  if (dtype == DType::bf16) return fn.template operator()<bf16>();
  fail_not_float_dtype(dtype, "dispatch_dtype");
}

}  // namespace engine
