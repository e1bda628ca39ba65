#include "kernels/ops/batchnorm.h"

#include <string>

#include "kernels/cpu/batchnorm.h"
#include "kernels/ops/checks.h"
#if ENGINE_HAVE_CUDA
#include "kernels/cuda/batchnorm.h"
#endif

namespace engine {
namespace {

// The [rows, C] view of an activation: C is the innermost (last) dimension.
struct Rows {
  int64_t rows = 0;
  int64_t channels = 0;
};

Rows require_activation(std::string_view op, std::string_view name, const Tensor& x) {
  ops::require_defined(op, name, x);
  if (x.dim() < 2 || x.numel() == 0) {
    fail(std::string(op) + ": " + std::string(name) + " is " + x.describe() +
         ", expected a non-empty [..., C] activation (NHWC)");
  }
  const int64_t channels = x.size(x.dim() - 1);
  return {x.numel() / channels, channels};
}

// t is an f32 tensor of `numel` elements on `device`.
void require_f32(std::string_view op, std::string_view name, const Tensor& t, int64_t numel,
                 Device device) {
  ops::require_defined(op, name, t);
  if (t.dtype() != DType::f32 || t.numel() != numel || t.device() != device) {
    fail(std::string(op) + ": " + std::string(name) + " is " + t.describe() +
         ", expected f32 with " + std::to_string(numel) + " elements on " + device.str());
  }
}

// Optional per-channel vectors (weight, bias, running stats): undefined, or f32[C].
const float* optional_f32(std::string_view op, std::string_view name, const Tensor& t,
                          int64_t numel, Device device) {
  if (!t.defined()) return nullptr;
  require_f32(op, name, t, numel, device);
  return t.data<float>();
}
float* optional_f32(std::string_view op, std::string_view name, Tensor& t, int64_t numel,
                    Device device) {
  if (!t.defined()) return nullptr;
  require_f32(op, name, t, numel, device);
  return t.data<float>();
}

const void* optional_residual(std::string_view op, const BatchNormEpilogue& epilogue,
                              const Tensor& x) {
  if (!epilogue.residual.defined()) return nullptr;
  ops::require_like(op, "x", x, "residual", epilogue.residual);
  return epilogue.residual.raw_data();
}

#if ENGINE_HAVE_CUDA
float* require_workspace(std::string_view op, Tensor& workspace, Rows shape, Device device) {
  const int64_t needed = cuda::batchnorm_workspace_numel(shape.rows, shape.channels);
  ops::require_defined(op, "workspace", workspace);
  if (workspace.dtype() != DType::f32 || workspace.numel() < needed ||
      workspace.device() != device) {
    fail(std::string(op) + ": workspace is " + workspace.describe() +
         ", expected f32 with at least " + std::to_string(needed) + " elements on " + device.str() +
         " (batchnorm_workspace_numel)");
  }
  return workspace.data<float>();
}
#endif

}  // namespace

int64_t batchnorm_workspace_numel(const Tensor& x) {
  [[maybe_unused]] const Rows shape = require_activation("batchnorm_workspace_numel", "x", x);
#if ENGINE_HAVE_CUDA
  if (x.device().is_cuda()) return cuda::batchnorm_workspace_numel(shape.rows, shape.channels);
#endif
  return 0;
}

void batchnorm_stats(const Tensor& x, Tensor& stats, Tensor& workspace, Stream& stream) {
  constexpr std::string_view op = "batchnorm_stats";
  const Rows shape = require_activation(op, "x", x);
  require_f32(op, "stats", stats, batchnorm_stats_numel(shape.channels), x.device());
  ops::require_on_stream(op, "x", x, stream);
  if (x.device().is_cpu()) {
    cpu::batchnorm_stats(x.dtype(), x.raw_data(), shape.rows, shape.channels, stats.data<float>());
  } else {
#if ENGINE_HAVE_CUDA
    float* scratch = require_workspace(op, workspace, shape, x.device());
    cuda::batchnorm_stats(x.dtype(), x.raw_data(), shape.rows, shape.channels, stats.data<float>(),
                          scratch, stream.native());
#else
    (void)workspace;
#endif
  }
}

void batchnorm_finalize(const Tensor& stats, Tensor& running_mean, Tensor& running_var,
                        float momentum, float eps, Tensor& batch_stats, Stream& stream) {
  constexpr std::string_view op = "batchnorm_finalize";
  ops::require_defined(op, "batch_stats", batch_stats);
  const int64_t numel = batch_stats.numel();
  if (numel < 3 || numel % 2 != 1) {
    fail(std::string(op) + ": batch_stats is " + batch_stats.describe() +
         ", expected f32[2C+1] for C channels");
  }
  const int64_t channels = (numel - 1) / 2;
  const Device device = batch_stats.device();
  require_f32(op, "batch_stats", batch_stats, numel, device);
  ops::require_defined(op, "stats", stats);
  const int64_t parts = stats.numel() / numel;
  if (parts < 1) require_f32(op, "stats", stats, numel, device);
  require_f32(op, "stats", stats, parts * numel, device);
  float* rm = optional_f32(op, "running_mean", running_mean, channels, device);
  float* rv = optional_f32(op, "running_var", running_var, channels, device);
  ENGINE_REQUIRE(momentum >= 0.f && momentum <= 1.f,
                 std::string(op) + ": momentum must be in [0, 1], got " + std::to_string(momentum));
  ENGINE_REQUIRE(eps >= 0.f, std::string(op) + ": eps must be >= 0, got " + std::to_string(eps));
  ops::require_on_stream(op, "batch_stats", batch_stats, stream);
  if (device.is_cpu()) {
    cpu::batchnorm_finalize(stats.data<float>(), parts, channels, momentum, eps, rm, rv,
                            batch_stats.data<float>());
  } else {
#if ENGINE_HAVE_CUDA
    cuda::batchnorm_finalize(stats.data<float>(), parts, channels, momentum, eps, rm, rv,
                             batch_stats.data<float>(), stream.native());
#endif
  }
}

void batchnorm_normalize(const Tensor& x, const Tensor& batch_stats, const Tensor& weight,
                         const Tensor& bias, Tensor& y, Stream& stream,
                         const BatchNormEpilogue& epilogue) {
  constexpr std::string_view op = "batchnorm_normalize";
  const Rows shape = require_activation(op, "x", x);
  ops::require_like(op, "x", x, "y", y);
  const Device device = x.device();
  require_f32(op, "batch_stats", batch_stats, batchnorm_stats_numel(shape.channels), device);
  const float* w = optional_f32(op, "weight", weight, shape.channels, device);
  const float* b = optional_f32(op, "bias", bias, shape.channels, device);
  const void* residual = optional_residual(op, epilogue, x);
  ops::require_on_stream(op, "x", x, stream);
  if (device.is_cpu()) {
    cpu::batchnorm_normalize(x.dtype(), x.raw_data(), batch_stats.data<float>(), w, b, residual,
                             epilogue.relu, y.raw_data(), shape.rows, shape.channels);
  } else {
#if ENGINE_HAVE_CUDA
    cuda::batchnorm_normalize(x.dtype(), x.raw_data(), batch_stats.data<float>(), w, b, residual,
                              epilogue.relu, y.raw_data(), shape.rows, shape.channels,
                              stream.native());
#endif
  }
}

void batchnorm_eval_forward(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                            const Tensor& weight, const Tensor& bias, float eps, Tensor& y,
                            Stream& stream, const BatchNormEpilogue& epilogue) {
  constexpr std::string_view op = "batchnorm_eval_forward";
  const Rows shape = require_activation(op, "x", x);
  ops::require_like(op, "x", x, "y", y);
  const Device device = x.device();
  require_f32(op, "running_mean", running_mean, shape.channels, device);
  require_f32(op, "running_var", running_var, shape.channels, device);
  const float* w = optional_f32(op, "weight", weight, shape.channels, device);
  const float* b = optional_f32(op, "bias", bias, shape.channels, device);
  const void* residual = optional_residual(op, epilogue, x);
  ENGINE_REQUIRE(eps >= 0.f, std::string(op) + ": eps must be >= 0, got " + std::to_string(eps));
  ops::require_on_stream(op, "x", x, stream);
  if (device.is_cpu()) {
    cpu::batchnorm_eval_forward(x.dtype(), x.raw_data(), running_mean.data<float>(),
                                running_var.data<float>(), w, b, eps, residual, epilogue.relu,
                                y.raw_data(), shape.rows, shape.channels);
  } else {
#if ENGINE_HAVE_CUDA
    cuda::batchnorm_eval_forward(x.dtype(), x.raw_data(), running_mean.data<float>(),
                                 running_var.data<float>(), w, b, eps, residual, epilogue.relu,
                                 y.raw_data(), shape.rows, shape.channels, stream.native());
#endif
  }
}

void batchnorm_backward_reduce(const Tensor& dy, const Tensor& x, const Tensor& batch_stats,
                               Tensor& grad_sums, Tensor& workspace, Stream& stream) {
  constexpr std::string_view op = "batchnorm_backward_reduce";
  const Rows shape = require_activation(op, "x", x);
  ops::require_like(op, "x", x, "dy", dy);
  const Device device = x.device();
  require_f32(op, "batch_stats", batch_stats, batchnorm_stats_numel(shape.channels), device);
  require_f32(op, "grad_sums", grad_sums, 2 * shape.channels, device);
  ops::require_on_stream(op, "x", x, stream);
  if (device.is_cpu()) {
    cpu::batchnorm_backward_reduce(x.dtype(), dy.raw_data(), x.raw_data(),
                                   batch_stats.data<float>(), grad_sums.data<float>(), shape.rows,
                                   shape.channels);
  } else {
#if ENGINE_HAVE_CUDA
    float* scratch = require_workspace(op, workspace, shape, device);
    cuda::batchnorm_backward_reduce(x.dtype(), dy.raw_data(), x.raw_data(),
                                    batch_stats.data<float>(), grad_sums.data<float>(), shape.rows,
                                    shape.channels, scratch, stream.native());
#else
    (void)workspace;
#endif
  }
}

void batchnorm_backward_elementwise(const Tensor& dy, const Tensor& x, const Tensor& batch_stats,
                                    const Tensor& weight, const Tensor& grad_sums, Tensor& dx,
                                    Stream& stream) {
  constexpr std::string_view op = "batchnorm_backward_elementwise";
  const Rows shape = require_activation(op, "x", x);
  ops::require_like(op, "x", x, "dy", dy);
  ops::require_like(op, "x", x, "dx", dx);
  const Device device = x.device();
  require_f32(op, "batch_stats", batch_stats, batchnorm_stats_numel(shape.channels), device);
  const float* w = optional_f32(op, "weight", weight, shape.channels, device);
  require_f32(op, "grad_sums", grad_sums, 2 * shape.channels, device);
  ops::require_on_stream(op, "x", x, stream);
  if (device.is_cpu()) {
    cpu::batchnorm_backward_elementwise(x.dtype(), dy.raw_data(), x.raw_data(),
                                        batch_stats.data<float>(), w, grad_sums.data<float>(),
                                        dx.raw_data(), shape.rows, shape.channels);
  } else {
#if ENGINE_HAVE_CUDA
    cuda::batchnorm_backward_elementwise(
        x.dtype(), dy.raw_data(), x.raw_data(), batch_stats.data<float>(), w,
        grad_sums.data<float>(), dx.raw_data(), shape.rows, shape.channels, stream.native());
#endif
  }
}

}  // namespace engine
