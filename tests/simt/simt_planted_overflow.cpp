// The planted bug for AddressSanitizer: a kernel writes one element past its dynamic shared
// memory. CI passes when ASan reports a heap-buffer-overflow in overflow_kernel and exits with
// its exit code (check_sanitizer_report.cmake), and fails when the same check accepts the build
// without ASan (simt_planted_overflow_blind).
#include <cstdio>

#include "sim/simt/simt.h"
#include "tests/simt/planted_bug_cli.h"

__global__ void overflow_kernel(unsigned n) {
  DYNAMIC_SHARED_MEMORY(float, values);
  values[threadIdx.x] = 1.0f;  // threads 0..n: thread n writes past the end
  (void)n;
}

int main(int argc, char** argv) {
  if (const int code = simt::planted_bug_cli(
          argc, argv, "a write past the dynamic shared memory, for AddressSanitizer to report");
      code >= 0)
    return code;
  const unsigned n = 64;
  simt::launch(overflow_kernel, dim3(1), dim3(n + 1), n * sizeof(float), nullptr, n);
  std::printf("no AddressSanitizer report: the overflow went unnoticed\n");
  return 0;
}
