// A block reduction through warp shuffles and static shared memory, adding each block's sum
// atomically to one total. Shared by the emulator's tests and the planted race (which removes
// the __syncthreads between the two stages, so warp 0 reads other warps' partial sums
// unsynchronized). Works for any block shape, including partial last warps.
#pragma once

#include "sim/simt/simt.h"

// Sums `value` over the lanes that exist in this warp (`lanes` of them, from lane 0 up).
__device__ inline int warp_sum(int value, unsigned lane, unsigned lanes) {
  const unsigned mask = __ballot_sync(0xffffffffu, 1);  // the lanes that exist
  for (unsigned offset = 16; offset > 0; offset /= 2) {
    const int other = __shfl_down_sync(mask, value, offset);
    if (lane + offset < lanes) value += other;  // sources beyond the warp are undefined
  }
  return value;
}

template <bool kPlantRace>
__global__ void block_sum_kernel(const int* in, unsigned n, unsigned long long* total) {
  __shared__ int warp_sums[32];
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned i = block * threads + tid;
  const unsigned lane = tid % 32, warp = tid / 32;
  const int sum = warp_sum(i < n ? in[i] : 0, lane, min(32u, threads - warp * 32));
  if (lane == 0) warp_sums[warp] = sum;
  if (!kPlantRace) __syncthreads();
  if (warp == 0) {
    const unsigned warps = (threads + 31) / 32;
    const int total_sum = warp_sum(lane < warps ? warp_sums[lane] : 0, lane, min(32u, threads));
    // Two's complement: adding a negative int as unsigned long long wraps correctly.
    if (lane == 0)
      atomicAdd(total, static_cast<unsigned long long>(static_cast<long long>(total_sum)));
  }
}
