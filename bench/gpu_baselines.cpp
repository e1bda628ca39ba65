#include "bench/gpu_baselines.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <vector>

#include "kernels/cuda/check_cublas.h"
#include "kernels/cuda/check_cuda.h"
#include "kernels/cuda/check_cudnn.h"
#include "kernels/tensor.h"

namespace engine::bench {

namespace {

cudnnDataType_t cudnn_type(DType dtype) {
  return dtype == DType::f32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_BFLOAT16;
}

// Owns the cuDNN descriptors of one convolution in NHWC/KRSC.
struct CudnnConv {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv_desc = nullptr;

  CudnnConv(const Conv2dShape& s, DType dtype, cudaStream_t stream) {
    CHECK_CUDNN(cudnnCreate(&handle));
    CHECK_CUDNN(cudnnSetStream(handle, stream));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&x_desc));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&y_desc));
    CHECK_CUDNN(cudnnCreateFilterDescriptor(&w_desc));
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv_desc));
    const cudnnDataType_t type = cudnn_type(dtype);
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NHWC, type, s.batch, s.in_channels,
                                           s.in_h, s.in_w));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NHWC, type, s.batch, s.out_channels,
                                           s.out_h(), s.out_w()));
    CHECK_CUDNN(cudnnSetFilter4dDescriptor(w_desc, type, CUDNN_TENSOR_NHWC, s.out_channels,
                                           s.in_channels, s.kernel_h, s.kernel_w));
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(conv_desc, s.pad_h, s.pad_w, s.stride_h, s.stride_w,
                                                s.dilation_h, s.dilation_w, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    // fp32: plain FMA math (no TF32), the same arithmetic as our fp32 engine.
    CHECK_CUDNN(cudnnSetConvolutionMathType(
        conv_desc, dtype == DType::f32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  }
  ~CudnnConv() {
    cudnnDestroyConvolutionDescriptor(conv_desc);
    cudnnDestroyFilterDescriptor(w_desc);
    cudnnDestroyTensorDescriptor(y_desc);
    cudnnDestroyTensorDescriptor(x_desc);
    cudnnDestroy(handle);
  }
};

}  // namespace

ConvPassTimes time_cudnn_conv(const Conv2dShape& s, DType dtype, Stream& stream,
                              const TimingOptions& options) {
  const Device device = stream.device();
  CudnnConv conv(s, dtype, stream.native());
  Tensor x = Tensor::zeros(s.input_shape(), dtype, device, stream);
  Tensor w = Tensor::zeros(s.filter_shape(), dtype, device, stream);
  Tensor y = Tensor::zeros(s.output_shape(), dtype, device, stream);
  const float one = 1.f, zero = 0.f;
  auto sync = [&] { stream.synchronize(); };
  ConvPassTimes times;

  int returned = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[8];
  CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(
      conv.handle, conv.x_desc, conv.w_desc, conv.conv_desc, conv.y_desc, 8, &returned, fwd));
  Tensor fwd_ws = Tensor::empty({static_cast<int64_t>(fwd[0].memory / 4 + 1)}, DType::f32, device);
  times.forward_us = median_time_us(
      [&] {
        CHECK_CUDNN(cudnnConvolutionForward(
            conv.handle, &one, conv.x_desc, x.raw_data(), conv.w_desc, w.raw_data(), conv.conv_desc,
            fwd[0].algo, fwd_ws.raw_data(), fwd[0].memory, &zero, conv.y_desc, y.raw_data()));
      },
      sync, options);

  cudnnConvolutionBwdDataAlgoPerf_t bwd_data[8];
  CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
      conv.handle, conv.w_desc, conv.y_desc, conv.conv_desc, conv.x_desc, 8, &returned, bwd_data));
  Tensor data_ws =
      Tensor::empty({static_cast<int64_t>(bwd_data[0].memory / 4 + 1)}, DType::f32, device);
  times.backward_data_us = median_time_us(
      [&] {
        CHECK_CUDNN(cudnnConvolutionBackwardData(
            conv.handle, &one, conv.w_desc, w.raw_data(), conv.y_desc, y.raw_data(), conv.conv_desc,
            bwd_data[0].algo, data_ws.raw_data(), bwd_data[0].memory, &zero, conv.x_desc,
            x.raw_data()));
      },
      sync, options);

  cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter[8];
  CHECK_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(conv.handle, conv.x_desc, conv.y_desc,
                                                            conv.conv_desc, conv.w_desc, 8,
                                                            &returned, bwd_filter));
  Tensor filter_ws =
      Tensor::empty({static_cast<int64_t>(bwd_filter[0].memory / 4 + 1)}, DType::f32, device);
  times.backward_filter_us = median_time_us(
      [&] {
        CHECK_CUDNN(cudnnConvolutionBackwardFilter(
            conv.handle, &one, conv.x_desc, x.raw_data(), conv.y_desc, y.raw_data(), conv.conv_desc,
            bwd_filter[0].algo, filter_ws.raw_data(), bwd_filter[0].memory, &zero, conv.w_desc,
            w.raw_data()));
      },
      sync, options);
  return times;
}

double time_cublas_linear(int64_t rows, int64_t in, int64_t out, DType dtype, Stream& stream,
                          const TimingOptions& options) {
  const Device device = stream.device();
  Tensor x = Tensor::zeros({rows, in}, dtype, device, stream);
  Tensor w = Tensor::zeros({out, in}, dtype, device, stream);
  Tensor y = Tensor::zeros({rows, out}, dtype, device, stream);
  cublasHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetStream(handle, stream.native()));
  // Row-major y = x w^T is column-major y^T = w x^T: C(out x rows) = op(A = w)^T * B(x).
  const cudaDataType_t type = dtype == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
  const cublasComputeType_t compute =
      dtype == DType::f32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  const float one = 1.f, zero = 0.f;
  const double time = median_time_us(
      [&] {
        CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, &one,
                                  w.raw_data(), type, in, x.raw_data(), type, in, &zero,
                                  y.raw_data(), type, out, compute, CUBLAS_GEMM_DEFAULT));
      },
      [&] { stream.synchronize(); }, options);
  cublasDestroy(handle);
  return time;
}

double time_device_memcpy(int64_t bytes, Stream& stream, const TimingOptions& options) {
  Tensor src = Tensor::zeros({bytes / 4}, DType::f32, stream.device(), stream);
  Tensor dst = Tensor::empty({bytes / 4}, DType::f32, stream.device());
  return median_time_us(
      [&] {
        CHECK_CUDA(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), bytes, cudaMemcpyDeviceToDevice,
                                   stream.native()));
      },
      [&] { stream.synchronize(); }, options);
}

}  // namespace engine::bench
