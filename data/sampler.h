// Which samples each rank sees, as torch.utils.data does it:
//   - torch_randperm(n, seed): torch.randperm(n, generator=torch.Generator().manual_seed(seed)),
//     the same permutation bit for bit (torch's CPU generator is a standard MT19937 seeded with
//     the low 32 bits of the seed; randperm swaps r[i] with r[i + random() % (n - i)]);
//   - DistributedSampler: that permutation with seed + epoch, padded by wrapping around to a
//     multiple of the world size (or truncated with drop_last), rank r taking r, r + W, ...;
//   - EvaluationSampler: every sample exactly once over all ranks, no padding;
//   - BatchSampler: consecutive groups of batch_size indices.
// Ranks are plain ints: data/ does not depend on collectives/.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace engine::data {

std::vector<int64_t> torch_randperm(int64_t n, uint64_t seed);

class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, int world_size, int rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);

  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  // Samples per rank per epoch (torch's num_samples), padding included.
  int64_t num_samples() const { return num_samples_; }
  int64_t total_size() const { return num_samples_ * world_size_; }
  // This rank's dataset indices for the current epoch.
  std::vector<int64_t> indices() const;

 private:
  int64_t dataset_size_;
  int world_size_;
  int rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t epoch_ = 0;
  int64_t num_samples_ = 0;
};

// Validation: rank r takes r, r + W, r + 2W, ... of 0..n-1, so the ranks' shares differ by at
// most one sample and their union is every sample once (a padded sampler would count some
// twice in the accuracy).
class EvaluationSampler {
 public:
  EvaluationSampler(int64_t dataset_size, int world_size, int rank);
  int64_t num_samples() const;
  std::vector<int64_t> indices() const;

 private:
  int64_t dataset_size_;
  int world_size_;
  int rank_;
};

class BatchSampler {
 public:
  BatchSampler(std::vector<int64_t> indices, int batch_size, bool drop_last);
  int64_t size() const;  // number of batches
  std::span<const int64_t> batch(int64_t batch_index) const;

 private:
  std::vector<int64_t> indices_;
  int batch_size_;
  bool drop_last_;
};

}  // namespace engine::data
