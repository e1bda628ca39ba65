// A kernel that reads back what cp.async (kernels/cuda/async_copy.cuh) lands where, for
// checking against PTX's rules (async_copy_checks.h): under the SIMT emulator
// (tests/simt/test_async_copy.cpp) and on a CUDA device, real or the sim device
// (test_warp_mma_gpu.cpp through warp_mma_probe.cu). Include after the SIMT prelude or under
// nvcc, in one translation unit per binary.
#pragma once

#include "kernels/cuda/async_copy.cuh"

namespace engine::testing {

constexpr int kAsyncCopyProbeThreads = 64;

// One block of kAsyncCopyProbeThreads. src: per thread two 16-byte chunks of 4 floats, thread
// t's chunk c at src[(2t + c) * 4]. Each thread copies its two by cp.async into shared memory
// (prefilled with -1), one commit group each, zero-filled for every third thread; after
// waiting for all but the newest group and a barrier it reads its neighbour's (t + 1) first
// chunk, after waiting for all its second: out has src's layout, holding the neighbour's.
__global__ void async_copy_probe_kernel(const float* src, float* out) {
  __shared__ __align__(16) float chunks[2][kAsyncCopyProbeThreads][4];
  const int t = static_cast<int>(threadIdx.x);
  for (int c = 0; c < 2; ++c)
    for (int e = 0; e < 4; ++e)
      chunks[c][t][e] = -1.f;
  __syncthreads();
  const bool copy = t % 3 != 0;
  for (int c = 0; c < 2; ++c) {
    engine::cuda::cp_async_16(engine::cuda::shared_address(&chunks[c][t][0]), src + (2 * t + c) * 4,
                              copy);
    engine::cuda::cp_async_commit();
  }
  const int neighbour = (t + 1) % kAsyncCopyProbeThreads;
  engine::cuda::cp_async_wait<1>();  // the first group: chunk 0
  __syncthreads();
  for (int e = 0; e < 4; ++e)
    out[(2 * t) * 4 + e] = chunks[0][neighbour][e];
  engine::cuda::cp_async_wait<0>();
  __syncthreads();
  for (int e = 0; e < 4; ++e)
    out[(2 * t + 1) * 4 + e] = chunks[1][neighbour][e];
}

}  // namespace engine::testing
