// DataParallel: PyTorch's DistributedDataParallel for a ParameterSet. Each rank runs the same
// model on its own batch; during backward the gradients are all-reduced (averaged) over the
// ranks in buckets (collectives/buckets/grad_buckets.h) as soon as each bucket's gradients are
// final, so communication runs while backward computes the rest. After end_backward every rank
// holds the same averaged gradients and the optimizer step keeps the replicas identical.
//
//   DataParallel ddp(model.params(), comm, {.bucket_cap_mb = 25});
//   ddp.broadcast_from_rank0(stream);          // once: every replica starts from rank 0's
//   for each step:
//     model.params().zero_grad();
//     loss = model.forward(images, pass) ...;
//     ddp.begin_backward(pass);                 // sync=false for no_sync micro-batches
//     model.backward(dlogits, pass);
//     ddp.end_backward(stream);
//     sgd.step(lr, stream);
//
// The ParameterSet's layout (reverse registration order) is backward's order, so each
// parameter is one gradient range and the buckets fill from offset 0 upwards. With world size
// 1 nothing is communicated. The hook installed on the Pass refers to this object: the Pass
// must not run another backward with it after this object is gone.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/buckets/grad_buckets.h"
#include "collectives/communicator.h"
#include "kernels/stream.h"
#include "nn/layer.h"
#include "nn/parameters.h"

namespace engine::nn {

struct DataParallelOptions {
  double first_bucket_mb = 1.0;  // MiB, as PyTorch's first bucket
  double bucket_cap_mb = 25.0;   // --bucket-cap-mb (MiB, as PyTorch's bucket_cap_mb)
  bool overlap = true;           // false: every bucket all-reduced in finish() (benchmark baseline)
};

// One bucket's all-reduce in a synced step, in seconds since begin_backward() (the --trace
// timeline's comm lane).
struct BucketSpan {
  double start_s = 0, end_s = 0;
  int64_t bytes = 0;
};

struct CommTiming {            // one synced step
  double backward_s = 0;       // begin_backward() .. end_backward()
  double comm_busy_s = 0;      // time the buckets' all-reduces were running (union of intervals)
  double exposed_s = 0;        // end_backward() called .. last bucket done
  double hidden_fraction = 1;  // 1 - exposed/busy, in [0, 1]
  int buckets = 0;             // all-reduced this step (0 in a world of one)
  int64_t bytes = 0;           // all-reduced this step
  std::vector<BucketSpan> bucket_spans;  // per bucket, in bucket order
  // false when the step ran as a CUDA graph's launch: the times and hidden_fraction are NaN.
  bool measured = true;
};

// One gradient range per parameter, named, in offset order (backward's order): what
// DataParallel buckets, for tests and benchmarks that inspect the layout.
std::vector<GradRange> grad_ranges(const ParameterSet& params);

class DataParallel {
 public:
  // params must be allocated; comm and params outlive this.
  DataParallel(ParameterSet& params, Communicator& comm, const DataParallelOptions& options);
  // Every rank's parameters, BN buffers and counters become rank 0's (call once after init or
  // checkpoint load).
  void broadcast_from_rank0(Stream& stream);
  // Call before model.backward: installs pass.on_grad_ready. sync=false: no communication
  // (no_sync micro-batch; grads accumulate locally).
  void begin_backward(Pass& pass, bool sync = true);
  // Call after model.backward: waits for every bucket; the gradients are then averaged over
  // ranks.
  void end_backward(Stream& stream);
  // Whether backward with its all-reduces may be captured into a CUDA graph: a world of one,
  // or a communicator that can be captured (nccl, ring-nccl).
  bool capturable() const;
  // After each launch, on `stream`, of a CUDA graph captured from begin_backward .. backward ..
  // end_backward (on a capturing stream: the buckets' all-reduces and SyncBN's are in the
  // graph, started where backward reached them): the step's bookkeeping (its timing not
  // measured when it communicated), and the launch watched against the communicator's timeout.
  void replayed_backward(Stream& stream, bool sync);
  // The last synced step's timing (on a GPU: waits for that step's all-reduces).
  const CommTiming& last_timing() const;
  // Every synced step's timing since the previous call, oldest first; on a GPU waits only for
  // the last one's all-reduces (GradBuckets::take_timings), so a trainer that reads them
  // every few steps does not hold the host back in between.
  std::vector<CommTiming> take_timings();
  int bucket_count() const;
  int world_size() const;

 private:
  void on_grad_ready(ParameterId id);

  ParameterSet& params_;
  Communicator& comm_;
  std::vector<int> range_of_parameter_;  // ParameterId -> gradient range (offset order)
  std::unique_ptr<GradBuckets> buckets_;
  mutable CommTiming timing_;
};

}  // namespace engine::nn
