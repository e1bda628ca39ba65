// The per-channel arithmetic of BatchNorm's fp64 sums (kernels/ops/batchnorm.h), shared by the
// CPU twin and the CUDA kernels so that both give the same bits: every multiply-add is an
// explicit fma (nvcc would contract a * b + c on its own, g++ would not), and division and
// square root are IEEE-rounded on both.
#pragma once

#include <math.h>

#include "kernels/args/batchnorm.h"
#include "kernels/conv_input_value.h"
#include "kernels/host_device.h"

namespace engine {

// Welford (count, mean, m2) of one channel as fp64 (sum, sum of squares). sum = count * mean is
// exact: the product of two fp32 values (24-bit mantissas) fits in fp64's 53 bits. sumsq = m2 +
// sum * mean rounds once, 2^-53 relative. The fp32 mean's own rounding cancels later: the
// finalize subtracts the square of the same mean.
struct ChannelSums {
  double sum, sumsq;
};
ENGINE_HOST_DEVICE inline ChannelSums batchnorm_channel_sums(float count, float mean, float m2) {
  const double sum = static_cast<double>(count) * static_cast<double>(mean);
  return {sum, ::fma(sum, static_cast<double>(mean), static_cast<double>(m2))};
}

// Mean and biased variance from sums over `count` values, all fp64: var = sumsq/n - mean^2,
// with mean^2 exact inside the fma. At mean 1e3 / std 1 the subtraction cancels 6 of the 16
// digits (~1e-10 relative left); fp32 would keep none. Rounding may leave a constant channel a
// tiny negative variance: clamped to 0 (NaN stays NaN, so bad inputs still show).
struct ChannelMoments {
  double mean, var;
};
ENGINE_HOST_DEVICE inline ChannelMoments batchnorm_channel_moments(double sum, double sumsq,
                                                                   double count) {
  const double mean = sum / count;
  const double var = ::fma(-mean, mean, sumsq / count);
  return {mean, var < 0.0 ? 0.0 : var};
}

// 1 / sqrt(var + eps), rounded once to fp32.
ENGINE_HOST_DEVICE inline float batchnorm_invstd(double var, float eps) {
  return static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)));
}

// torch.nn.BatchNorm2d's running update, (1 - momentum) * running + momentum * batch, in fp64
// and rounded once.
ENGINE_HOST_DEVICE inline float batchnorm_running_update(float running, double batch,
                                                         float momentum) {
  const double m = static_cast<double>(momentum);
  return static_cast<float>(::fma(m, batch, (1.0 - m) * static_cast<double>(running)));
}

// The unbiased variance var * n / (n - 1) that running_var tracks; NaN for n <= 1, where
// PyTorch refuses to train (the layer checks the count first).
ENGINE_HOST_DEVICE inline double batchnorm_unbiased_var(double var, double count) {
  return count > 1.0 ? var * count / (count - 1.0) : NAN;
}

// Channel c of the finalize (BatchNormFinalizeSumsArgs; p.sums is not read): batch_stats
// mean and invstd from this channel's sums, and the running statistics when given. The
// finalize phase and the statistics merge that finalizes in the same launch both call it.
ENGINE_HOST_DEVICE inline void batchnorm_finalize_channel(const BatchNormFinalizeSumsArgs& p,
                                                          int64_t c, double sum, double sumsq,
                                                          double count) {
  const int64_t channels = p.channels;
  const ChannelMoments moments = batchnorm_channel_moments(sum, sumsq, count);
  const float mean = static_cast<float>(moments.mean);
  const float invstd = batchnorm_invstd(moments.var, p.eps);
  p.batch_stats[c] = mean;
  p.batch_stats[channels + c] = invstd;
  if (c == 0) p.batch_stats[2 * channels] = static_cast<float>(count);
  if (p.input_scale != nullptr) {
    const ConvInputCoefficients k = conv_input_coefficients(
        mean, invstd, p.weight ? p.weight[c] : 1.f, p.bias ? p.bias[c] : 0.f);
    p.input_scale[c] = k.scale;
    p.input_shift[c] = k.shift;
  }
  if (p.running_mean) {
    p.running_mean[c] = batchnorm_running_update(p.running_mean[c], moments.mean, p.momentum);
  }
  if (p.running_var) {
    p.running_var[c] = batchnorm_running_update(
        p.running_var[c], batchnorm_unbiased_var(moments.var, count), p.momentum);
  }
}

// A parameter gradient's element from its sum: overwritten, or added to what it holds (the
// same fp32 add as the add op that did this before it was folded into the merge).
ENGINE_HOST_DEVICE inline void batchnorm_write_grad(float* grad, int64_t c, float value,
                                                    bool accumulate) {
  if (grad != nullptr) grad[c] = accumulate ? grad[c] + value : value;
}

}  // namespace engine
