#include "bench/ops/gpu_baselines.h"

#include "kernels/ops/copy.h"
#if ENGINE_BENCH_GPU_BASELINES
#include "bench/gpu_baselines.h"
#endif

namespace engine::op_registry {

namespace {

// A copy of bytes / 2 reads and writes the case's bytes.
std::optional<double> copy_time_us(const OpCase& c, Stream& stream, const TimingOptions& timing) {
  const int64_t elements = static_cast<int64_t>(c.bytes / 8);
  Tensor src = Tensor::zeros({elements}, DType::f32, stream.device(), stream);
  Tensor dst = Tensor::empty({elements}, DType::f32, stream.device());
  return bench::median_stream_time_us([&] { copy(src, dst, stream); }, stream, timing);
}

#if ENGINE_BENCH_GPU_BASELINES
std::optional<double> cudnn_add_relu_us(const OpCase& c, Stream& stream,
                                        const TimingOptions& timing) {
  return bench::time_cudnn_add_relu(shape_numel(c.dims), stream, timing);
}

bench::LinearPassTimes cublas_linear(const OpCase& c, Stream& stream, const TimingOptions& timing) {
  return bench::time_cublas_linear(c.dims[0], c.dims[1], c.dims[2], c.dtype, stream, timing);
}

std::optional<double> cublas_forward_us(const OpCase& c, Stream& stream,
                                        const TimingOptions& timing) {
  return cublas_linear(c, stream, timing).forward_us;
}
std::optional<double> cublas_backward_data_us(const OpCase& c, Stream& stream,
                                              const TimingOptions& timing) {
  return cublas_linear(c, stream, timing).backward_data_us;
}
std::optional<double> cublas_backward_weight_us(const OpCase& c, Stream& stream,
                                                const TimingOptions& timing) {
  return cublas_linear(c, stream, timing).backward_weight_us;
}
#else
std::optional<double> absent(const OpCase&, Stream&, const TimingOptions&) {
  return std::nullopt;
}
constexpr auto cudnn_add_relu_us = absent;
constexpr auto cublas_forward_us = absent;
constexpr auto cublas_backward_data_us = absent;
constexpr auto cublas_backward_weight_us = absent;
#endif

}  // namespace

const GpuBaseline kCopyBaseline{"memcpy", copy_time_us};
const GpuBaseline kCudnnAddReluBaseline{"cudnn", cudnn_add_relu_us};
const GpuBaseline kCublasLinearForward{"cublas", cublas_forward_us};
const GpuBaseline kCublasLinearBackwardData{"cublas", cublas_backward_data_us};
const GpuBaseline kCublasLinearBackwardWeight{"cublas", cublas_backward_weight_us};

}  // namespace engine::op_registry
