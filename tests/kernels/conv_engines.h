// The convolution engines the SIMT conv suites run (test_conv_simt.cpp, and the fused forms in
// test_conv_stats_simt.cpp and test_conv_transform_simt.cpp) and how closely each must match
// its CPU twin.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <stdexcept>
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

// The engines a run of the suites covers: all three, or those ENGINE_TEST_CONV_ENGINES lists
// (comma-separated: fp32, tf32, bf16). ctest's runs of the tensor-core engines' variants (block
// tiles, epilogues: kernels/cuda/gemm_choice.h) list only the engines the variant changes, so
// that the other engines' cases, the same code as in the default run, do not run again.
inline const std::vector<ConvEngine>& conv_engines() {
  static const std::vector<ConvEngine> chosen = [] {
    const char* text = std::getenv("ENGINE_TEST_CONV_ENGINES");
    if (text == nullptr)
      return std::vector<ConvEngine>(std::begin(kConvEngines), std::end(kConvEngines));
    std::vector<ConvEngine> engines;
    const std::string list = text;
    for (size_t begin = 0; begin <= list.size();) {
      const size_t end = std::min(list.find(',', begin), list.size());
      const std::string name = list.substr(begin, end - begin);
      bool known = false;
      for (const ConvEngine& engine : kConvEngines) {
        if (engine.name() == name) {
          engines.push_back(engine);
          known = true;
        }
      }
      if (!known) {
        throw std::invalid_argument("ENGINE_TEST_CONV_ENGINES='" + list + "': '" + name +
                                    "' is not fp32, tf32 or bf16");
      }
      begin = end + 1;
    }
    return engines;
  }();
  return chosen;
}

// The largest |actual - expected| over the largest |expected| (conv_reference.h).
inline double relative_difference(const std::vector<float>& actual,
                                  const std::vector<float>& expected) {
  return relative_error(actual, std::vector<double>(expected.begin(), expected.end()));
}

}  // namespace engine::testing
