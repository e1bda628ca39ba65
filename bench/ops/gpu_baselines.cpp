#include "bench/ops/gpu_baselines.h"

#include <string>

#include "kernels/conv_algo.h"
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

template <ConvPass pass>
std::optional<GpuBaselineTime> cudnn_conv(const OpCase& c, Stream& stream,
                                          const TimingOptions& timing) {
  const std::vector<int64_t>& d = c.dims;  // the layout kCudnnConvForward's comment gives
  Conv2dShape shape;
  shape.batch = d[0];
  shape.in_h = d[1];
  shape.in_w = d[2];
  shape.in_channels = d[3];
  shape.out_channels = d[4];
  shape.kernel_h = d[5];
  shape.kernel_w = d[6];
  shape.stride_h = shape.stride_w = d[7];
  shape.pad_h = shape.pad_w = d[8];
  const bench::CudnnPassTime t = bench::time_cudnn_conv(shape, c.dtype, pass, stream, timing);
  return GpuBaselineTime{
      t.time_us, "cudnn " + std::string(conv_pass_name(pass)) + " algo " + std::to_string(t.algo)};
}
#else
std::optional<GpuBaselineTime> absent(const OpCase&, Stream&, const TimingOptions&) {
  return std::nullopt;
}
constexpr auto cudnn_add_relu = absent;
constexpr auto cublas_forward = absent;
constexpr auto cublas_backward_data = absent;
constexpr auto cublas_backward_weight = absent;
template <ConvPass>
constexpr auto cudnn_conv = absent;
#endif

}  // namespace

const GpuBaseline kCopyBaseline{"memcpy", copy_time};
const GpuBaseline kCudnnAddReluBaseline{"cudnn", cudnn_add_relu};
const GpuBaseline kCublasLinearForward{"cublas", cublas_forward};
const GpuBaseline kCublasLinearBackwardData{"cublas", cublas_backward_data};
const GpuBaseline kCublasLinearBackwardWeight{"cublas", cublas_backward_weight};
const GpuBaseline kCudnnConvForward{"cudnn", cudnn_conv<ConvPass::forward>};
const GpuBaseline kCudnnConvBackwardData{"cudnn", cudnn_conv<ConvPass::backward_data>};
const GpuBaseline kCudnnConvBackwardFilter{"cudnn", cudnn_conv<ConvPass::backward_filter>};

}  // namespace engine::op_registry
