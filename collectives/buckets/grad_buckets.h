// GradBuckets: the DDP reducer. Gradients live in one flat buffer; the buckets are contiguous
// ranges of it (grad_bucket_plan.h), so a bucket's all-reduce runs in place on a view and no
// gradient is copied. backward reports each finished gradient with mark_ready(range); when
// the last range of a bucket is in, the bucket's all-reduce (ReduceOp::avg: the average over
// ranks is fused into the ring's last reduction step) starts at once, while backward goes on.
//
// Every rank must issue the same collectives in the same order, so buckets start strictly in
// bucket order: a bucket whose ranges are all in waits until every bucket before it has
// started. Ranges may be reported in any order; the ParameterSet layout reports them in
// offset order, which starts each bucket as soon as possible.
//
// A step: begin(compute stream) -> mark_ready(...) per range -> finish(compute stream).
// finish() starts every bucket not yet started, waits for all and rethrows a communication
// error. A range never reported ready is an error, thrown by finish() only after every bucket
// was all-reduced anyway: the ranks keep issuing the same collectives, so a rank whose layer
// forgot its hook fails with a message instead of leaving its peers hanging.
//
// Devices. CPU: the all-reduces run on the communicator's worker thread (host_executor.h).
// CUDA: each bucket's all-reduce is queued on this reducer's communication stream after an
// event recorded on the compute stream when the bucket was ready, and finish() makes the
// compute stream wait on every bucket's Work without blocking the host. The CUDA path has
// not yet run on hardware (no GPU was available when it was written).
//
// CUDA graphs. A step between begin() and finish() on a capturing compute stream is recorded into
// the graph with its all-reduces (a capturable communicator's), untimed; each launch of the graph
// is then counted by replayed().
//
// A world of one communicates nothing: no collective is issued, the timing reports zero
// buckets and a hidden fraction of 1. begin(stream, false) (no_sync: a gradient-accumulation
// micro-batch) makes mark_ready and finish do nothing at all.
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <optional>
#include <vector>

#include "collectives/buckets/grad_bucket_plan.h"
#include "collectives/buckets/grad_bucket_timing.h"
#include "collectives/communicator.h"
#include "collectives/execution/work_watcher.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

struct GradBucketOptions {
  int64_t first_bucket_bytes = int64_t{1} << 20;  // PyTorch's _DEFAULT_FIRST_BUCKET_BYTES
  int64_t bucket_cap_bytes = int64_t{25} << 20;   // PyTorch's bucket_cap_mb = 25
  // false: no bucket starts before finish() (the no-overlap baseline of the benchmarks).
  bool overlap = true;
};

class GradBuckets {
 public:
  // flat_grads: a 1-D float tensor; ranges: its gradients sorted by offset. flat_grads'
  // storage and comm must outlive this.
  GradBuckets(Tensor flat_grads, std::vector<GradRange> ranges, Communicator& comm,
              const GradBucketOptions& options = {});
  // Waits for buckets still in flight (a step abandoned by an exception).
  ~GradBuckets();
  GradBuckets(const GradBuckets&) = delete;
  GradBuckets& operator=(const GradBuckets&) = delete;

  // Starts a step; compute_stream is the stream backward runs on and must outlive the step.
  void begin(Stream& compute_stream, bool sync = true);
  // The gradient of `range` is final (on CUDA: once the compute stream's work so far is done).
  void mark_ready(int range);
  // Whether `range` was reported in this step.
  bool reported(int range) const;
  // After backward: every bucket all-reduced (CUDA: ordered before later compute work).
  void finish(Stream& compute_stream);
  // A step whose backward and all-reduces ran as the launch of a CUDA graph captured from an
  // earlier begin() .. finish() (whose compute stream was capturing: nothing ran then, nor was
  // timed): counts it as a step, with a timing that is not measured when it communicated.
  void replayed(bool sync);
  bool in_step() const { return in_step_; }

  const std::vector<GradBucket>& buckets() const { return buckets_; }
  const std::vector<GradRange>& ranges() const { return ranges_; }
  int world_size() const { return comm_.size(); }
  // The last synced step. On CUDA the first read after a step waits for its last bucket.
  const GradBucketTiming& last_timing() const;
  // Every synced step's timing since the previous call, oldest first (at most the last
  // kTimingHistory); on CUDA this waits for the last step's buckets. Read every few steps,
  // it leaves the host free to queue steps ahead of the GPU (up to two: a step reuses the
  // events of the step before last, and reads them first), where last_timing() after every
  // step waits for each.
  std::vector<GradBucketTiming> take_timings();
  static constexpr size_t kTimingHistory = 1024;

 private:
  using Clock = std::chrono::steady_clock;
  bool communicates() const { return comm_.size() > 1; }
  bool on_cuda() const { return comm_stream_.has_value(); }
  double seconds_since_begin(Clock::time_point t) const;
  void start_ready_buckets();
  void start_bucket(int bucket);
  // Waits for every started bucket; the first communication error, or null.
  std::exception_ptr wait_started_buckets(Stream& compute_stream);
  // CUDA: one step's events, in two sets used in turn.
  struct CudaStepEvents {
    std::vector<Event> start, end;  // per bucket, on the comm stream
    std::optional<Event> begin, backward_end;
    size_t started = 0;    // buckets all-reduced in the step
    int64_t step = 0;      // which synced step recorded them (orders the two sets)
    bool pending = false;  // recorded, not yet read into the history
  };
  void record_timing(GradBucketTiming timing) const;
  void resolve_cuda_timing(CudaStepEvents& events) const;
  void resolve_pending_timings() const;
  void require_no_missing_ranges() const;

  Tensor flat_;
  std::vector<GradRange> ranges_;
  std::vector<GradBucket> buckets_;
  std::vector<int> bucket_of_range_;
  Communicator& comm_;
  GradBucketOptions options_;

  // The step in progress.
  bool in_step_ = false;
  bool sync_ = false;
  bool captured_ = false;  // recorded into a CUDA graph, not run
  Stream* compute_ = nullptr;
  std::vector<char> reported_;
  std::vector<int> unreported_in_bucket_;
  int next_bucket_ = 0;  // the first bucket not yet started
  Clock::time_point begin_time_;
  double backward_end_s_ = 0;
  std::vector<double> submit_s_;  // per bucket, CPU
  std::vector<Work> works_;       // per started bucket, CUDA
  WorkWatcher watcher_;           // CPU: when each bucket's all-reduce completed

  // CUDA only (untested on hardware).
  std::optional<Stream> comm_stream_;
  std::vector<Event> ready_events_;
  mutable std::array<CudaStepEvents, 2> cuda_steps_;
  int current_events_ = 0;  // the set this step records into
  int64_t synced_steps_ = 0;

  mutable GradBucketTiming timing_;               // the last step's
  mutable std::deque<GradBucketTiming> history_;  // since take_timings()
};

}  // namespace engine
