// GPU baselines for bench_kernels, timed in the same run as our kernels: cuDNN convolutions
// (NHWC, TF32 off for fp32, algorithms chosen by cuDNN's timed search), cuBLAS GEMMs, cuDNN's add
// and ReLU, and device-to-device memcpy bandwidth. Available when the build has CUDA and cuDNN;
// they need a GPU to run.
#pragma once

#include <cstdint>

#include "bench/timing.h"
#include "kernels/conv_algo.h"
#include "kernels/conv_shape.h"
#include "kernels/dtype.h"
#include "kernels/stream.h"

namespace engine::bench {

struct CudnnPassTime {
  double time_us = 0;
  int algo = -1;  // cuDNN's enum of the pass (cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t)
};

// A convolution pass with the algorithm cuDNN's own search finds fastest for it
// (cudnnFind*AlgorithmEx on our buffers, up to 1 GiB of workspace: PyTorch's cudnn.benchmark),
// then timed as ours are (median_stream_time_us) on random operands.
CudnnPassTime time_cudnn_conv(const Conv2dShape& shape, DType dtype, ConvPass pass, Stream& stream,
                              const TimingOptions& options);
struct LinearPassTimes {
  double forward_us = 0;
  double backward_data_us = 0;
  double backward_weight_us = 0;  // the weight and the bias gradient
};

// A linear layer's three passes with cublasGemmEx on row-major operands, as ours:
//   fwd         y[rows, out] = x[rows, in] w[out, in]^T   (no bias: ours adds it in the GEMM's
//                                                          epilogue, so cuBLAS does a bit less)
//   bwd_data    dx[rows, in] = dy[rows, out] w[out, in]
//   bwd_weight  dw[out, in] = dy^T x, then db[out] = dy^T ones[rows] (a one-column GEMM)
// x, w, y, dy, dx are in dtype; dw and db are f32, as our master-weight gradients. f32 runs
// CUBLAS_COMPUTE_32F_PEDANTIC (no TF32: the arithmetic of our fp32 engine); bf16 runs on
// tensor cores with fp32 compute (CUBLAS_COMPUTE_32F).
LinearPassTimes time_cublas_linear(int64_t rows, int64_t in, int64_t out, DType dtype,
                                   Stream& stream, const TimingOptions& options);
double time_device_memcpy(int64_t bytes, Stream& stream, const TimingOptions& options);
// y = relu(a + b) over n f32 elements as a library does it without fusion: cudnnOpTensor
// (add) then cudnnActivationForward (ReLU, in place), two kernels and five passes over
// memory where ours is one kernel and three.
double time_cudnn_add_relu(int64_t n, Stream& stream, const TimingOptions& options);

}  // namespace engine::bench
