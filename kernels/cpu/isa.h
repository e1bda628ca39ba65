// Which vector instruction set the CPU kernels use. The library is built for baseline x86-64
// so that one binary runs anywhere; the hot loops (GEMM, BatchNorm) also have AVX-512 versions
// that are chosen at run time when the CPU has AVX-512F.
#pragma once

namespace engine::cpu {

// The CPU supports AVX-512F.
bool cpu_has_avx512();

// Whether the CPU ops take their AVX-512 paths: cpu_has_avx512(), unless the portable loops
// are forced (tests use that to check both paths on one machine).
bool use_avx512();

// Forces (or stops forcing) the portable loops. Not thread-safe: call between ops.
void force_portable_kernels(bool on);

}  // namespace engine::cpu
