// What one synced backward spent on gradient communication, and how much of it backward hid.
// All times are seconds since begin() (backward's start).
//
//   busy    = the union of the buckets' [start, end] intervals: time some all-reduce was
//             running (the buckets run one after another, so this is also their sum unless
//             the clocks overlap them by a few microseconds);
//   exposed = last bucket's end - backward's end, at least 0: what the step waits for after
//             backward;
//   hidden  = 1 - exposed / busy, clamped to [0, 1]; 1 when nothing was communicated.
//
// What is measured, per rank (grad_buckets.cpp). CPU: a bucket's end is when its Work
// completed, noted by a watcher thread (plus one wake-up); its start is inferred as the later
// of its submission and the previous bucket's end, since the communicator runs collectives
// one at a time in issue order (a collective issued by someone else in between, such as
// SyncBN's, counts as busy too). CUDA: timing events around each all-reduce on the
// communication stream. Either way a bucket's interval includes the time its all-reduce waits
// for slower ranks to reach it, so busy time on one rank is not pure transfer time.
#pragma once

#include <cstdint>
#include <vector>

namespace engine {

struct BucketInterval {
  double start_s = 0;
  double end_s = 0;
};

struct GradBucketTiming {
  double backward_s = 0;  // begin() .. finish() called
  double busy_s = 0;
  double exposed_s = 0;
  double hidden_fraction = 1;
  int buckets = 0;                        // all-reduced this step (0 in a world of one)
  int64_t bytes = 0;                      // all-reduced this step
  std::vector<BucketInterval> intervals;  // per bucket, in bucket order
  // false for a step whose all-reduces ran inside a CUDA graph's launch, which no event of ours
  // marks: then only buckets and bytes are known, and the times and hidden_fraction are NaN.
  bool measured = true;
};

// The summary of one step from its raw times (intervals in any order).
GradBucketTiming summarize_grad_bucket_timing(double backward_end_s,
                                              std::vector<BucketInterval> intervals, int64_t bytes);

}  // namespace engine
