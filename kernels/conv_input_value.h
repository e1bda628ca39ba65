// The value a convolution reads for x at an input channel under a ConvInputTransform
// (kernels/args/conv.h): one expression for the kernels and the CPU twin, so that both read
// the same bits. A fused multiply-add (one rounding, as the GPU's FFMA), then the ReLU, with
// NaN staying NaN as in relu_forward: on sm_80 and later one max.NaN against 0 (against -inf
// without the ReLU) where a compare and a select took two instructions an element.
#pragma once

#include <cmath>

#include "kernels/args/conv.h"
#include "kernels/host_device.h"

namespace engine {

ENGINE_HOST_DEVICE inline float conv_input_value(float x, float scale, float shift, bool relu) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const float v = __fmaf_rn(x, scale, shift);
  float out;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(out) : "f"(v), "f"(relu ? 0.f : -INFINITY));
  return out;
#else
#if defined(__CUDA_ARCH__)
  const float v = __fmaf_rn(x, scale, shift);
#else
  const float v = std::fma(x, scale, shift);
#endif
  return relu && v < 0.f ? 0.f : v;
#endif
}

// BatchNorm's (x - mean) * invstd * weight + bias as x * scale + shift: scale = invstd * weight,
// shift = bias - mean * scale (one fused multiply-add, on either side). weight and bias default
// to 1 and 0 (affine=False).
struct ConvInputCoefficients {
  float scale, shift;
};
ENGINE_HOST_DEVICE inline ConvInputCoefficients conv_input_coefficients(float mean, float invstd,
                                                                        float weight, float bias) {
  const float scale = invstd * weight;
#if defined(__CUDA_ARCH__)
  return {scale, __fmaf_rn(-mean, scale, bias)};
#else
  return {scale, std::fma(-mean, scale, bias)};
#endif
}

// Channel c's coefficients for conv_input_from_batchnorm's arguments (kernels/args/conv.h):
// one expression for the kernel and the CPU twin, so both give the same bits (the division and
// square root are correctly rounded on either side, as CUDA compiles them without fast math).
ENGINE_HOST_DEVICE inline ConvInputCoefficients conv_input_coefficients_at(
    const ConvInputFromBatchNormArgs& args, int64_t c) {
  const float weight = args.weight ? args.weight[c] : 1.f;
  const float bias = args.bias ? args.bias[c] : 0.f;
  if (args.batch_stats != nullptr) {
    return conv_input_coefficients(args.batch_stats[c], args.batch_stats[args.channels + c], weight,
                                   bias);
  }
  return conv_input_coefficients(args.running_mean[c], 1.f / sqrtf(args.running_var[c] + args.eps),
                                 weight, bias);
}

}  // namespace engine
