#include "data/shard_sampler.h"

#include <numeric>
#include <string>

#include "data/random.h"
#include "data/sampler.h"
#include "kernels/error.h"

namespace engine::data {

namespace {

// Keeps the buffer's draws apart from the augmentations' SampleRandom(seed, epoch, index).
constexpr uint64_t kShuffleBufferSalt = 0x5348554646ULL;  // "SHUFF"

std::vector<int64_t> shuffle_through_buffer(const std::vector<int64_t>& stream, int64_t capacity,
                                            SampleRandom& random) {
  std::vector<int64_t> out, buffer;
  out.reserve(stream.size());
  buffer.reserve(static_cast<size_t>(capacity));
  for (const int64_t sample : stream) {
    if (static_cast<int64_t>(buffer.size()) < capacity) {
      buffer.push_back(sample);
      continue;
    }
    const auto k = static_cast<size_t>(random.randint(0, static_cast<int64_t>(buffer.size())));
    out.push_back(buffer[k]);
    buffer[k] = sample;
  }
  while (!buffer.empty()) {
    const auto k = static_cast<size_t>(random.randint(0, static_cast<int64_t>(buffer.size())));
    out.push_back(buffer[k]);
    buffer[k] = buffer.back();
    buffer.pop_back();
  }
  return out;
}

}  // namespace

ShardSampler::ShardSampler(const ShardIndex& index, int world_size, int rank, bool shuffle,
                           uint64_t seed, int64_t shuffle_buffer)
    : index_(index),
      world_size_(world_size),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      shuffle_buffer_(shuffle_buffer) {
  ENGINE_REQUIRE(world_size > 0 && rank >= 0 && rank < world_size,
                 "ShardSampler: rank " + std::to_string(rank) + " is outside world size " +
                     std::to_string(world_size));
  ENGINE_REQUIRE(shuffle_buffer >= 0,
                 "--shuffle-buffer must be 0 or more, got " + std::to_string(shuffle_buffer));
  const auto samples = static_cast<int64_t>(index.samples.size());
  num_samples_ = (samples + world_size - 1) / world_size;
}

std::vector<int64_t> ShardSampler::indices() const {
  const int64_t shards = index_.shard_count();
  std::vector<int64_t> order;
  if (shuffle_) {
    order = torch_randperm(shards, seed_ + static_cast<uint64_t>(epoch_));
  } else {
    order.resize(static_cast<size_t>(shards));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  const int64_t begin = num_samples_ * rank_, end = begin + num_samples_;
  // Walk the stream only as far as this rank's block; the padding wraps to its start.
  const auto total = static_cast<int64_t>(index_.samples.size());
  std::vector<int64_t> block;
  block.reserve(static_cast<size_t>(num_samples_));
  int64_t position = 0;
  for (int64_t pass = 0; position < end && total > 0; ++pass) {
    for (const int64_t shard : order) {
      const int64_t first = index_.shard_first_sample[static_cast<size_t>(shard)];
      const int64_t last = index_.shard_first_sample[static_cast<size_t>(shard) + 1];
      const int64_t from = std::max(first, first + begin - position);
      const int64_t to = std::min(last, first + end - position);
      for (int64_t sample = from; sample < to; ++sample)
        block.push_back(sample);
      position += last - first;
      if (position >= end) break;
    }
  }
  if (!shuffle_ || shuffle_buffer_ <= 1) return block;
  SampleRandom random(seed_ ^ kShuffleBufferSalt, static_cast<uint64_t>(epoch_),
                      static_cast<uint64_t>(rank_));
  return shuffle_through_buffer(block, shuffle_buffer_, random);
}

std::vector<int64_t> shard_evaluation_indices(int64_t dataset_size, int world_size, int rank) {
  ENGINE_REQUIRE(world_size > 0 && rank >= 0 && rank < world_size,
                 "shard_evaluation_indices: rank " + std::to_string(rank) +
                     " is outside world size " + std::to_string(world_size));
  const int64_t base = dataset_size / world_size, extra = dataset_size % world_size;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  const int64_t count = base + (rank < extra ? 1 : 0);
  std::vector<int64_t> mine(static_cast<size_t>(count));
  std::iota(mine.begin(), mine.end(), begin);
  return mine;
}

}  // namespace engine::data
