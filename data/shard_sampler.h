// Which samples of a shard dataset (data/shard_dataset.h) each rank reads, and in what order,
// so that reads stay sequential within a shard while every sample is seen once per epoch:
//
//   1. the shards in torch_randperm(shards, seed + epoch) order (webdataset's shardshuffle),
//      their samples in archive order, make the epoch's stream;
//   2. the stream is padded by wrapping around to a multiple of the world size, as
//      DistributedSampler pads, and rank r takes the r-th contiguous block of it: whole shards
//      in sequence, a partial one at each end; every rank gets the same count;
//   3. the block goes through a shuffle buffer of `shuffle_buffer` samples (webdataset's
//      .shuffle(n)): fill the buffer, then each step emit a random one of it and put the next
//      sample in its place. The draws come from SampleRandom keyed by (seed, epoch, rank).
//
// All of it is a function of (seed, epoch, world size, rank): the same seed gives the same
// batches, at any worker count, and a resumed epoch continues exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "data/shard_dataset.h"

namespace engine::data {

// webdataset's examples shuffle with a buffer of 1000 samples.
inline constexpr int64_t kDefaultShuffleBuffer = 1000;

class ShardSampler {
 public:
  ShardSampler(const ShardIndex& index, int world_size, int rank, bool shuffle = true,
               uint64_t seed = 0, int64_t shuffle_buffer = kDefaultShuffleBuffer);

  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  // Samples per rank per epoch, padding included: ceil(samples / world size).
  int64_t num_samples() const { return num_samples_; }
  // This rank's sample indices for the current epoch, in the order to train on them.
  std::vector<int64_t> indices() const;

 private:
  const ShardIndex& index_;
  int world_size_;
  int rank_;
  bool shuffle_;
  uint64_t seed_;
  int64_t shuffle_buffer_;
  int64_t epoch_ = 0;
  int64_t num_samples_ = 0;
};

// Validation over shards: rank r takes the r-th contiguous block of the samples in order
// (blocks differ by at most one sample, no padding), so each rank reads its shards front to
// back and every sample counts once.
std::vector<int64_t> shard_evaluation_indices(int64_t dataset_size, int world_size, int rank);

}  // namespace engine::data
