#include "collectives/buckets/grad_bucket_timing.h"

#include <algorithm>

namespace engine {

GradBucketTiming summarize_grad_bucket_timing(double backward_end_s,
                                              std::vector<BucketInterval> intervals,
                                              int64_t bytes) {
  GradBucketTiming timing;
  timing.backward_s = std::max(0.0, backward_end_s);
  timing.buckets = static_cast<int>(intervals.size());
  timing.bytes = bytes;
  timing.intervals = intervals;
  if (intervals.empty()) return timing;  // busy 0, exposed 0, hidden 1

  std::sort(intervals.begin(), intervals.end(),
            [](const BucketInterval& a, const BucketInterval& b) { return a.start_s < b.start_s; });
  double busy = 0, run_start = intervals[0].start_s, run_end = intervals[0].end_s;
  double last_end = intervals[0].end_s;
  for (const BucketInterval& interval : intervals) {
    const double end = std::max(interval.start_s, interval.end_s);
    last_end = std::max(last_end, end);
    if (interval.start_s > run_end) {
      busy += run_end - run_start;
      run_start = interval.start_s;
      run_end = end;
    } else {
      run_end = std::max(run_end, end);
    }
  }
  busy += run_end - run_start;
  timing.busy_s = busy;
  timing.exposed_s = std::max(0.0, last_end - backward_end_s);
  timing.hidden_fraction = busy > 0 ? std::clamp(1.0 - timing.exposed_s / busy, 0.0, 1.0) : 1.0;
  return timing;
}

}  // namespace engine
