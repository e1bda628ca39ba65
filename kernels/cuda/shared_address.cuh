// A shared-memory address as ldmatrix and cp.async take it: 32 bits in the shared window on a
// GPU (made once, outside a kernel's loops, and stepped by byte offsets), a plain pointer in the
// emulator. Only for a kernel's own registers: the type differs between nvcc's two passes.
#pragma once

#include <cstdint>

namespace engine::cuda {

#if defined(__CUDA_ARCH__)
using SharedAddress = uint32_t;
__device__ __forceinline__ SharedAddress shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
#else
using SharedAddress = const char*;
__device__ __forceinline__ SharedAddress shared_address(const void* p) {
  return static_cast<const char*>(p);
}
#endif

}  // namespace engine::cuda
