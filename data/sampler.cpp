#include "data/sampler.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "kernels/error.h"

namespace engine::data {

namespace {

void check_ranks(const char* who, int64_t dataset_size, int world_size, int rank) {
  ENGINE_REQUIRE(dataset_size >= 0, std::string(who) + ": negative dataset size");
  ENGINE_REQUIRE(world_size > 0 && rank >= 0 && rank < world_size,
                 std::string(who) + ": rank " + std::to_string(rank) + " is outside world size " +
                     std::to_string(world_size));
}

}  // namespace

std::vector<int64_t> torch_randperm(int64_t n, uint64_t seed) {
  ENGINE_REQUIRE(n >= 0, "torch_randperm: negative n");
  // torch 1.13 draws 32-bit values, which stays exact for any dataset this engine will see;
  // newer torch versions switch to 64-bit draws only above n = 2^32 / 20.
  ENGINE_REQUIRE(n < (int64_t{1} << 32) / 20, "torch_randperm: n = " + std::to_string(n) +
                                                  " is beyond torch 1.13's 32-bit path");
  std::vector<int64_t> permutation(static_cast<size_t>(n));
  std::iota(permutation.begin(), permutation.end(), int64_t{0});
  std::mt19937 generator(static_cast<uint32_t>(seed));
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t z = static_cast<int64_t>(generator() % static_cast<uint64_t>(n - i));
    std::swap(permutation[i], permutation[i + z]);
  }
  return permutation;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, int world_size, int rank, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size),
      world_size_(world_size),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  check_ranks("DistributedSampler", dataset_size, world_size, rank);
  if (drop_last_ && dataset_size_ % world_size_ != 0) {
    num_samples_ = dataset_size_ / world_size_;  // ceil((n - W) / W) for n not a multiple of W
  } else {
    num_samples_ = (dataset_size_ + world_size_ - 1) / world_size_;
  }
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> all;
  if (shuffle_) {
    all = torch_randperm(dataset_size_, seed_ + static_cast<uint64_t>(epoch_));
  } else {
    all.resize(static_cast<size_t>(dataset_size_));
    std::iota(all.begin(), all.end(), int64_t{0});
  }
  const int64_t total = total_size();
  if (total > dataset_size_ && dataset_size_ > 0) {
    // Padding repeats the list from its start, as many times as needed.
    for (int64_t i = dataset_size_; i < total; ++i)
      all.push_back(all[i % dataset_size_]);
  }
  all.resize(static_cast<size_t>(total));
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (int64_t i = rank_; i < total; i += world_size_)
    mine.push_back(all[i]);
  return mine;
}

EvaluationSampler::EvaluationSampler(int64_t dataset_size, int world_size, int rank)
    : dataset_size_(dataset_size), world_size_(world_size), rank_(rank) {
  check_ranks("EvaluationSampler", dataset_size, world_size, rank);
}

int64_t EvaluationSampler::num_samples() const {
  return rank_ < dataset_size_ ? (dataset_size_ - rank_ + world_size_ - 1) / world_size_ : 0;
}

std::vector<int64_t> EvaluationSampler::indices() const {
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples()));
  for (int64_t i = rank_; i < dataset_size_; i += world_size_)
    mine.push_back(i);
  return mine;
}

BatchSampler::BatchSampler(std::vector<int64_t> indices, int batch_size, bool drop_last)
    : indices_(std::move(indices)), batch_size_(batch_size), drop_last_(drop_last) {
  ENGINE_REQUIRE(batch_size > 0,
                 "BatchSampler: batch size must be positive, got " + std::to_string(batch_size));
}

int64_t BatchSampler::size() const {
  const auto n = static_cast<int64_t>(indices_.size());
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

std::span<const int64_t> BatchSampler::batch(int64_t batch_index) const {
  ENGINE_REQUIRE(batch_index >= 0 && batch_index < size(),
                 "BatchSampler: batch " + std::to_string(batch_index) + " out of range (" +
                     std::to_string(size()) + " batches)");
  const size_t begin = static_cast<size_t>(batch_index) * batch_size_;
  const size_t end = std::min(begin + batch_size_, indices_.size());
  return std::span<const int64_t>(indices_).subspan(begin, end - begin);
}

}  // namespace engine::data
