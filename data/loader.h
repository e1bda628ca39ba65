// The prefetching loader: `workers` threads turn batches of dataset indices (from a sampler)
// into normalized NHWC batches ahead of the trainer, at most `prefetch_batches` ahead; next()
// hands them out in order. On a CUDA device the batches are built in pinned host memory and
// copied on the loader's own stream; the batch's `ready` event tells the compute stream when.
//
// Determinism: sample i of epoch e is augmented with SampleRandom(seed, e, i) (the crop's, the
// flip's, then any AutoAugment policy's and RandomErasing's draws), so batches are identical
// whatever the number of workers, and an epoch resumed at batch k continues exactly as the
// uninterrupted one would have.
//
// With mixing configured (LoaderConfig::mix, data/batch_mixing.h) the worker that built a batch
// mixes it, in host memory before the copy, and gives it soft targets; its draws come from
// BatchMixRandom(seed, mix_rank, epoch, batch index): the same at any worker count and resume.
//
// A synthetic dataset (ImageFolder::synthetic) has no files: each image is uniform [0, 1)
// values from (seed, index), the same in every epoch, with no transform.
//
// A shard dataset (ImageFolder::shards()) is read through a ShardReader (data/shard_reader.h):
// start_epoch tells it the epoch's remaining samples, so each shard is read front to back.
//
// Bad files never stop training: each is skipped with one warning (path and reason; once per
// path per BadFileLog) and counted. With refill_skipped (training) the batch takes the next
// readable sample of the epoch's order in its place and keeps its size; without (evaluation,
// where every sample counts once) it is delivered one sample short. Either way every rank sees
// the same number of batches.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "data/bad_file_log.h"
#include "data/batch_mixing.h"
#include "data/decode.h"
#include "data/image_folder.h"
#include "data/sampler.h"
#include "data/transform.h"
#include "kernels/device.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::data {

class SampleProcessor;
class ShardReader;

// min(hardware threads, 8), as the design's --workers default.
int default_worker_count();

struct LoaderConfig {
  int batch_size = 64;  // per rank
  bool drop_last = false;
  int workers = default_worker_count();
  int prefetch_batches = 0;  // 0: 2 * workers
  TransformConfig transform;
  DecodeLimits limits;
  DType dtype = DType::f32;
  Device device = Device::cpu();
  uint64_t seed = 0;
  // Replace each skipped file by the next readable sample after the batch (see above).
  bool refill_skipped = false;
  // MixUp / CutMix of each batch (off unless mix.enabled()); mix_rank keys its draws, as the
  // rank's own generator in timm.
  MixConfig mix;
  uint64_t mix_rank = 0;
  // Where skipped files are recorded and warned about. Loaders that share one (bench_data runs
  // several over one folder) name each bad file once between them. Null: the loader's own.
  std::shared_ptr<BadFileLog> bad_files;
};

struct Batch {
  int64_t batch_index = 0;       // position in the epoch
  Tensor images;                 // [n, size, size, 3] on the configured device
  std::vector<int32_t> labels;   // n class indices
  std::vector<int64_t> indices;  // n dataset indices
  // With mixing: n x classes soft targets (rows sum to 1), labels staying each image's own
  // (the one weighted lambda); empty without.
  std::vector<float> targets;
  int64_t skipped = 0;  // files of this batch that could not be used
  // CUDA: `labels` (i32 [n]) and `targets` (f32 [n, classes], with mixing) on the device,
  // copied beside the images from pinned memory: a copy from pageable memory on the compute
  // stream may hold the host until the device has drained that stream. Undefined on the CPU.
  Tensor device_labels, device_targets;
  // CUDA: recorded after the copies; the compute stream waits on it before reading `images`,
  // `device_labels` or `device_targets`. Keep them alive until that work has finished: the
  // caching allocator does not track streams (kernels/caching_allocator.h), as with PyTorch's
  // record_stream. Null on the CPU.
  std::shared_ptr<Event> ready;
};

struct EpochSummary {
  int64_t epoch = 0;
  int64_t batches = 0;
  int64_t samples = 0;
  int64_t skipped = 0;
};

class Loader {
 public:
  // `dataset` must outlive the loader.
  Loader(const ImageFolder& dataset, LoaderConfig config);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Starts an epoch over this rank's `indices` (DistributedSampler / EvaluationSampler),
  // skipping the first `first_batch` batches (resume). Waits for unfinished work of the
  // previous epoch.
  void start_epoch(int64_t epoch, std::vector<int64_t> indices, int64_t first_batch = 0);
  // The next batch in order, or nullopt at the end of the epoch. Rethrows a worker's
  // engine::Error (anything other than a bad file).
  std::optional<Batch> next();

  int64_t batches_in_epoch() const;
  // Batches consumed so far this epoch, the first_batch of a resumed epoch included: the
  // sampler position a checkpoint stores.
  int64_t position() const;
  EpochSummary summary() const;
  const LoaderConfig& config() const { return config_; }

 private:
  struct Ready {
    Batch batch;
    std::exception_ptr error;
  };
  void worker_loop();
  Batch build_batch(int64_t batch_index, int64_t epoch, std::span<const int64_t> indices,
                    SampleProcessor& processor, std::vector<uint8_t>& file_bytes);
  // Mixes the host batch and sets its targets, when mixing is configured.
  void mix_batch(Batch& batch, int64_t epoch, std::vector<std::byte>& scratch) const;
  // The batch's images of a synthetic dataset: uniform [0, 1) values from (seed, index).
  void fill_synthetic(std::span<const int64_t> indices, std::byte* slots, Batch& batch) const;
  void copy_to_device(Batch& batch);
  // The k-th sample of the epoch's order after batch `batch_index` (wrapping); nullopt once
  // every sample has been offered.
  std::optional<int64_t> replacement_candidate(int64_t batch_index, int64_t k) const;

  // The bytes of sample `index` (its file, or its member of a shard) into `bytes`.
  void read_sample(int64_t index, const std::string& path, std::vector<uint8_t>& bytes);

  const ImageFolder& dataset_;
  std::unique_ptr<ShardReader> shard_reader_;  // for a shard dataset
  LoaderConfig config_;                        // config_.bad_files is never null
  std::optional<Stream> copy_stream_;
  // The pinned host buffers of each batch's copies, until their event.
  std::vector<std::pair<std::vector<Tensor>, std::shared_ptr<Event>>> copies_in_flight_;

  mutable std::mutex mutex_;
  std::condition_variable work_available_;
  std::condition_variable batch_ready_;
  std::unique_ptr<BatchSampler> batches_;
  int64_t epoch_ = 0;
  int64_t next_to_claim_ = 0;
  int64_t next_to_deliver_ = 0;
  int64_t in_flight_ = 0;
  bool stopping_ = false;
  std::map<int64_t, Ready> ready_;
  EpochSummary summary_;
  std::vector<std::jthread> workers_;
};

}  // namespace engine::data
