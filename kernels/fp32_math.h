// How f32 convolutions and linear layers multiply on a CUDA device. exact: fp32 products and
// sums on the FMA units, the CPU's results up to summation order. tf32: operands rounded to
// TF32 (10 fraction bits, to nearest) on the tensor cores, products exact and sums in fp32,
// as PyTorch's default for cuDNN convolutions (torch.backends.cudnn.allow_tf32) and cuBLAS's
// CUBLAS_TF32_TENSOR_OP_MATH. A property of the Stream the op runs on (kernels/stream.h),
// like cuBLAS's per-handle math mode; the CPU computes exact fp32 either way.
#pragma once

#include <cstdint>
#include <string_view>

namespace engine {

enum class Fp32Math : uint8_t { exact, tf32 };

constexpr std::string_view fp32_math_name(Fp32Math math) {
  return math == Fp32Math::tf32 ? "tf32" : "exact";
}

}  // namespace engine
