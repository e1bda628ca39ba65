// Which sanitizer the emulator library is built for, and the annotations it makes.
//
// The library's own sources are compiled WITHOUT ThreadSanitizer instrumentation even in the
// TSan variant (CMakeLists.txt): its scheduler state is touched by every fiber of a block, and
// the fibers are switched with the "no sync" flag, so instrumented scheduler code would report
// itself. SIMT_TSAN tells these sources to make the TSan annotations anyway.
#pragma once

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SIMT_HAS_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define SIMT_HAS_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(SIMT_TSAN)
#undef SIMT_HAS_TSAN
#define SIMT_HAS_TSAN 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#undef SIMT_HAS_ASAN
#define SIMT_HAS_ASAN 1
#endif

#if SIMT_HAS_TSAN
#include <sanitizer/tsan_interface.h>
// Happens-before edges for ThreadSanitizer: release on arrival, acquire on departure.
#define SIMT_TSAN_RELEASE(address) \
  __tsan_release(const_cast<void*>(static_cast<const void*>(address)))
#define SIMT_TSAN_ACQUIRE(address) \
  __tsan_acquire(const_cast<void*>(static_cast<const void*>(address)))
// The emulator's own data movement (a warp collective's results) is invisible to TSan: like a
// hardware operation, only the barrier around it orders memory.
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#define SIMT_TSAN_IGNORE_BEGIN() __tsan_ignore_thread_begin()
#define SIMT_TSAN_IGNORE_END() __tsan_ignore_thread_end()
// Synchronization the calling thread does in between (mutexes, condition variables, atomics,
// __tsan_acquire/__tsan_release, joins) orders nothing for TSan: for locks that only guard the
// emulator's own bookkeeping, which would otherwise order every thread that takes them.
extern "C" void AnnotateIgnoreSyncBegin(const char* file, int line);
extern "C" void AnnotateIgnoreSyncEnd(const char* file, int line);
#define SIMT_TSAN_IGNORE_SYNC_BEGIN() AnnotateIgnoreSyncBegin(__FILE__, __LINE__)
#define SIMT_TSAN_IGNORE_SYNC_END() AnnotateIgnoreSyncEnd(__FILE__, __LINE__)
#else
#define SIMT_TSAN_IGNORE_BEGIN() static_cast<void>(0)
#define SIMT_TSAN_IGNORE_END() static_cast<void>(0)
#define SIMT_TSAN_RELEASE(address) static_cast<void>(address)
#define SIMT_TSAN_ACQUIRE(address) static_cast<void>(address)
#define SIMT_TSAN_IGNORE_SYNC_BEGIN() static_cast<void>(0)
#define SIMT_TSAN_IGNORE_SYNC_END() static_cast<void>(0)
#endif

namespace simt::detail {

// A lock_guard whose lock and unlock are invisible to TSan (nothing in the plain build): two
// threads that take it are not ordered by it. For mutexes that protect only state TSan does
// not see (uninstrumented code, or accesses ignored as well), so that taking them cannot hide
// a race between the threads' other memory, such as two streams' kernels.
template <typename Mutex>
class UnorderedLockGuard {
 public:
  explicit UnorderedLockGuard(Mutex& mutex) : mutex_(mutex) {
    SIMT_TSAN_IGNORE_SYNC_BEGIN();
    mutex_.lock();
    SIMT_TSAN_IGNORE_SYNC_END();
  }
  ~UnorderedLockGuard() {
    SIMT_TSAN_IGNORE_SYNC_BEGIN();
    mutex_.unlock();
    SIMT_TSAN_IGNORE_SYNC_END();
  }
  UnorderedLockGuard(const UnorderedLockGuard&) = delete;
  UnorderedLockGuard& operator=(const UnorderedLockGuard&) = delete;

 private:
  Mutex& mutex_;
};

}  // namespace simt::detail

#if SIMT_HAS_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define SIMT_NO_ASAN __attribute__((no_sanitize_address))
#else
#define SIMT_NO_ASAN
#endif
