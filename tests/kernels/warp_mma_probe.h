// Launchers of warp_matrix_kernels.cuh's probes (ldmatrix, mma.sync bf16 and tf32, tf32 rounding,
// cp.async) on a CUDA device
// (warp_mma_probe.cu: nvcc for a GPU, g++ with the kernel prelude for the sim device), for
// test_warp_mma_gpu.cpp. The pointers are device memory on `stream`'s device; sizes as the kernels
// say.
#pragma once

#include "kernels/stream.h"

namespace engine::testing {

void launch_ldmatrix_probe(bool transpose, const float* matrices, float* out, Stream& stream);
void launch_mma_probe(const float* a, const float* b, const float* c, float* d, Stream& stream);
void launch_mma_tf32_probe(const float* a, const float* b, const float* c, float* d,
                           Stream& stream);
void launch_tf32_round_probe(const float* in, float* out, int n, Stream& stream);
void launch_async_copy_probe(const float* src, float* out, Stream& stream);
// warp_tile_probe_kernel: 32 ints, each lane's registers where the warp-tile wrappers differ
// from their instructions one by one.
void launch_warp_tile_probe(int* mismatches, Stream& stream);

}  // namespace engine::testing
