#include "bench/ops/gpu_baselines.h"

#include <string>

#include "kernels/ops/copy.h"
#if ENGINE_BENCH_GPU_BASELINES
#include "bench/gpu_baselines.h"
#endif

namespace engine::op_registry {

namespace {

// A copy of bytes / 2 reads and writes the case's bytes.
std::optional<GpuBaselineTime> copy_time(const OpCase& c, Stream& stream,
                                         const TimingOptions& timing) {
  const int64_t elements = static_cast<int64_t>(c.bytes / 8);
  Tensor src = Tensor::zeros({elements}, DType::f32, stream.device(), stream);
  Tensor dst = Tensor::empty({elements}, DType::f32, stream.device());
  return GpuBaselineTime{
      bench::median_stream_time_us([&] { copy(src, dst, stream); }, stream, timing), ""};
}

#if ENGINE_BENCH_GPU_BASELINES
std::optional<GpuBaselineTime> cudnn_add_relu(const OpCase& c, Stream& stream,
                                              const TimingOptions& timing) {
  return GpuBaselineTime{bench::time_cudnn_add_relu(shape_numel(c.dims), stream, timing), ""};
}

bench::LinearPassTimes cublas_linear(const OpCase& c, Stream& stream, const TimingOptions& timing) {
  return bench::time_cublas_linear(c.dims[0], c.dims[1], c.dims[2], c.dtype, stream, timing);
}

std::optional<GpuBaselineTime> cublas_forward(const OpCase& c, Stream& stream,
                                              const TimingOptions& timing) {
  return GpuBaselineTime{cublas_linear(c, stream, timing).forward_us, ""};
}
std::optional<GpuBaselineTime> cublas_backward_data(const OpCase& c, Stream& stream,
                                                    const TimingOptions& timing) {
  return GpuBaselineTime{cublas_linear(c, stream, timing).backward_data_us, ""};
}
std::optional<GpuBaselineTime> cublas_backward_weight(const OpCase& c, Stream& stream,
                                                      const TimingOptions& timing) {
  return GpuBaselineTime{cublas_linear(c, stream, timing).backward_weight_us, ""};
}
#else
std::optional<GpuBaselineTime> absent(const OpCase&, Stream&, const TimingOptions&) {
  return std::nullopt;
}
constexpr auto cudnn_add_relu = absent;
constexpr auto cublas_forward = absent;
constexpr auto cublas_backward_data = absent;
constexpr auto cublas_backward_weight = absent;
#endif

}  // namespace

const GpuBaseline kCopyBaseline{"memcpy", copy_time};
const GpuBaseline kCudnnAddReluBaseline{"cudnn", cudnn_add_relu};
const GpuBaseline kCublasLinearForward{"cublas", cublas_forward};
const GpuBaseline kCublasLinearBackwardData{"cublas", cublas_backward_data};
const GpuBaseline kCublasLinearBackwardWeight{"cublas", cublas_backward_weight};

}  // namespace engine::op_registry
