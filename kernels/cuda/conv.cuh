// conv2d forward / backward-data / backward-filter as implicit GEMMs over the gathers in
// conv_operands.cuh, on the engines of gemm_tiles.cuh. Pointwise (1x1, stride 1, no
// padding) convolutions and linear layers skip the gathers: they are plain GEMMs on NHWC rows.
#pragma once

#include "kernels/cuda/conv.h"
#include "kernels/cuda/conv_operands.cuh"
#include "kernels/cuda/gemm_epilogue.cuh"
#include "kernels/cuda/gemm_operands.cuh"
#include "kernels/cuda/gemm_tiles.cuh"

namespace engine::cuda {

// Launch options; tests force splits to cover the split-K path with small shapes.
struct ConvLaunch {
  int split_k = 0;  // 0: choose_split_k
};

// One split choice for both engines: they tile C alike.
static_assert(kFp32TileM == kWmmaTileM && kFp32TileN == kWmmaTileN);

inline int filter_grad_splits(const Conv2dShape& shape, const ConvLaunch& options) {
  if (options.split_k > 0) return options.split_k;
  return choose_split_k(shape.out_channels, shape.gemm_k(), shape.gemm_m(), kFp32TileM, kFp32TileN);
}

inline size_t filter_grad_workspace_bytes(const Conv2dShape& shape, int splits) {
  const int64_t filter = shape.out_channels * shape.gemm_k();
  const int64_t bias = column_sum_slices(shape.gemm_m()) * shape.out_channels;
  return static_cast<size_t>(splits * filter + bias) * sizeof(float);
}

// ---------------------------------------------------------------------------------------
// Launchers

template <typename T>
void conv2d_forward_launch(const Conv2dShape& shape, const T* x, const T* w, const float* bias,
                           T* y, cudaStream_t stream) {
  const int64_t k = shape.gemm_k();
  const StoreToMatrix<T> store{y, shape.out_channels, bias, false};
  const KContiguousOperand<T> filters{w, k};
  if (shape.is_pointwise()) {
    gemm_launch<T>(shape.gemm_m(), shape.out_channels, k, KContiguousOperand<T>{x, k}, filters,
                   store, 1, stream);
  } else {
    gemm_launch<T>(shape.gemm_m(), shape.out_channels, k, ConvForwardInput<T>{x, shape}, filters,
                   store, 1, stream);
  }
}

template <typename T>
void conv2d_backward_data_launch(const Conv2dShape& shape, const T* dy, const T* w, T* dx,
                                 cudaStream_t stream) {
  const int64_t in_pixels = shape.batch * shape.in_h * shape.in_w;
  const int64_t reduction = shape.kernel_h * shape.kernel_w * shape.out_channels;
  const StoreToMatrix<T> store{dx, shape.in_channels, nullptr, false};
  if (shape.is_pointwise()) {
    gemm_launch<T>(in_pixels, shape.in_channels, reduction,
                   KContiguousOperand<T>{dy, shape.out_channels},
                   RowContiguousOperand<T>{w, shape.in_channels}, store, 1, stream);
  } else {
    gemm_launch<T>(in_pixels, shape.in_channels, reduction, ConvDataGradOutput<T>{dy, shape},
                   ConvDataGradFilter<T>{w, shape}, store, 1, stream);
  }
}

template <typename T, typename TGrad>
void conv2d_backward_filter_launch(const Conv2dShape& shape, const T* x, const T* dy, TGrad* dw,
                                   float* dbias, bool accumulate, float* workspace,
                                   cudaStream_t stream, ConvLaunch options = {}) {
  const int splits = filter_grad_splits(shape, options);
  const int64_t k_out = shape.out_channels, taps = shape.gemm_k(), pixels = shape.gemm_m();
  const RowContiguousOperand<T> grad_out{dy, k_out};
  auto gemm = [&](const auto& store, int split_count) {
    if (shape.is_pointwise()) {
      gemm_launch<T>(k_out, taps, pixels, grad_out, RowContiguousOperand<T>{x, taps}, store,
                     split_count, stream);
    } else {
      gemm_launch<T>(k_out, taps, pixels, grad_out, ConvFilterGradInput<T>{x, shape}, store,
                     split_count, stream);
    }
  };
  if (splits == 1) {
    // Without a split there is nothing to sum: store (and accumulate) straight into dw rather
    // than through fp32 partials and a second kernel.
    gemm(StoreToMatrix<TGrad>{dw, taps, nullptr, accumulate}, 1);
  } else {
    gemm(StoreSplitPartial{workspace, k_out, taps}, splits);
    splitk_reduce_launch(splits, k_out * taps, workspace, dw, accumulate, stream);
  }
  if (dbias != nullptr) {
    column_sum_launch(pixels, k_out, dy, column_sum_slices(pixels),
                      workspace + splits * k_out * taps, dbias, accumulate, stream);
  }
}

// ---------------------------------------------------------------------------------------
// Entry points (declared in conv.h)

size_t conv2d_backward_filter_workspace_bytes(const Conv2dShape& shape) {
  return filter_grad_workspace_bytes(shape, filter_grad_splits(shape, {}));
}

void conv2d_forward(const Conv2dShape& shape, DType dtype, const void* x, const void* w,
                    const float* bias, void* y, cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    conv2d_forward_launch(shape, static_cast<const T*>(x), static_cast<const T*>(w), bias,
                          static_cast<T*>(y), stream);
  });
}

void conv2d_backward_data(const Conv2dShape& shape, DType dtype, const void* dy, const void* w,
                          void* dx, cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    conv2d_backward_data_launch(shape, static_cast<const T*>(dy), static_cast<const T*>(w),
                                static_cast<T*>(dx), stream);
  });
}

void conv2d_backward_filter(const Conv2dShape& shape, DType dtype, const void* x, const void* dy,
                            DType dw_dtype, void* dw, float* dbias, bool accumulate,
                            void* workspace, cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    dispatch_device_dtype(dw_dtype, [&]<typename TGrad>() {
      conv2d_backward_filter_launch(shape, static_cast<const T*>(x), static_cast<const T*>(dy),
                                    static_cast<TGrad*>(dw), dbias, accumulate,
                                    static_cast<float*>(workspace), stream);
    });
  });
}

}  // namespace engine::cuda
