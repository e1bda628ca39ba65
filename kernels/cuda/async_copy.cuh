// cp.async (sm_80 and later): copies from global into shared memory that skip the registers,
// so a GEMM can keep several K tiles in flight while its tensor cores work on another, with
// no registers held for them. A thread's copies form commit groups; cp_async_wait<N>() returns
// once all but its newest N groups have landed, and a barrier after it makes them visible to
// the other threads. Under nvcc these are the PTX instructions; under the SIMT emulator its
// emulations (sim/simt/async_copy.h), which land each copy as late as PTX allows.
#pragma once

#include "kernels/cuda/shared_address.cuh"

namespace engine::cuda {

// 16 bytes from src (16-byte aligned, global memory) to dst (16-byte aligned, shared), or 16
// zero bytes when !copy: src is then not read, though it must still be a valid address.
// Cached in L2 only (.cg): a tile is read once per block.
__device__ __forceinline__ void cp_async_16(SharedAddress dst, const void* src, bool copy) {
#if defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ >= 800, "cp.async needs sm_80 or later");
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(copy ? 16 : 0));
#elif defined(SIMT_EMULATOR)
  simt::cp_async(const_cast<char*>(dst), src, 16, copy ? 16 : 0);
#else
  (void)dst;
  (void)src;
  (void)copy;
#endif
}

// Closes this thread's open group of copies (an empty group is fine).
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#elif defined(SIMT_EMULATOR)
  simt::cp_async_commit_group();
#endif
}

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#elif defined(SIMT_EMULATOR)
  simt::cp_async_wait_group(kPending);
#endif
}

}  // namespace engine::cuda
