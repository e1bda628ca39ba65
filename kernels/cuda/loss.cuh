// Softmax cross-entropy forward/backward (hard labels with smoothing, and soft targets) and
// top-k correct counts. One warp per row of
// logits (K = 1000 classes: 32 lanes stride over the row, coalesced), with an online softmax
// (running max and rescaled sum) so the forward reads each logit once; warp results are
// combined with butterfly shuffles, which leave every lane with the same value.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/loss.h"

namespace engine::cuda {

// Rows per block (one warp each) and the grid cap; rows beyond it are strided over. Tests
// lower max_blocks to exercise that loop with small inputs.
struct RowLaunch {
  int warps_per_block = 8;
  int max_blocks = 1024;
};

constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kMeanThreads = 256;

// The class index a label holds, or -1 when it is not in [0, k).
__device__ __forceinline__ int64_t label_class(int32_t label, int64_t k) {
  return label >= 0 && label < k ? label : -1;
}

// Adds v to a running (max, sum of exp(z - max)). -inf contributes nothing; NaN poisons the
// sum, so it propagates to the loss.
__device__ __forceinline__ void softmax_add(float& max, float& sum, float v) {
  if (v > max) {
    sum = sum * expf(max - v) + 1.f;
    max = v;
  } else if (v != -INFINITY) {
    sum += expf(v - max);
  }
}

__device__ __forceinline__ void softmax_merge(float& max, float& sum, float other_max,
                                              float other_sum) {
  const float top = fmaxf(max, other_max);
  const float mine = max == -INFINITY ? 0.f : sum * expf(max - top);
  const float theirs = other_max == -INFINITY ? 0.f : other_sum * expf(other_max - top);
  max = top;
  sum = mine + theirs;
}

// The softmax statistics of one row, on every lane of the warp; with kRowSum, also the sum of
// the row's logits (the forward's label-smoothing term), from the same read of the row.
template <bool kRowSum = false, typename T>
__device__ __forceinline__ void row_softmax(const T* z, int64_t k, float& max, float& sum,
                                            float* row_sum = nullptr) {
  max = -INFINITY;
  sum = 0.f;
  float total = 0.f;
  for (int64_t j = threadIdx.x; j < k; j += 32) {
    const float v = to_f32(z[j]);
    softmax_add(max, sum, v);
    if constexpr (kRowSum) total += v;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other_max = __shfl_xor_sync(kFullWarp, max, offset);
    const float other_sum = __shfl_xor_sync(kFullWarp, sum, offset);
    softmax_merge(max, sum, other_max, other_sum);
    if constexpr (kRowSum) total += __shfl_xor_sync(kFullWarp, total, offset);
  }
  if constexpr (kRowSum) *row_sum = total;
}

// What the cross-entropy kernels take, by value: logits [n, k] and labels [n] (typed), the label
// smoothing, and each pass's own output: sample_loss [n] (forward), or dlogits [n, k] and the
// scale of the gradient, grad_loss / n (backward).
template <typename T>
struct CrossEntropyParams {
  const T* logits = nullptr;
  const int32_t* labels = nullptr;
  int64_t n = 0;
  int64_t k = 0;
  float label_smoothing = 0.f;
  float* sample_loss = nullptr;  // forward
  float scale = 1.f;             // backward
  T* dlogits = nullptr;          // backward; may alias logits
};

// Block (32, warps): warp threadIdx.y of block b takes rows b * warps + y, then strides.
template <typename T>
__global__ void cross_entropy_forward_kernel(CrossEntropyParams<T> p) {
  const int64_t n = p.n, k = p.k;
  const float label_smoothing = p.label_smoothing;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; row < n;
       row += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const T* z = p.logits + row * k;
    float max, sum, sum_z;
    row_softmax<true>(z, k, max, sum, &sum_z);
    if (threadIdx.x == 0) {
      const int64_t label = label_class(p.labels[row], k);
      // -sum_j q_j (z_j - lse) = lse - sum_j q_j z_j, since the q_j sum to 1.
      p.sample_loss[row] = label < 0
                               ? NAN
                               : max + logf(sum) - (1.f - label_smoothing) * to_f32(z[label]) -
                                     label_smoothing / static_cast<float>(k) * sum_z;
    }
  }
}

// One block of kMeanThreads: out[0] = mean of values, by a fixed-shape tree (deterministic).
__global__ void loss_mean_kernel(const float* values, int64_t n, float* out) {
  __shared__ float partial[kMeanThreads];
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sum += values[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = partial[0] / static_cast<float>(n);
}

// dz = (softmax(z) - q) * scale; every lane finishes reading the row (the shuffles in
// row_softmax) before any lane writes, so dlogits may alias logits.
template <typename T>
__global__ void cross_entropy_backward_kernel(CrossEntropyParams<T> p) {
  const int64_t n = p.n, k = p.k;
  const float label_smoothing = p.label_smoothing, scale = p.scale;
  const float smooth = label_smoothing / static_cast<float>(k);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; row < n;
       row += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const T* z = p.logits + row * k;
    float max, sum;
    row_softmax(z, k, max, sum);
    const int64_t label = label_class(p.labels[row], k);
    if (label < 0) sum = NAN;
    T* dz = p.dlogits + row * k;
    for (int64_t j = threadIdx.x; j < k; j += 32) {
      const float target = smooth + (j == label ? 1.f - label_smoothing : 0.f);
      dz[j] = from_f32<T>((expf(to_f32(z[j]) - max) / sum - target) * scale);
    }
  }
}

// The target mass sum_j t_j and, with kTargetZ, sum_j t_j (z_j - max) of one row, on every
// lane.
template <bool kTargetZ, typename T>
__device__ __forceinline__ void row_target_sums(const T* z, const float* t, int64_t k, float max,
                                                float& mass, float& target_z) {
  mass = 0.f;
  target_z = 0.f;
  for (int64_t j = threadIdx.x; j < k; j += 32) {
    mass += t[j];
    if constexpr (kTargetZ) target_z += t[j] * (to_f32(z[j]) - max);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    mass += __shfl_xor_sync(kFullWarp, mass, offset);
    if constexpr (kTargetZ) target_z += __shfl_xor_sync(kFullWarp, target_z, offset);
  }
}

// Soft targets: -sum_j t_j (z_j - lse) = log(sum) * sum_j t_j - sum_j t_j (z_j - max), with
// lse = max + log(sum): shifted by the max, so large logits do not cancel. The kernels take
// their argument struct by value (the pointers are device pointers).
template <typename T>
__global__ void soft_cross_entropy_forward_kernel(SoftCrossEntropyForwardArgs args) {
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; row < args.n;
       row += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const T* z = static_cast<const T*>(args.logits) + row * args.k;
    float max, sum, mass, target_z;
    row_softmax(z, args.k, max, sum);
    row_target_sums<true>(z, args.targets + row * args.k, args.k, max, mass, target_z);
    if (threadIdx.x == 0) args.sample_loss[row] = logf(sum) * mass - target_z;
  }
}

// dz = (softmax(z) * sum_j t_j - t) * scale; every lane finishes reading the row (the
// shuffles) before any lane writes, so dlogits may alias logits.
template <typename T>
__global__ void soft_cross_entropy_backward_kernel(SoftCrossEntropyBackwardArgs args, float scale) {
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; row < args.n;
       row += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const T* z = static_cast<const T*>(args.logits) + row * args.k;
    const float* t = args.targets + row * args.k;
    float max, sum, mass, unused;
    row_softmax(z, args.k, max, sum);
    row_target_sums<false>(z, t, args.k, max, mass, unused);
    T* dz = static_cast<T*>(args.dlogits) + row * args.k;
    for (int64_t j = threadIdx.x; j < args.k; j += 32)
      dz[j] = from_f32<T>((expf(to_f32(z[j]) - max) / sum * mass - t[j]) * scale);
  }
}

__global__ void loss_zero_kernel(float* values, int n) {
  if (static_cast<int>(threadIdx.x) < n) values[threadIdx.x] = 0.f;
}

// The label's rank = classes ahead of it (greater, or equal with a lower index). Counts are
// added with float atomics on integers below 2^24: exact, so the order does not matter.
template <typename T>
__global__ void topk_correct_kernel(const T* logits, const int32_t* labels, int64_t n, int64_t k,
                                    float* correct) {
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; row < n;
       row += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const int64_t label = label_class(labels[row], k);
    if (label < 0) continue;  // the same for the whole warp
    const T* z = logits + row * k;
    const float target = to_f32(z[label]);
    int ahead = 0;
    for (int64_t j = threadIdx.x; j < k; j += 32) {
      const float v = to_f32(z[j]);
      ahead += (v > target || (v == target && j < label)) ? 1 : 0;
    }
    for (int offset = 16; offset > 0; offset /= 2)
      ahead += __shfl_xor_sync(kFullWarp, ahead, offset);
    if (threadIdx.x == 0) {
      if (ahead < 1) atomicAdd(&correct[0], 1.f);
      if (ahead < 5) atomicAdd(&correct[1], 1.f);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Launchers

inline dim3 row_grid(int64_t n, const RowLaunch& geometry) {
  const int64_t blocks = (n + geometry.warps_per_block - 1) / geometry.warps_per_block;
  return dim3(static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, geometry.max_blocks)));
}

// The entry points (declared in loss.h) with their launch geometry: the SIMT tests force grids
// through it.
inline void cross_entropy_forward(const CrossEntropyForwardArgs& args, cudaStream_t stream,
                                  const RowLaunch& geometry) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    launch(cross_entropy_forward_kernel<T>, row_grid(args.n, geometry),
           dim3(32, geometry.warps_per_block), 0, stream,
           CrossEntropyParams<T>{.logits = static_cast<const T*>(args.logits),
                                 .labels = args.labels,
                                 .n = args.n,
                                 .k = args.k,
                                 .label_smoothing = args.label_smoothing,
                                 .sample_loss = args.sample_loss});
  });
  launch(loss_mean_kernel, dim3(1), dim3(kMeanThreads), 0, stream, args.sample_loss, args.n,
         args.loss);
}

inline void cross_entropy_backward(const CrossEntropyBackwardArgs& args, cudaStream_t stream,
                                   const RowLaunch& geometry) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    launch(cross_entropy_backward_kernel<T>, row_grid(args.n, geometry),
           dim3(32, geometry.warps_per_block), 0, stream,
           CrossEntropyParams<T>{.logits = static_cast<const T*>(args.logits),
                                 .labels = args.labels,
                                 .n = args.n,
                                 .k = args.k,
                                 .label_smoothing = args.label_smoothing,
                                 .scale = args.grad_loss / static_cast<float>(args.n),
                                 .dlogits = static_cast<T*>(args.dlogits)});
  });
}

inline void soft_cross_entropy_forward(const SoftCrossEntropyForwardArgs& args, cudaStream_t stream,
                                       const RowLaunch& geometry) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    launch(soft_cross_entropy_forward_kernel<T>, row_grid(args.n, geometry),
           dim3(32, geometry.warps_per_block), 0, stream, args);
  });
  launch(loss_mean_kernel, dim3(1), dim3(kMeanThreads), 0, stream, args.sample_loss, args.n,
         args.loss);
}

inline void soft_cross_entropy_backward(const SoftCrossEntropyBackwardArgs& args,
                                        cudaStream_t stream, const RowLaunch& geometry) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    launch(soft_cross_entropy_backward_kernel<T>, row_grid(args.n, geometry),
           dim3(32, geometry.warps_per_block), 0, stream, args,
           args.grad_loss / static_cast<float>(args.n));
  });
}

inline void topk_correct(const TopkCorrectArgs& args, cudaStream_t stream,
                         const RowLaunch& geometry) {
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    launch(loss_zero_kernel, dim3(1), dim3(32), 0, stream, args.correct, 2);
    launch(topk_correct_kernel<T>, row_grid(args.n, geometry), dim3(32, geometry.warps_per_block),
           0, stream, static_cast<const T*>(args.logits), args.labels, args.n, args.k,
           args.correct);
  });
}

// With the default geometry.
void cross_entropy_forward(const CrossEntropyForwardArgs& args, cudaStream_t stream) {
  cross_entropy_forward(args, stream, RowLaunch{});
}
void cross_entropy_backward(const CrossEntropyBackwardArgs& args, cudaStream_t stream) {
  cross_entropy_backward(args, stream, RowLaunch{});
}
void soft_cross_entropy_forward(const SoftCrossEntropyForwardArgs& args, cudaStream_t stream) {
  soft_cross_entropy_forward(args, stream, RowLaunch{});
}
void soft_cross_entropy_backward(const SoftCrossEntropyBackwardArgs& args, cudaStream_t stream) {
  soft_cross_entropy_backward(args, stream, RowLaunch{});
}
void topk_correct(const TopkCorrectArgs& args, cudaStream_t stream) {
  topk_correct(args, stream, RowLaunch{});
}

}  // namespace engine::cuda
