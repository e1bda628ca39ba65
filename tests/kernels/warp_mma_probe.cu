#include "tests/kernels/warp_mma_probe.h"

#include "kernels/cuda/launch.h"
#include "tests/kernels/async_copy_kernels.cuh"
#include "tests/kernels/warp_matrix_kernels.cuh"

namespace engine::testing {

void launch_ldmatrix_probe(bool transpose, const float* matrices, float* out, Stream& stream) {
  if (transpose) {
    cuda::launch(ldmatrix_probe_kernel<true>, dim3(1), dim3(32), 0, stream.native(), matrices, out);
  } else {
    cuda::launch(ldmatrix_probe_kernel<false>, dim3(1), dim3(32), 0, stream.native(), matrices,
                 out);
  }
}

void launch_mma_probe(const float* a, const float* b, const float* c, float* d, Stream& stream) {
  cuda::launch(mma_probe_kernel, dim3(1), dim3(32), 0, stream.native(), a, b, c, d);
}

void launch_mma_tf32_probe(const float* a, const float* b, const float* c, float* d,
                           Stream& stream) {
  cuda::launch(mma_tf32_probe_kernel, dim3(1), dim3(32), 0, stream.native(), a, b, c, d);
}

void launch_tf32_round_probe(const float* in, float* out, int n, Stream& stream) {
  cuda::launch(tf32_round_probe_kernel, dim3(1), dim3(32), 0, stream.native(), in, out, n);
}

void launch_async_copy_probe(const float* src, float* out, Stream& stream) {
  cuda::launch(async_copy_probe_kernel, dim3(1), dim3(kAsyncCopyProbeThreads), 0, stream.native(),
               src, out);
}

void launch_warp_tile_probe(int* mismatches, Stream& stream) {
  cuda::launch(warp_tile_probe_kernel, dim3(1), dim3(32), 0, stream.native(), mismatches);
}

}  // namespace engine::testing
