#include "bench/gpu_baselines.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>
#include <vector>

#include "bench/random_fill.h"
#include "kernels/cuda/check_cublas.h"
#include "kernels/cuda/check_cuda.h"
#include "kernels/cuda/check_cudnn.h"
#include "kernels/error.h"
#include "kernels/ops/copy.h"
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

// The workspace cuDNN's algorithm search may use: the largest any ResNet-50 pass asks for at
// batch 256 is far below it, and an H200 has 141 GB.
constexpr size_t kCudnnSearchWorkspaceBytes = size_t{1} << 30;

// The fastest successful result of a cudnnFind*AlgorithmEx search (sorted by time), whose
// math type the descriptor then takes, as PyTorch's cudnn.benchmark does.
template <typename Perf>
const Perf& fastest(const Perf* results, int returned, const char* pass,
                    cudnnConvolutionDescriptor_t conv_desc) {
  for (int i = 0; i < returned; ++i) {
    if (results[i].status == CUDNN_STATUS_SUCCESS) {
      CHECK_CUDNN(cudnnSetConvolutionMathType(conv_desc, results[i].mathType));
      return results[i];
    }
  }
  throw Error(std::string("time_cudnn_conv: cuDNN found no algorithm for the ") + pass + " pass");
}

// One pass: cuDNN times its candidates on our buffers (`find`, a cudnnFind*AlgorithmEx into
// results), the fastest is kept, then timed as ours are (`run` with it). The search writes the
// pass's output, which is fine here.
template <typename Perf, typename Find, typename Run>
CudnnPassTime search_and_time(const char* pass, cudnnConvolutionDescriptor_t conv_desc, Find&& find,
                              Run&& run, Stream& stream, const TimingOptions& options) {
  constexpr int kMaxResults = 16;
  Perf results[kMaxResults];
  int returned = 0;
  find(kMaxResults, &returned, results);
  const Perf best = fastest(results, returned, pass, conv_desc);
  return {median_stream_time_us([&] { run(best); }, stream, options), static_cast<int>(best.algo)};
}

}  // namespace

CudnnPassTime time_cudnn_conv(const Conv2dShape& s, DType dtype, ConvPass pass, Stream& stream,
                              const TimingOptions& options) {
  const Device device = stream.device();
  CudnnConv conv(s, dtype, stream.native());
  // Random operands, as ours are timed on (the op registry's Inputs::fast).
  Tensor x = random_tensor(s.input_shape(), dtype, stream, 1);
  Tensor w = random_tensor(s.filter_shape(), dtype, stream, 2);
  Tensor y = random_tensor(s.output_shape(), dtype, stream, 3);
  Tensor ws =
      Tensor::empty({static_cast<int64_t>(kCudnnSearchWorkspaceBytes / 4)}, DType::f32, device);
  const float one = 1.f, zero = 0.f;
  // Shorter names for the descriptors.
  const cudnnHandle_t h = conv.handle;
  const cudnnTensorDescriptor_t xd = conv.x_desc, yd = conv.y_desc;
  const cudnnFilterDescriptor_t wd = conv.w_desc;
  const cudnnConvolutionDescriptor_t cd = conv.conv_desc;
  if (pass == ConvPass::forward) {
    return search_and_time<cudnnConvolutionFwdAlgoPerf_t>(
        "forward", cd,
        [&](int most, int* returned, cudnnConvolutionFwdAlgoPerf_t* results) {
          CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(
              h, xd, x.raw_data(), wd, w.raw_data(), cd, yd, y.raw_data(), most, returned, results,
              ws.raw_data(), kCudnnSearchWorkspaceBytes));
        },
        [&](const cudnnConvolutionFwdAlgoPerf_t& best) {
          CHECK_CUDNN(cudnnConvolutionForward(h, &one, xd, x.raw_data(), wd, w.raw_data(), cd,
                                              best.algo, ws.raw_data(), best.memory, &zero, yd,
                                              y.raw_data()));
        },
        stream, options);
  }
  if (pass == ConvPass::backward_data) {
    return search_and_time<cudnnConvolutionBwdDataAlgoPerf_t>(
        "input gradient", cd,
        [&](int most, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results) {
          CHECK_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(
              h, wd, w.raw_data(), yd, y.raw_data(), cd, xd, x.raw_data(), most, returned, results,
              ws.raw_data(), kCudnnSearchWorkspaceBytes));
        },
        [&](const cudnnConvolutionBwdDataAlgoPerf_t& best) {
          CHECK_CUDNN(cudnnConvolutionBackwardData(h, &one, wd, w.raw_data(), yd, y.raw_data(), cd,
                                                   best.algo, ws.raw_data(), best.memory, &zero, xd,
                                                   x.raw_data()));
        },
        stream, options);
  }
  return search_and_time<cudnnConvolutionBwdFilterAlgoPerf_t>(
      "filter gradient", cd,
      [&](int most, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results) {
        CHECK_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            h, xd, x.raw_data(), yd, y.raw_data(), cd, wd, w.raw_data(), most, returned, results,
            ws.raw_data(), kCudnnSearchWorkspaceBytes));
      },
      [&](const cudnnConvolutionBwdFilterAlgoPerf_t& best) {
        CHECK_CUDNN(cudnnConvolutionBackwardFilter(h, &one, xd, x.raw_data(), yd, y.raw_data(), cd,
                                                   best.algo, ws.raw_data(), best.memory, &zero, wd,
                                                   w.raw_data()));
      },
      stream, options);
}

LinearPassTimes time_cublas_linear(int64_t rows, int64_t in, int64_t out, DType dtype,
                                   Stream& stream, const TimingOptions& options) {
  const Device device = stream.device();
  // The operands ours are timed on (random, as the fc layer's description makes them fast).
  Tensor x = random_tensor({rows, in}, dtype, stream, 1);
  Tensor w = random_tensor({out, in}, dtype, stream, 2);
  Tensor y = random_tensor({rows, out}, dtype, stream, 3);  // also dy
  Tensor dw = Tensor::zeros({out, in}, DType::f32, device, stream);
  Tensor db = Tensor::zeros({out}, DType::f32, device, stream);
  Tensor ones = Tensor::zeros({rows}, dtype, device, stream);
  fill(ones, 1.f, stream);
  cublasHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetStream(handle, stream.native()));
  const cudaDataType_t type = dtype == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
  const cublasComputeType_t compute =
      dtype == DType::f32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  const float one = 1.f, zero = 0.f;
  // cuBLAS is column-major: a row-major [r, c] matrix is its transpose, c x r with leading
  // dimension c. So each row-major product C = A B is computed as C^T = B^T A^T.
  auto gemm = [&](cublasOperation_t op_a, cublasOperation_t op_b, int64_t m, int64_t n, int64_t k,
                  const Tensor& a, int64_t lda, const Tensor& b, int64_t ldb, Tensor& c,
                  int64_t ldc) {
    const cudaDataType_t c_type = c.dtype() == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
    CHECK_CUBLAS(cublasGemmEx(handle, op_a, op_b, static_cast<int>(m), static_cast<int>(n),
                              static_cast<int>(k), &one, a.raw_data(), type, static_cast<int>(lda),
                              b.raw_data(), type, static_cast<int>(ldb), &zero, c.raw_data(),
                              c_type, static_cast<int>(ldc), compute, CUBLAS_GEMM_DEFAULT));
  };
  LinearPassTimes times;
  // y^T (out x rows) = w (w^T stored, transposed back) * x^T.
  times.forward_us = median_stream_time_us(
      [&] { gemm(CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, w, in, x, in, y, out); }, stream,
      options);
  // dx^T (in x rows) = w^T (as stored) * dy^T (as stored).
  times.backward_data_us = median_stream_time_us(
      [&] { gemm(CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, w, in, y, out, x, in); }, stream,
      options);
  // dw^T (in x out) = x^T (as stored) * dy (dy^T stored, transposed back); then
  // db (out x 1) = dy^T (as stored) * ones (rows x 1).
  times.backward_weight_us = median_stream_time_us(
      [&] {
        gemm(CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, x, in, y, out, dw, in);
        gemm(CUBLAS_OP_N, CUBLAS_OP_N, out, 1, rows, y, out, ones, rows, db, out);
      },
      stream, options);
  cublasDestroy(handle);
  return times;
}

double time_device_memcpy(int64_t bytes, Stream& stream, const TimingOptions& options) {
  Tensor src = Tensor::zeros({bytes / 4}, DType::f32, stream.device(), stream);
  Tensor dst = Tensor::empty({bytes / 4}, DType::f32, stream.device());
  return median_stream_time_us(
      [&] {
        CHECK_CUDA(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), bytes, cudaMemcpyDeviceToDevice,
                                   stream.native()));
      },
      stream, options);
}

double time_cudnn_add_relu(int64_t n, Stream& stream, const TimingOptions& options) {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t desc = nullptr;
  cudnnOpTensorDescriptor_t add = nullptr;
  cudnnActivationDescriptor_t relu = nullptr;
  CHECK_CUDNN(cudnnCreate(&handle));
  CHECK_CUDNN(cudnnSetStream(handle, stream.native()));
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&desc));
  CHECK_CUDNN(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1,
                                         static_cast<int>(n)));
  CHECK_CUDNN(cudnnCreateOpTensorDescriptor(&add));
  CHECK_CUDNN(cudnnSetOpTensorDescriptor(add, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT,
                                         CUDNN_NOT_PROPAGATE_NAN));
  CHECK_CUDNN(cudnnCreateActivationDescriptor(&relu));
  CHECK_CUDNN(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  Tensor a = Tensor::zeros({n}, DType::f32, stream.device(), stream);
  Tensor b = Tensor::zeros({n}, DType::f32, stream.device(), stream);
  Tensor y = Tensor::empty({n}, DType::f32, stream.device());
  const float one = 1.f, zero = 0.f;
  const double time_us = median_stream_time_us(
      [&] {
        CHECK_CUDNN(cudnnOpTensor(handle, add, &one, desc, a.raw_data(), &one, desc, b.raw_data(),
                                  &zero, desc, y.raw_data()));
        CHECK_CUDNN(cudnnActivationForward(handle, relu, &one, desc, y.raw_data(), &zero, desc,
                                           y.raw_data()));
      },
      stream, options);
  cudnnDestroyActivationDescriptor(relu);
  cudnnDestroyOpTensorDescriptor(add);
  cudnnDestroyTensorDescriptor(desc);
  cudnnDestroy(handle);
  return time_us;
}

}  // namespace engine::bench
