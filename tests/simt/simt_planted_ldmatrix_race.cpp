// The planted bug for ThreadSanitizer through a tensor-core load: warp 1 fills a shared tile
// that warp 0 reads with ldmatrix, with no __syncthreads between them. ldmatrix is emulated as
// one warp collective computed by the last lane to arrive (sim/simt/warp_matrix.h), but
// each lane reads its own row in the kernel's instrumented code first, so TSan must still see
// those reads race with warp 1's writes. CI passes when TSan reports a data race in the
// kernel and exits with its exit code (check_sanitizer_report.cmake), and fails when the same
// check accepts the build without TSan (simt_planted_ldmatrix_race_blind). The correct order,
// with its barrier, runs silent in simt_test_tsan's SimtWarpMatrix cases. Not a GoogleTest.
#include <cstdint>
#include <cstdio>

#include "sim/simt/simt.h"
#include "tests/simt/planted_bug_cli.h"

__global__ void ldmatrix_without_barrier_kernel(unsigned* out) {
  __shared__ __align__(16) uint16_t tile[32][8];  // four 8 x 8 matrices of bf16 bits
  const unsigned thread = threadIdx.x;
  if (thread >= 32) {  // warp 1 fills the tile: 8 elements of row thread - 32
    for (unsigned e = 0; e < 8; ++e)
      tile[thread - 32][e] = static_cast<uint16_t>(thread * 8 + e);
    return;
  }
  // (the missing __syncthreads)
  uint32_t r[4];
  simt::ldmatrix_x4(r, &tile[thread][0], /*transpose=*/false);
  out[thread] = r[0] ^ r[1] ^ r[2] ^ r[3];
}

int main(int argc, char** argv) {
  if (const int code = simt::planted_bug_cli(argc, argv,
                                             "an ldmatrix of a tile another warp writes without a "
                                             "barrier, for ThreadSanitizer to report");
      code >= 0)
    return code;
  unsigned out[32] = {};
  simt::launch(ldmatrix_without_barrier_kernel, dim3(1), dim3(64), 0, nullptr, out);
  std::printf("lane 0 read %08x without the barrier\n", out[0]);
  return 0;
}
