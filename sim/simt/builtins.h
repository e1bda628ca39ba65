// The library's side of the built-in variables: the scheduler and the launcher update them.
// (Kernels see them through CUDA's device_launch_parameters.h, see cuda_keywords.h.)
#pragma once

#include <vector_types.h>

extern "C" {
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;
extern int warpSize;
}

namespace simt::detail {

inline void set_thread_index(const uint3& index) {
  threadIdx = index;
}

}  // namespace simt::detail
