// The convolution engines the SIMT conv suites run (test_conv_simt.cpp, and the fused forms in
// test_conv_stats_simt.cpp and test_conv_transform_simt.cpp) and how closely each must match
// its CPU twin.
#pragma once

#include <string>
#include <vector>

#include "conv_reference.h"
#include "kernels/dtype.h"
#include "kernels/fp32_math.h"

namespace engine::testing {

// fp32 and tf32 engines differ from their CPU twins only in summation order (tf32 operands
// that were truncated instead of rounded would be off by about 5e-4).
constexpr double kConvF32Tolerance = 1e-5;
// bf16 outputs may round to neighbouring values: one bf16 ulp of the largest element.
constexpr double kConvBf16Tolerance = 1.0 / 128;

// An engine: the tensors' dtype and, for f32, the math.
struct ConvEngine {
  DType dtype;
  Fp32Math math;
  std::string name() const {
    return dtype == DType::bf16 ? "bf16" : math == Fp32Math::tf32 ? "tf32" : "fp32";
  }
  double tolerance() const { return dtype == DType::bf16 ? kConvBf16Tolerance : kConvF32Tolerance; }
};
constexpr ConvEngine kConvFp32{DType::f32, Fp32Math::exact};
constexpr ConvEngine kConvTf32{DType::f32, Fp32Math::tf32};
constexpr ConvEngine kConvBf16{DType::bf16, Fp32Math::exact};
constexpr ConvEngine kConvEngines[] = {kConvFp32, kConvTf32, kConvBf16};

// The largest |actual - expected| over the largest |expected| (conv_reference.h).
inline double relative_difference(const std::vector<float>& actual,
                                  const std::vector<float>& expected) {
  return relative_error(actual, std::vector<double>(expected.begin(), expected.end()));
}

}  // namespace engine::testing
