#include "nn/data_parallel.h"

#include <algorithm>
#include <cmath>

#include "kernels/error.h"

namespace engine::nn {
namespace {

int64_t mib_to_bytes(double mib, const char* what) {
  if (!(mib > 0) || !std::isfinite(mib)) {
    fail(std::string("DataParallel: ") + what + " must be a positive number of MiB, not " +
         std::to_string(mib));
  }
  return std::max<int64_t>(1, std::llround(mib * 1024.0 * 1024.0));
}

// Counters are host int64 values and collectives move floats: each goes as three 22-bit
// pieces, every one exact in fp32 (and broadcast only copies them anyway).
constexpr int kCounterPieces = 3;
constexpr int kCounterPieceBits = 22;

std::vector<float> pack_counters(const std::vector<CounterInfo>& counters) {
  std::vector<float> packed;
  for (const CounterInfo& c : counters) {
    const auto bits = static_cast<uint64_t>(c.value);
    for (int p = 0; p < kCounterPieces; ++p)
      packed.push_back(
          static_cast<float>((bits >> (p * kCounterPieceBits)) & ((1u << kCounterPieceBits) - 1)));
  }
  return packed;
}

int64_t unpack_counter(const std::vector<float>& packed, size_t index) {
  uint64_t bits = 0;
  for (int p = 0; p < kCounterPieces; ++p)
    bits |= static_cast<uint64_t>(packed[index * kCounterPieces + p]) << (p * kCounterPieceBits);
  return static_cast<int64_t>(bits);
}

}  // namespace

std::vector<GradRange> grad_ranges(const ParameterSet& params) {
  if (!params.allocated()) fail("grad_ranges: the ParameterSet must be allocated first");
  std::vector<GradRange> ranges;
  for (const ParameterInfo& p : params.parameters())
    ranges.push_back({p.offset, p.numel(), p.name});
  std::sort(ranges.begin(), ranges.end(),
            [](const GradRange& a, const GradRange& b) { return a.offset < b.offset; });
  return ranges;
}

DataParallel::DataParallel(ParameterSet& params, Communicator& comm,
                           const DataParallelOptions& options)
    : params_(params), comm_(comm) {
  if (!params.allocated()) fail("DataParallel: the ParameterSet must be allocated first");
  std::vector<GradRange> ranges = grad_ranges(params);
  // Backward finishes gradients in offset order (nn/parameters.h): a parameter's range index
  // is its rank among the offsets.
  const std::vector<ParameterInfo>& infos = params.parameters();
  range_of_parameter_.assign(infos.size(), -1);
  for (size_t id = 0; id < infos.size(); ++id) {
    const auto at =
        std::lower_bound(ranges.begin(), ranges.end(), infos[id].offset,
                         [](const GradRange& r, int64_t offset) { return r.offset < offset; });
    range_of_parameter_[id] = static_cast<int>(at - ranges.begin());
  }
  GradBucketOptions bucket_options;
  bucket_options.first_bucket_bytes = mib_to_bytes(options.first_bucket_mb, "first_bucket_mb");
  bucket_options.bucket_cap_bytes = mib_to_bytes(options.bucket_cap_mb, "bucket_cap_mb");
  bucket_options.overlap = options.overlap;
  buckets_ =
      std::make_unique<GradBuckets>(params.flat_grads(), std::move(ranges), comm, bucket_options);
}

void DataParallel::broadcast_from_rank0(Stream& stream) {
  if (comm_.size() == 1) return;
  comm_.broadcast(params_.flat_values(), 0, stream);
  if (params_.flat_buffers().numel() > 0) comm_.broadcast(params_.flat_buffers(), 0, stream);
  std::vector<CounterInfo> counters = params_.counters();
  if (counters.empty()) return;
  const std::vector<float> packed = pack_counters(counters);
  Tensor tensor = Tensor::from_floats({static_cast<int64_t>(packed.size())}, packed, DType::f32)
                      .to(params_.device(), stream);
  comm_.broadcast(tensor, 0, stream);
  const std::vector<float> received = tensor.to_floats(stream);
  for (size_t i = 0; i < counters.size(); ++i)
    params_.counter(static_cast<CounterId>(i)) = unpack_counter(received, i);
}

void DataParallel::begin_backward(Pass& pass, bool sync) {
  buckets_->begin(pass.stream, sync);
  if (sync) {
    pass.on_grad_ready = [this](ParameterId id) { on_grad_ready(id); };
  } else {
    pass.on_grad_ready = {};  // no_sync: nothing at all happens per gradient
  }
}

void DataParallel::on_grad_ready(ParameterId id) {
  if (id < 0 || id >= static_cast<int>(range_of_parameter_.size())) {
    fail("DataParallel: the gradient hook reported parameter id " + std::to_string(id) +
         ", which is not one of the " + std::to_string(range_of_parameter_.size()) +
         " parameters of this ParameterSet");
  }
  const int range = range_of_parameter_[id];
  if (buckets_->reported(range)) {
    fail("DataParallel: parameter '" + params_.info(id).name + "' (id " + std::to_string(id) +
         ") was reported ready twice in one backward");
  }
  buckets_->mark_ready(range);
}

void DataParallel::end_backward(Stream& stream) {
  buckets_->finish(stream);
}

bool DataParallel::capturable() const {
  return comm_.size() == 1 || comm_.capturable();
}

void DataParallel::replayed_backward(Stream& stream, bool sync) {
  buckets_->replayed(sync);
  // SyncBN's all-reduces make a launch communicate even without sync.
  if (comm_.size() > 1) comm_.watch_queued(stream, "a CUDA graph's launch");
}

namespace {
CommTiming comm_timing(const GradBucketTiming& t, const std::vector<GradBucket>& buckets,
                       size_t grad_bytes) {
  CommTiming timing{t.backward_s, t.busy_s, t.exposed_s, t.hidden_fraction,
                    t.buckets,    t.bytes,  {},          t.measured};
  for (size_t b = 0; b < t.intervals.size() && b < buckets.size(); ++b) {
    timing.bucket_spans.push_back({t.intervals[b].start_s, t.intervals[b].end_s,
                                   buckets[b].numel * static_cast<int64_t>(grad_bytes)});
  }
  return timing;
}
}  // namespace

const CommTiming& DataParallel::last_timing() const {
  timing_ = comm_timing(buckets_->last_timing(), buckets_->buckets(),
                        dtype_size(params_.flat_grads().dtype()));
  return timing_;
}

std::vector<CommTiming> DataParallel::take_timings() {
  std::vector<CommTiming> timings;
  const size_t grad_bytes = dtype_size(params_.flat_grads().dtype());
  for (const GradBucketTiming& t : buckets_->take_timings())
    timings.push_back(comm_timing(t, buckets_->buckets(), grad_bytes));
  return timings;
}

int DataParallel::bucket_count() const {
  return static_cast<int>(buckets_->buckets().size());
}

int DataParallel::world_size() const {
  return comm_.size();
}

}  // namespace engine::nn
