// GPU baselines for bench_kernels, timed in the same run as our kernels: cuDNN convolutions
// (NHWC, TF32 off for fp32), cuBLAS GEMMs, and device-to-device memcpy bandwidth.
// Available when the build has CUDA and cuDNN; they need a GPU to run.
#pragma once

#include <cstdint>

#include "bench/timing.h"
#include "kernels/conv_shape.h"
#include "kernels/dtype.h"
#include "kernels/stream.h"

namespace engine::bench {

struct ConvPassTimes {
  double forward_us = 0;
  double backward_data_us = 0;
  double backward_filter_us = 0;
};

ConvPassTimes time_cudnn_conv(const Conv2dShape& shape, DType dtype, Stream& stream,
                              const TimingOptions& options);
// y[rows, out] = x[rows, in] w[out, in]^T with cublasGemmEx (fp32 compute, no TF32).
double time_cublas_linear(int64_t rows, int64_t in, int64_t out, DType dtype, Stream& stream,
                          const TimingOptions& options);
double time_device_memcpy(int64_t bytes, Stream& stream, const TimingOptions& options);

}  // namespace engine::bench
