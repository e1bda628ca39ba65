// ReLU forward/backward, the fused residual add + ReLU and the plain add, as element-wise maps
// (activation_ops.cuh).
#pragma once

#include "kernels/cuda/activation.h"
#include "kernels/cuda/activation_ops.cuh"
#include "kernels/cuda/elementwise.cuh"

namespace engine::cuda {

// ---------------------------------------------------------------------------------------
// The entry points (declared in activation.h) with their launch geometry: the SIMT tests force
// grids through it.

inline void relu_forward(const ReluForwardArgs& args, cudaStream_t stream,
                         const ElementwiseLaunch& geometry) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    launch_map1(args.n, ReluOp<T>{}, static_cast<T*>(args.y), static_cast<const T*>(args.x), stream,
                geometry);
  });
}

inline void relu_backward(const ReluBackwardArgs& args, cudaStream_t stream,
                          const ElementwiseLaunch& geometry) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    launch_map2(args.n, ReluBackwardOp<T>{}, static_cast<T*>(args.dx),
                static_cast<const T*>(args.y), static_cast<const T*>(args.dy), stream, geometry);
  });
}

inline void add(const AddArgs& args, cudaStream_t stream, const ElementwiseLaunch& geometry) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    T* y = static_cast<T*>(args.y);
    const T* a = static_cast<const T*>(args.a);
    const T* b = static_cast<const T*>(args.b);
    if (args.relu) {
      launch_map2(args.n, AddOp<T, true>{}, y, a, b, stream, geometry);
    } else {
      launch_map2(args.n, AddOp<T, false>{}, y, a, b, stream, geometry);
    }
  });
}

// With the default geometry.
void relu_forward(const ReluForwardArgs& args, cudaStream_t stream) {
  relu_forward(args, stream, ElementwiseLaunch{});
}
void relu_backward(const ReluBackwardArgs& args, cudaStream_t stream) {
  relu_backward(args, stream, ElementwiseLaunch{});
}
void add(const AddArgs& args, cudaStream_t stream) {
  add(args, stream, ElementwiseLaunch{});
}

}  // namespace engine::cuda
