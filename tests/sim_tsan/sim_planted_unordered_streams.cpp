// The planted bug for the sim device under ThreadSanitizer: a kernel on stream b reads what a
// kernel on stream a writes, with no event between them. CI passes when TSan reports a data
// race in the reading kernel and exits with its exit code (tests/simt/
// check_sanitizer_report.cmake), and fails when the same check accepts the build without TSan
// (sim_planted_unordered_streams_blind); with the wait, sim_tsan_test stays silent. The gate
// makes b read after a has written, in real time: the values even come out right, and only
// the missing edge is wrong. Not a GoogleTest: TSan's report is the result.
#include "tests/sim_tsan/stream_kernels.h"

#include <cstdio>

#include "tests/simt/planted_bug_cli.h"

int main(int argc, char** argv) {
  if (const int code = simt::planted_bug_cli(
          argc, argv, "two streams' kernels with no wait between them, for ThreadSanitizer");
      code >= 0)
    return code;
  constexpr int n = 256;
  cudaStream_t a = nullptr, b = nullptr;
  float *written = nullptr, *doubled = nullptr;
  if (cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking) != cudaSuccess ||
      cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&written), n * sizeof(float)) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&doubled), n * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "sim device setup failed\n");
    return 1;
  }
  {
    sim_tsan::Gate gate;
    gate.hold(b);
    engine::cuda::launch(sim_tsan::write_ramp_kernel, sim_tsan::blocks_for(n),
                         dim3(sim_tsan::kThreads), 0, a, written, 1.f, n);
    gate.open_after(a);
    // The bug: no cudaEventRecord(a) + cudaStreamWaitEvent(b) here.
    engine::cuda::launch(sim_tsan::read_double_kernel, sim_tsan::blocks_for(n),
                         dim3(sim_tsan::kThreads), 0, b, written, doubled, n);
    cudaStreamSynchronize(a);
    cudaStreamSynchronize(b);
  }
  std::printf("doubled[%d] = %g (2 * %d expected; right by luck of timing)\n", n - 1,
              doubled[n - 1], n);
  cudaFree(written);
  cudaFree(doubled);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  return 0;
}
