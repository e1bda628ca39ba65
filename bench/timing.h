// Timing of a callable: one warm-up call, then repeats until min_seconds have passed (and at
// least min_reps ran); returns the median in microseconds. median_time_us reads the wall clock,
// with `sync` after each call so the clock sees finished work; median_stream_time_us reads a
// CUDA stream's work from timing events around batches of back-to-back calls.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "kernels/stream.h"

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

// The median time of the work `fn` queues on `stream`. On a CUDA stream, from timing events
// around back-to-back calls: the GPU's clock, without the host's launch and synchronize
// latency (tens of microseconds, most of a small kernel's time on a host clock). A sample is
// as many calls as make about kBatchedSampleUs (one call's time from a first timed call; 1 to
// kMaxCallsPerSample), so that the gap while the host issues the next launch is hidden behind
// the calls queued before it, as in a training step, and the median is per call. On the CPU
// stream, where ops run as they are called, from the wall clock.
constexpr double kBatchedSampleUs = 2000;
constexpr int kMaxCallsPerSample = 64;

template <typename Fn>
double median_stream_time_us(Fn&& fn, const Stream& stream, const TimingOptions& options = {}) {
  if (stream.device().is_cpu())
    return median_time_us(
        fn, [] {}, options);
  using Clock = std::chrono::steady_clock;
  Event start(stream.device(), /*timing=*/true), end(stream.device(), /*timing=*/true);
  fn();
  stream.synchronize();
  start.record(stream);
  fn();
  end.record(stream);
  end.synchronize();
  const double first_us = 1e3 * Event::elapsed_ms(start, end);
  const int calls =
      first_us >= kBatchedSampleUs
          ? 1
          : std::min(kMaxCallsPerSample,
                     1 + static_cast<int>(kBatchedSampleUs / std::max(first_us, 1.0)));
  std::vector<double> times;
  const auto first = Clock::now();
  while (static_cast<int>(times.size()) < options.min_reps ||
         std::chrono::duration<double>(Clock::now() - first).count() < options.min_seconds) {
    start.record(stream);
    for (int call = 0; call < calls; ++call)
      fn();
    end.record(stream);
    end.synchronize();
    times.push_back(1e3 * Event::elapsed_ms(start, end) / calls);
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
