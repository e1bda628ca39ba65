#include "kernels/dtype.h"

#include <string>

#include "kernels/error.h"

namespace engine {

std::string_view dtype_name(DType dtype) {
  return dtype == DType::f32 ? "f32" : "bf16";
}

DType parse_dtype(std::string_view text) {
  if (text == "f32" || text == "fp32" || text == "float32") return DType::f32;
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  fail("unknown dtype '" + std::string(text) + "' (use f32 or bf16)");
}

}  // namespace engine
