#include "collectives/buckets/grad_buckets.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <utility>

#include "kernels/error.h"

namespace engine {

GradBuckets::GradBuckets(Tensor flat_grads, std::vector<GradRange> ranges, Communicator& comm,
                         const GradBucketOptions& options)
    : flat_(std::move(flat_grads)), ranges_(std::move(ranges)), comm_(comm), options_(options) {
  if (!flat_.defined() || flat_.dim() != 1 || !is_float_dtype(flat_.dtype())) {
    fail("GradBuckets: the flat gradient buffer must be a 1-D float tensor, not " +
         (flat_.defined() ? flat_.describe() : std::string("an undefined tensor")));
  }
  if (communicates() && !comm_.supports(flat_.device())) {
    fail("GradBuckets: communicator " + comm_.name() + " does not take tensors on " +
         flat_.device().str() + ", where the gradients are");
  }
  buckets_ = plan_grad_buckets(ranges_, flat_.numel(), dtype_size(flat_.dtype()),
                               options_.first_bucket_bytes, options_.bucket_cap_bytes);
  bucket_of_range_.resize(ranges_.size());
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
    const GradBucket& bucket = buckets_[b];
    std::fill_n(bucket_of_range_.begin() + bucket.first_range, bucket.range_count, b);
  }
  reported_.assign(ranges_.size(), 0);
  if (flat_.device().is_cuda() && communicates()) {
    comm_stream_.emplace(flat_.device());
    for (size_t b = 0; b < buckets_.size(); ++b)
      ready_events_.emplace_back(flat_.device());
    for (CudaStepEvents& step : cuda_steps_) {
      for (size_t b = 0; b < buckets_.size(); ++b) {
        step.start.emplace_back(flat_.device(), /*timing=*/true);
        step.end.emplace_back(flat_.device(), /*timing=*/true);
      }
      step.begin.emplace(flat_.device(), true);
      step.backward_end.emplace(flat_.device(), true);
    }
  }
}

GradBuckets::~GradBuckets() {
  // The watcher drains itself (CPU); CUDA work must not outlive its events and stream.
  if (comm_stream_ && !works_.empty()) {
    try {
      comm_stream_->synchronize();
    } catch (...) {
      // The device is already failing; nothing more to release here.
    }
  }
}

double GradBuckets::seconds_since_begin(Clock::time_point t) const {
  return std::chrono::duration<double>(t - begin_time_).count();
}

void GradBuckets::begin(Stream& compute_stream, bool sync) {
  if (in_step_) {
    fail(
        "GradBuckets::begin: the previous step was not finished (call finish() after every "
        "backward, also after a failed one)");
  }
  captured_ = flat_.device().is_cuda() && compute_stream.capturing();
  if (captured_ && communicates() && !comm_.capturable()) {
    fail("GradBuckets::begin: the compute stream captures a CUDA graph, but communicator " +
         comm_.name() + " cannot be captured (nccl and ring-nccl can)");
  }
  if (on_cuda() && !captured_) {
    // This step records into the events of the step before last: read them first (waiting,
    // if it has not finished yet, so the host stays at most two steps ahead).
    current_events_ ^= 1;
    if (cuda_steps_[current_events_].pending) resolve_cuda_timing(cuda_steps_[current_events_]);
  }
  in_step_ = true;
  sync_ = sync;
  compute_ = &compute_stream;
  if (!sync_) return;
  std::fill(reported_.begin(), reported_.end(), 0);
  unreported_in_bucket_.resize(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b)
    unreported_in_bucket_[b] = buckets_[b].range_count;
  next_bucket_ = 0;
  submit_s_.assign(buckets_.size(), 0.0);
  works_.clear();
  begin_time_ = Clock::now();
  if (on_cuda() && !captured_) cuda_steps_[current_events_].begin->record(compute_stream);
}

void GradBuckets::mark_ready(int range) {
  if (!in_step_) fail("GradBuckets::mark_ready(" + std::to_string(range) + ") outside a step");
  if (!sync_) return;
  if (range < 0 || range >= static_cast<int>(ranges_.size())) {
    fail("GradBuckets::mark_ready: there is no range " + std::to_string(range) + " (there are " +
         std::to_string(ranges_.size()) + ")");
  }
  if (reported_[range]) {
    fail("GradBuckets: " + grad_range_label(ranges_, range) +
         " was reported ready twice in one backward");
  }
  reported_[range] = 1;
  const int bucket = bucket_of_range_[range];
  if (--unreported_in_bucket_[bucket] == 0 && options_.overlap && communicates()) {
    start_ready_buckets();
  }
}

bool GradBuckets::reported(int range) const {
  return range >= 0 && range < static_cast<int>(reported_.size()) && reported_[range];
}

void GradBuckets::start_ready_buckets() {
  while (next_bucket_ < static_cast<int>(buckets_.size()) &&
         unreported_in_bucket_[next_bucket_] == 0) {
    start_bucket(next_bucket_++);
  }
}

void GradBuckets::start_bucket(int bucket) {
  const GradBucket& b = buckets_[bucket];
  Tensor view = flat_.view(b.offset, {b.numel});
  if (on_cuda()) {
    // The comm stream takes the bucket once the compute stream has produced it; the start
    // event is reached when both that and the previous bucket are done.
    ready_events_[bucket].record(*compute_);
    comm_stream_->wait(ready_events_[bucket]);
    CudaStepEvents& events = cuda_steps_[current_events_];
    if (!captured_) events.start[bucket].record(*comm_stream_);
    Work work = comm_.all_reduce_async(view, ReduceOp::avg, *comm_stream_);
    work.wait(*comm_stream_);
    if (!captured_) events.end[bucket].record(*comm_stream_);
    works_.push_back(std::move(work));
    return;
  }
  submit_s_[bucket] = seconds_since_begin(Clock::now());
  watcher_.watch(bucket, comm_.all_reduce_async(view, ReduceOp::avg, *compute_));
}

std::exception_ptr GradBuckets::wait_started_buckets(Stream& compute_stream) {
  if (on_cuda()) {
    std::exception_ptr error;
    for (Work& work : works_) {
      try {
        work.wait(compute_stream);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    if (captured_) return error;  // nothing ran; replayed() counts each launch
    CudaStepEvents& events = cuda_steps_[current_events_];
    events.started = works_.size();
    events.step = ++synced_steps_;
    events.pending = true;
    return error;
  }
  std::exception_ptr error;
  const std::vector<WorkWatcher::Completion> done = watcher_.wait_all(error);
  // The communicator runs collectives one at a time in issue order: a bucket's all-reduce
  // began when it was submitted or when the one before it ended, whichever was later.
  // Intervals are kept per bucket (index = bucket), as the timing reports them.
  std::vector<BucketInterval> intervals(done.size());
  double previous_end = 0;
  int64_t bytes = 0;
  for (const WorkWatcher::Completion& completion : done) {
    const double end = seconds_since_begin(completion.end);
    const double start = std::max(submit_s_[completion.tag], previous_end);
    intervals.at(completion.tag) = {start, std::max(start, end)};
    previous_end = end;
    bytes += buckets_[completion.tag].numel * static_cast<int64_t>(dtype_size(flat_.dtype()));
  }
  record_timing(summarize_grad_bucket_timing(backward_end_s_, std::move(intervals), bytes));
  return error;
}

void GradBuckets::finish(Stream& compute_stream) {
  if (!in_step_) fail("GradBuckets::finish without begin()");
  in_step_ = false;
  if (!sync_) return;
  backward_end_s_ = seconds_since_begin(Clock::now());
  if (!communicates()) {
    if (!captured_) record_timing(summarize_grad_bucket_timing(backward_end_s_, {}, 0));
    require_no_missing_ranges();
    return;
  }
  if (on_cuda() && !captured_) cuda_steps_[current_events_].backward_end->record(compute_stream);
  std::exception_ptr error;
  try {
    // Unreported ranges too: every rank issues every bucket, once, in bucket order.
    while (next_bucket_ < static_cast<int>(buckets_.size()))
      start_bucket(next_bucket_++);
  } catch (...) {
    error = std::current_exception();
  }
  std::exception_ptr wait_error = wait_started_buckets(compute_stream);
  if (!error) error = wait_error;
  if (error) std::rethrow_exception(error);
  require_no_missing_ranges();
}

void GradBuckets::replayed(bool sync) {
  if (in_step_) fail("GradBuckets::replayed: a step begun with begin() is still in progress");
  if (!sync) return;
  // The history stays in step order: the steps run before this launch go in first.
  resolve_pending_timings();
  if (!communicates()) {
    record_timing(summarize_grad_bucket_timing(0, {}, 0));
    return;
  }
  const double unknown = std::nan("");
  GradBucketTiming timing;
  timing.backward_s = timing.busy_s = timing.exposed_s = timing.hidden_fraction = unknown;
  timing.buckets = static_cast<int>(buckets_.size());
  timing.bytes = flat_.numel() * static_cast<int64_t>(dtype_size(flat_.dtype()));
  timing.measured = false;
  record_timing(std::move(timing));
}

void GradBuckets::require_no_missing_ranges() const {
  const int missing = static_cast<int>(std::count(reported_.begin(), reported_.end(), 0));
  if (missing == 0) return;
  std::string first;
  int listed = 0;
  for (int r = 0; r < static_cast<int>(reported_.size()) && listed < 3; ++r) {
    if (reported_[r]) continue;
    first += (listed++ ? ", " : "") + grad_range_label(ranges_, r);
  }
  fail("GradBuckets::finish: " + std::to_string(missing) + " of " + std::to_string(ranges_.size()) +
       " gradients were never reported ready in this backward (" + first +
       (missing > listed ? ", ..." : "") +
       "); their buckets were all-reduced anyway so the ranks stay in step, but a layer skipped "
       "its gradient hook");
}

void GradBuckets::record_timing(GradBucketTiming timing) const {
  timing_ = timing;
  history_.push_back(std::move(timing));
  if (history_.size() > kTimingHistory) history_.pop_front();
}

void GradBuckets::resolve_cuda_timing(CudaStepEvents& events) const {
  events.pending = false;
  if (events.started == 0) {
    record_timing(summarize_grad_bucket_timing(0, {}, 0));
    return;
  }
  events.end[events.started - 1].synchronize();
  events.backward_end->synchronize();
  const auto seconds = [&](const Event& e) {
    return static_cast<double>(Event::elapsed_ms(*events.begin, e)) / 1e3;
  };
  std::vector<BucketInterval> intervals;
  int64_t bytes = 0;
  for (size_t b = 0; b < events.started; ++b) {
    intervals.push_back({seconds(events.start[b]), seconds(events.end[b])});
    bytes += buckets_[b].numel * static_cast<int64_t>(dtype_size(flat_.dtype()));
  }
  record_timing(
      summarize_grad_bucket_timing(seconds(*events.backward_end), std::move(intervals), bytes));
}

void GradBuckets::resolve_pending_timings() const {
  // Oldest first, so the history stays in step order.
  std::array<CudaStepEvents*, 2> steps = {&cuda_steps_[0], &cuda_steps_[1]};
  if (steps[1]->step < steps[0]->step) std::swap(steps[0], steps[1]);
  for (CudaStepEvents* step : steps)
    if (step->pending) resolve_cuda_timing(*step);
}

const GradBucketTiming& GradBuckets::last_timing() const {
  resolve_pending_timings();
  return timing_;
}

std::vector<GradBucketTiming> GradBuckets::take_timings() {
  resolve_pending_timings();
  std::vector<GradBucketTiming> taken(std::make_move_iterator(history_.begin()),
                                      std::make_move_iterator(history_.end()));
  history_.clear();
  return taken;
}

}  // namespace engine
