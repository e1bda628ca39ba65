// Wall-clock timing of a callable: one warm-up call, then repeats until min_seconds have
// passed (and at least min_reps ran); returns the median in microseconds. `sync` runs after
// each call (stream synchronize for GPU work) so the clock sees finished work.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace engine::bench {

struct TimingOptions {
  double min_seconds = 0.3;
  int min_reps = 3;
};

template <typename Fn, typename Sync>
double median_time_us(Fn&& fn, Sync&& sync, const TimingOptions& options = {}) {
  using Clock = std::chrono::steady_clock;
  fn();
  sync();
  std::vector<double> times;
  const auto start = Clock::now();
  while (static_cast<int>(times.size()) < options.min_reps ||
         std::chrono::duration<double>(Clock::now() - start).count() < options.min_seconds) {
    const auto t0 = Clock::now();
    fn();
    sync();
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

// Debian's OpenBLAS (the pthread build, linked for the portable GEMM) starts its worker
// threads when the program loads, and they spin for about 0.1 s before they sleep. On 2 cores
// that spinning took a core from our OpenMP threads, and whatever a benchmark timed first came
// out at multiples of the 4 ms scheduler tick (a 100 us GEMM read 16 ms). Benchmarks call this
// before they time anything.
inline void wait_for_startup_threads_to_sleep() {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

}  // namespace engine::bench
