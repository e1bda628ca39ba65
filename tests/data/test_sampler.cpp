// Samplers: torch.randperm and DistributedSampler against torch's own output (golden), then the
// partition properties for many (N, world size, seed, epoch, drop_last).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "data/sampler.h"
#include "kernels/error.h"
#include "tests/data/golden.h"

namespace engine::data {
namespace {

std::vector<int64_t> integers(const std::vector<std::string>& fields, size_t begin, size_t count) {
  std::vector<int64_t> values;
  for (size_t i = begin; i < begin + count; ++i)
    values.push_back(std::stoll(fields.at(i)));
  return values;
}

TEST(SamplerGolden, RandpermEqualsTorchBitForBit) {
  const auto records = testing::golden_records(testing::read_golden("sampler"), "randperm");
  for (const auto& r : records) {
    const int64_t n = std::stoll(r.fields[0]);
    const uint64_t seed = std::stoull(r.fields[1]);
    EXPECT_EQ(torch_randperm(n, seed), integers(r.fields, 2, static_cast<size_t>(n)))
        << "n " << n << " seed " << seed;
  }
}

TEST(SamplerGolden, DistributedSamplerEqualsTorch) {
  const auto records = testing::golden_records(testing::read_golden("sampler"), "distributed");
  EXPECT_GT(records.size(), 100u);
  for (const auto& r : records) {
    const int64_t n = std::stoll(r.fields[0]);
    const int world = std::stoi(r.fields[1]);
    const int rank = std::stoi(r.fields[2]);
    const bool shuffle = r.fields[3] == "1";
    const uint64_t seed = std::stoull(r.fields[4]);
    const int64_t epoch = std::stoll(r.fields[5]);
    const bool drop_last = r.fields[6] == "1";
    const auto count = static_cast<size_t>(std::stoll(r.fields[7]));
    DistributedSampler sampler(n, world, rank, shuffle, seed, drop_last);
    sampler.set_epoch(epoch);
    EXPECT_EQ(sampler.num_samples(), static_cast<int64_t>(count));
    EXPECT_EQ(sampler.indices(), integers(r.fields, 8, count))
        << "n " << n << " world " << world << " rank " << rank << " shuffle " << shuffle << " seed "
        << seed << " epoch " << epoch << " drop_last " << drop_last;
  }
}

TEST(Sampler, RandpermIsAPermutationForManySizes) {
  for (int64_t n : {0, 1, 2, 3, 10, 257, 10000}) {
    std::vector<int64_t> permutation = torch_randperm(n, static_cast<uint64_t>(n) * 31 + 1);
    std::sort(permutation.begin(), permutation.end());
    std::vector<int64_t> expected(static_cast<size_t>(n));
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(permutation, expected) << n;
  }
}

TEST(Sampler, DistributedPartitionProperties) {
  for (int64_t n : {1, 2, 5, 17, 100, 1001}) {
    for (int world : {1, 2, 3, 4, 7, 8}) {
      for (uint64_t seed : {0u, 5u}) {
        for (int64_t epoch : {0, 3}) {
          for (bool drop_last : {false, true}) {
            SCOPED_TRACE("n " + std::to_string(n) + " world " + std::to_string(world) + " seed " +
                         std::to_string(seed) + " epoch " + std::to_string(epoch) + " drop_last " +
                         std::to_string(drop_last));
            const std::vector<int64_t> permutation = torch_randperm(n, seed + epoch);
            const int64_t per_rank = drop_last ? n / world : (n + world - 1) / world;
            std::map<int64_t, int> seen;
            for (int rank = 0; rank < world; ++rank) {
              DistributedSampler sampler(n, world, rank, true, seed, drop_last);
              sampler.set_epoch(epoch);
              const std::vector<int64_t> mine = sampler.indices();
              ASSERT_EQ(static_cast<int64_t>(mine.size()), per_rank);
              ASSERT_EQ(sampler.num_samples(), per_rank);
              for (int64_t k = 0; k < per_rank; ++k) {
                // Rank r takes positions r, r + W, ... of the (wrapped-around) permutation.
                ASSERT_EQ(mine[k], permutation[(k * world + rank) % n]);
                ++seen[mine[k]];
              }
            }
            const int64_t total = per_rank * world;
            if (drop_last) {
              EXPECT_EQ(static_cast<int64_t>(seen.size()), total) << "no sample twice";
            } else {
              EXPECT_EQ(static_cast<int64_t>(seen.size()), n) << "every sample at least once";
              int64_t repeats = 0;
              for (const auto& [index, count] : seen)
                repeats += count - 1;
              EXPECT_EQ(repeats, total - n) << "padding is exactly the shortfall";
            }
          }
        }
      }
    }
  }
}

TEST(Sampler, EpochsReshuffleAndUnshuffledIsInOrder) {
  DistributedSampler sampler(50, 2, 1, true, 9);
  const std::vector<int64_t> epoch0 = sampler.indices();
  EXPECT_EQ(sampler.indices(), epoch0) << "same epoch, same order";
  sampler.set_epoch(1);
  EXPECT_NE(sampler.indices(), epoch0);
  DistributedSampler in_order(5, 2, 1, /*shuffle=*/false);
  EXPECT_EQ(in_order.indices(), (std::vector<int64_t>{1, 3, 0}));
  EXPECT_THROW(DistributedSampler(5, 2, 2), Error);
  EXPECT_THROW(DistributedSampler(5, 0, 0), Error);
}

TEST(Sampler, EvaluationGivesEverySampleToExactlyOneRank) {
  for (int64_t n : {0, 1, 7, 50000}) {
    for (int world : {1, 3, 8}) {
      std::vector<int64_t> all;
      int64_t smallest = n;
      int64_t largest = 0;
      for (int rank = 0; rank < world; ++rank) {
        EvaluationSampler sampler(n, world, rank);
        const std::vector<int64_t> mine = sampler.indices();
        EXPECT_EQ(static_cast<int64_t>(mine.size()), sampler.num_samples());
        smallest = std::min<int64_t>(smallest, static_cast<int64_t>(mine.size()));
        largest = std::max<int64_t>(largest, static_cast<int64_t>(mine.size()));
        all.insert(all.end(), mine.begin(), mine.end());
      }
      std::sort(all.begin(), all.end());
      std::vector<int64_t> expected(static_cast<size_t>(n));
      std::iota(expected.begin(), expected.end(), 0);
      EXPECT_EQ(all, expected) << "n " << n << " world " << world;
      EXPECT_LE(largest - smallest, 1);
    }
  }
}

TEST(Sampler, BatchesAreConsecutiveWithAShortOrDroppedLastBatch) {
  std::vector<int64_t> indices(10);
  std::iota(indices.begin(), indices.end(), 100);
  const BatchSampler keep(indices, 4, false);
  ASSERT_EQ(keep.size(), 3);
  EXPECT_EQ(std::vector<int64_t>(keep.batch(1).begin(), keep.batch(1).end()),
            (std::vector<int64_t>{104, 105, 106, 107}));
  EXPECT_EQ(keep.batch(2).size(), 2u);
  const BatchSampler drop(indices, 4, true);
  EXPECT_EQ(drop.size(), 2);
  EXPECT_THROW(drop.batch(2), Error);
  EXPECT_THROW(BatchSampler(indices, 0, false), Error);
}

}  // namespace
}  // namespace engine::data
