#include "kernels/dtype.h"

#include <string>

#include "kernels/error.h"

namespace engine {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::bf16:
      return "bf16";
    case DType::i32:
      return "i32";
    case DType::f64:
      return "f64";
    case DType::u8:
      return "u8";
  }
  return "unknown dtype";
}

DType parse_dtype(std::string_view text) {
  if (text == "f32" || text == "fp32" || text == "float32") return DType::f32;
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  if (text == "i32" || text == "int32") return DType::i32;
  if (text == "f64" || text == "fp64" || text == "float64") return DType::f64;
  if (text == "u8" || text == "uint8") return DType::u8;
  fail("unknown dtype '" + std::string(text) + "' (use f32, bf16, i32, f64 or u8)");
}

void fail_not_float_dtype(DType dtype, std::string_view where) {
  fail(std::string(where) + ": " + std::string(dtype_name(dtype)) +
       " is not a float dtype (f32 or bf16)");
}

}  // namespace engine
