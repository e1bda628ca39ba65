#include "data/loader.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "data/file_io.h"
#include "data/random.h"
#include "data/sample_processor.h"
#include "data/shard_reader.h"

namespace engine::data {

namespace {

// A fresh pageable batch is faulted in 4 KiB at a time as the workers write it (about 9,400
// faults for 64 f32 images of 224x224). Transparent huge pages cut that 512-fold where the
// kernel allows them; it is only a hint, so failure is ignored.
void advise_huge_pages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const auto address = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (address + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (address + bytes) & ~(kHugePage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace

int default_worker_count() {
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(cores, 1u, 8u));
}

Loader::Loader(const ImageFolder& dataset, LoaderConfig config)
    : dataset_(dataset), config_(std::move(config)) {
  ENGINE_REQUIRE(config_.batch_size > 0, "Loader: --batch-size must be positive, got " +
                                             std::to_string(config_.batch_size));
  ENGINE_REQUIRE(config_.workers > 0,
                 "Loader: --workers must be positive, got " + std::to_string(config_.workers));
  ENGINE_REQUIRE(is_float_dtype(config_.dtype), "Loader: --dtype must be f32 or bf16, got " +
                                                    std::string(dtype_name(config_.dtype)));
  config_.mix.check();
  if (config_.prefetch_batches <= 0) config_.prefetch_batches = 2 * config_.workers;
  if (!config_.bad_files) config_.bad_files = std::make_shared<BadFileLog>();
  if (config_.device.is_cuda()) copy_stream_.emplace(config_.device);
  if (dataset_.shards()) shard_reader_ = std::make_unique<ShardReader>(dataset_);
  for (int w = 0; w < config_.workers; ++w)
    workers_.emplace_back([this] { worker_loop(); });
}

Loader::~Loader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_available_.notify_all();
  workers_.clear();  // joins
  if (copy_stream_) copy_stream_->synchronize();
}

void Loader::start_epoch(int64_t epoch, std::vector<int64_t> indices, int64_t first_batch) {
  auto batches =
      std::make_unique<BatchSampler>(std::move(indices), config_.batch_size, config_.drop_last);
  ENGINE_REQUIRE(first_batch >= 0 && first_batch <= batches->size(),
                 "Loader: resume position " + std::to_string(first_batch) +
                     " is outside the epoch's " + std::to_string(batches->size()) + " batches");
  std::unique_lock lock(mutex_);
  // Stop claims of the old epoch and let the batches being built finish.
  next_to_claim_ = batches_ ? batches_->size() : 0;
  batch_ready_.wait(lock, [&] { return in_flight_ == 0; });
  ready_.clear();
  if (shard_reader_) {
    std::vector<int64_t> wanted;
    for (int64_t b = first_batch; b < batches->size(); ++b) {
      const std::span<const int64_t> batch = batches->batch(b);
      wanted.insert(wanted.end(), batch.begin(), batch.end());
    }
    shard_reader_->begin_epoch(wanted);
  }
  batches_ = std::move(batches);
  epoch_ = epoch;
  next_to_claim_ = next_to_deliver_ = first_batch;
  summary_ = EpochSummary{epoch, 0, 0, 0};
  lock.unlock();
  work_available_.notify_all();
}

int64_t Loader::batches_in_epoch() const {
  std::lock_guard lock(mutex_);
  return batches_ ? batches_->size() : 0;
}

int64_t Loader::position() const {
  std::lock_guard lock(mutex_);
  return next_to_deliver_;
}

EpochSummary Loader::summary() const {
  std::lock_guard lock(mutex_);
  return summary_;
}

void Loader::worker_loop() {
  SampleProcessor processor(config_.transform, config_.limits);
  std::vector<uint8_t> file_bytes;
  std::vector<std::byte> mix_scratch;
  std::unique_lock lock(mutex_);
  while (true) {
    work_available_.wait(lock, [&] {
      return stopping_ || (batches_ && next_to_claim_ < batches_->size() &&
                           next_to_claim_ < next_to_deliver_ + config_.prefetch_batches);
    });
    if (stopping_) return;
    const int64_t batch_index = next_to_claim_++;
    const int64_t epoch = epoch_;
    const std::span<const int64_t> indices = batches_->batch(batch_index);
    ++in_flight_;
    lock.unlock();
    Ready ready;
    try {
      ready.batch = build_batch(batch_index, epoch, indices, processor, file_bytes);
      mix_batch(ready.batch, epoch, mix_scratch);
    } catch (...) {
      ready.error = std::current_exception();
    }
    lock.lock();
    --in_flight_;
    ready_.emplace(batch_index, std::move(ready));
    batch_ready_.notify_all();
  }
}

Batch Loader::build_batch(int64_t batch_index, int64_t epoch, std::span<const int64_t> indices,
                          SampleProcessor& processor, std::vector<uint8_t>& file_bytes) {
  const int size = config_.transform.output_size;
  const auto count = static_cast<int64_t>(indices.size());
  // Pinned when the batch goes on to a device (the constructor made copy_stream_ for that, and
  // fails without a usable one): the copy is then asynchronous.
  const HostMemory memory = copy_stream_ ? HostMemory::pinned : HostMemory::pageable;
  Batch batch;
  batch.batch_index = batch_index;
  batch.images = Tensor::empty({count, size, size, 3}, config_.dtype, Device::cpu(), memory);
  if (memory == HostMemory::pageable)
    advise_huge_pages(batch.images.raw_data(), batch.images.nbytes());
  const size_t sample_bytes =
      static_cast<size_t>(processor.values_per_sample()) * dtype_size(config_.dtype);
  auto* slots = static_cast<std::byte*>(batch.images.raw_data());
  if (dataset_.is_synthetic()) {
    fill_synthetic(indices, slots, batch);
    return batch;
  }
  int64_t filled = 0;
  for (const int64_t index : indices) {
    const auto sample = static_cast<size_t>(index);
    const std::string path = dataset_.path(sample);
    const bool used = config_.bad_files->use_or_skip(path, [&] {
      read_sample(index, path, file_bytes);
      SampleRandom random(config_.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index));
      processor.process(file_bytes, random, config_.dtype, slots + filled * sample_bytes);
    });
    if (!used) {
      ++batch.skipped;
      continue;
    }
    batch.labels.push_back(dataset_.label(sample));
    batch.indices.push_back(index);
    ++filled;
  }
  // Training keeps its batch size: each skipped file is replaced by the next readable sample
  // of this epoch's order after the batch (so a batch never shrinks to one sample, which
  // BatchNorm cannot train on, and every rank keeps the same batch shape).
  for (int64_t k = 0; config_.refill_skipped && filled < count; ++k) {
    const std::optional<int64_t> index = replacement_candidate(batch_index, k);
    if (!index) {
      throw Error("every image of this rank's epoch " + std::to_string(epoch) + " is unreadable (" +
                  dataset_.root() + ")");
    }
    const auto sample = static_cast<size_t>(*index);
    const std::string path = dataset_.path(sample);
    const bool used = config_.bad_files->use_or_skip(path, [&] {
      read_sample(*index, path, file_bytes);
      SampleRandom random(config_.seed, static_cast<uint64_t>(epoch),
                          static_cast<uint64_t>(*index));
      processor.process(file_bytes, random, config_.dtype, slots + filled * sample_bytes);
    });
    if (!used) continue;
    batch.labels.push_back(dataset_.label(sample));
    batch.indices.push_back(*index);
    ++filled;
  }
  if (filled < count) {
    // Rare: copy the good samples into a tensor of the right size rather than hand out a
    // batch whose tail is garbage.
    Tensor shorter = Tensor::empty({filled, size, size, 3}, config_.dtype, Device::cpu(), memory);
    std::memcpy(shorter.raw_data(), batch.images.raw_data(), filled * sample_bytes);
    batch.images = shorter;
  }
  return batch;
}

void Loader::read_sample(int64_t index, const std::string& path, std::vector<uint8_t>& bytes) {
  if (shard_reader_) {
    shard_reader_->read(index, bytes);
  } else {
    read_file(path, bytes);
  }
}

void Loader::mix_batch(Batch& batch, int64_t epoch, std::vector<std::byte>& scratch) const {
  const MixConfig& mix = config_.mix;
  if (!mix.enabled()) return;
  const int size = config_.transform.output_size;
  const auto n = static_cast<int64_t>(batch.labels.size());
  const bool mixing = mix.off_epoch == 0 || epoch < mix.off_epoch;
  BatchMixRandom random(config_.seed, config_.mix_rank, static_cast<uint64_t>(epoch),
                        static_cast<uint64_t>(batch.batch_index));
  const MixPlan plan = plan_mix(mix, n, size, size, mixing, random);
  apply_mix(plan, batch.images.raw_data(), config_.dtype, size, size, scratch);
  batch.targets = mixed_targets(plan, batch.labels, static_cast<int64_t>(dataset_.classes().size()),
                                mix.label_smoothing);
}

void Loader::fill_synthetic(std::span<const int64_t> indices, std::byte* slots,
                            Batch& batch) const {
  const int64_t values = int64_t{config_.transform.output_size} * config_.transform.output_size * 3;
  dispatch_dtype(config_.dtype, [&]<typename T>() {
    T* out = reinterpret_cast<T*>(slots);
    for (const int64_t index : indices) {
      // The same image for an index in every epoch, as FakeData's; 24 random bits per value.
      SampleRandom random(config_.seed, 0, static_cast<uint64_t>(index));
      for (int64_t v = 0; v < values; ++v, ++out)
        *out = from_float<T>(static_cast<float>(random.next_u64() >> 40) * 0x1p-24f);
      batch.labels.push_back(dataset_.label(static_cast<size_t>(index)));
      batch.indices.push_back(index);
    }
  });
}

std::optional<int64_t> Loader::replacement_candidate(int64_t batch_index, int64_t k) const {
  // The epoch's samples after this batch, wrapping around, each tried once.
  const int64_t batches = batches_->size();
  for (int64_t b = 1; b <= batches; ++b) {
    const std::span<const int64_t> indices = batches_->batch((batch_index + b) % batches);
    if (k < static_cast<int64_t>(indices.size())) return indices[static_cast<size_t>(k)];
    k -= static_cast<int64_t>(indices.size());
  }
  return std::nullopt;
}

void Loader::copy_to_device(Batch& batch) {
  // Pinned buffers go back to the allocator only once their copy has finished.
  std::erase_if(copies_in_flight_, [](const auto& copy) { return copy.second->done(); });
  std::vector<Tensor> hosts = {batch.images};
  batch.images = hosts.back().to(config_.device, *copy_stream_);
  const auto n = static_cast<int64_t>(batch.labels.size());
  hosts.push_back(Tensor::empty({n}, DType::i32, Device::cpu(), HostMemory::pinned));
  std::copy(batch.labels.begin(), batch.labels.end(), hosts.back().data<int32_t>());
  batch.device_labels = hosts.back().to(config_.device, *copy_stream_);
  if (!batch.targets.empty() && n > 0) {
    const auto classes = static_cast<int64_t>(batch.targets.size()) / n;
    hosts.push_back(Tensor::empty({n, classes}, DType::f32, Device::cpu(), HostMemory::pinned));
    std::copy(batch.targets.begin(), batch.targets.end(), hosts.back().data<float>());
    batch.device_targets = hosts.back().to(config_.device, *copy_stream_);
  }
  batch.ready = std::make_shared<Event>(config_.device);
  batch.ready->record(*copy_stream_);
  copies_in_flight_.emplace_back(std::move(hosts), batch.ready);
}

std::optional<Batch> Loader::next() {
  std::unique_lock lock(mutex_);
  ENGINE_REQUIRE(batches_ != nullptr, "Loader::next: call start_epoch first");
  if (next_to_deliver_ >= batches_->size()) return std::nullopt;
  const int64_t wanted = next_to_deliver_;
  batch_ready_.wait(lock, [&] { return ready_.count(wanted) > 0; });
  Ready ready = std::move(ready_.at(wanted));
  ready_.erase(wanted);
  ++next_to_deliver_;
  if (!ready.error) {
    summary_.batches += 1;
    summary_.samples += static_cast<int64_t>(ready.batch.labels.size());
    summary_.skipped += ready.batch.skipped;
  }
  lock.unlock();
  work_available_.notify_all();
  if (ready.error) std::rethrow_exception(ready.error);
  if (copy_stream_) copy_to_device(ready.batch);
  return std::move(ready.batch);
}

}  // namespace engine::data
