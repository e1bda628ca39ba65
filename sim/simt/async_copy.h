// PTX's asynchronous global -> shared copies, emulated: cp.async.{ca,cg}.shared.global with
// its src-size zero fill, cp.async.commit_group, cp.async.wait_group N and wait_all. Kernels
// reach them through kernels/cuda/async_copy.cuh, which issues the real instructions under nvcc.
//
// On a GPU a copy lands at some moment between its issue and the wait that covers it, and only
// the issuing thread's wait promises it has: other threads see it after a barrier that follows
// that wait. The emulator takes the latest legal moment: a copy is performed when its issuing
// thread waits for its group, by that thread. So a kernel that reads a stage before waiting
// for it reads what was there before (NaN, as shared memory starts here), one that refills a
// stage still being read overwrites it later than the readers expect, and a reader that skips
// the barrier after another thread's wait is a data race for ThreadSanitizer. A thread that
// returns with copies it never waited for fails the launch (scheduler.cpp).
#pragma once

#include <cstring>

#include "sim/simt/runtime.h"

namespace simt {

// `bytes` (4, 8 or 16; both addresses aligned to it) into shared memory at dst: the first
// src_bytes from src, the rest zeros. Joins the thread's open group.
inline void cp_async(void* dst, const void* src, unsigned bytes, unsigned src_bytes) {
  detail::async_copy_issue({dst, src, bytes, src_bytes});
}

inline void cp_async_commit_group() {
  detail::async_copy_commit();
}

// Completes every committed group of this thread but the newest `keep`.
inline void cp_async_wait_group(unsigned keep) {
  for (const detail::AsyncCopy& copy : detail::async_copy_due(keep)) {
    std::memcpy(copy.dst, copy.src, copy.src_bytes);
    std::memset(static_cast<char*>(copy.dst) + copy.src_bytes, 0, copy.bytes - copy.src_bytes);
  }
}

// Commits the open group and completes them all.
inline void cp_async_wait_all() {
  cp_async_commit_group();
  cp_async_wait_group(0);
}

}  // namespace simt
