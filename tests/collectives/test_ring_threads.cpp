// Every collective of RingAlgorithms over ShmTransport, with threads as ranks, for world
// sizes 1..8, both dtypes, every reduce op, counts from 0 through fewer-than-ranks to
// primes spanning many messages, on the ring path (tiny slots, so buffers span many
// pieces) and on the direct small-message path. Results are compared bit for bit with the
// expected values each rank computes locally.
#include <gtest/gtest.h>

#include <vector>

#include "collective_cases.h"
#include "collectives/ring/ring_algorithms.h"
#include "shm_ranks.h"

namespace engine {
namespace {

using testing::compare;
using testing::decode;
using testing::encode;
using testing::expected_reductions;
using testing::inputs;
using testing::run_ranks;
using testing::shm_options;

using testing::kDTypes;
using testing::kReduceOps;

// Collects mismatches from all rank threads (gtest assertions are thread-safe; this keeps
// the failure text short and labelled).
void check(const std::vector<float>& expected, const std::vector<float>& actual,
           const std::string& label) {
  const testing::Mismatch mismatch = compare(expected, actual);
  EXPECT_EQ(mismatch.count, 0) << label << ": " << mismatch.first;
}

std::vector<int64_t> counts_for(int world) {
  return {0, 1, world - 1, 7, 13, 97, 1021};
}

// Runs every collective on one shared-memory world, each rank checking its own results.
void run_all_collectives(int world, const ShmOptions& options) {
  const std::string error = run_ranks(world, options, [&](int rank, ShmTransport& transport) {
    RingAlgorithms ring(transport, Device::cpu());
    uint32_t seed = 100;
    for (DType dtype : kDTypes) {
      for (int64_t count : counts_for(world)) {
        for (ReduceOp op : kReduceOps) {
          ++seed;
          auto data = encode(dtype, inputs(seed, rank, count));
          ring.all_reduce(data.data(), count, dtype, op);
          check(expected_reductions(op, dtype, seed, world, count),
                decode(dtype, data.data(), count),
                testing::case_label("all_reduce", rank, world, dtype, count, op));

          // reduce_scatter: rank r's input is n blocks of `count`; block b holds elements
          // b*count .. of the global index space.
          const auto rs_in = encode(dtype, inputs(seed, rank, world * count));
          std::vector<std::byte> rs_out(count * dtype_size(dtype));
          ring.reduce_scatter(rs_in.data(), rs_out.data(), count, dtype, op);
          check(expected_reductions(op, dtype, seed, world, count, rank * count),
                decode(dtype, rs_out.data(), count),
                testing::case_label("reduce_scatter", rank, world, dtype, count, op));

          const int root = static_cast<int>(seed % world);
          auto reduced = encode(dtype, inputs(seed, rank, count));
          ring.reduce(reduced.data(), count, dtype, op, root);
          check(rank == root ? expected_reductions(op, dtype, seed, world, count)
                             : inputs(seed, rank, count),
                decode(dtype, reduced.data(), count),
                testing::case_label("reduce", rank, world, dtype, count, op, root));
        }
        ++seed;
        const int root = static_cast<int>(seed % world);
        auto broadcast = encode(dtype, inputs(seed, rank, count));
        ring.broadcast(broadcast.data(), count, dtype, root);
        check(inputs(seed, root, count), decode(dtype, broadcast.data(), count),
              testing::case_label("broadcast", rank, world, dtype, count, ReduceOp::sum, root));

        // all_gather and gather: block r of the output is rank r's input.
        const std::vector<float> gathered_expected = testing::gathered_inputs(seed, world, count);
        const auto own = encode(dtype, inputs(seed, rank, count));
        std::vector<std::byte> gathered(world * count * dtype_size(dtype));
        ring.all_gather(own.data(), gathered.data(), count, dtype);
        check(gathered_expected, decode(dtype, gathered.data(), world * count),
              testing::case_label("all_gather", rank, world, dtype, count));
        std::vector<std::byte> at_root(world * count * dtype_size(dtype));
        ring.gather(own.data(), at_root.data(), count, dtype, root);
        if (rank == root) {
          check(gathered_expected, decode(dtype, at_root.data(), world * count),
                testing::case_label("gather", rank, world, dtype, count, ReduceOp::sum, root));
        }
        // scatter: block r of root's input (the gathered layout) goes to rank r.
        const auto to_scatter = encode(dtype, gathered_expected);
        std::vector<std::byte> scattered(count * dtype_size(dtype));
        ring.scatter(rank == root ? to_scatter.data() : nullptr, scattered.data(), count, dtype,
                     root);
        check(inputs(seed, rank, count), decode(dtype, scattered.data(), count),
              testing::case_label("scatter", rank, world, dtype, count, ReduceOp::sum, root));
        ring.barrier();
      }
    }
  });
  EXPECT_EQ(error, "");
}

class RingThreads : public ::testing::TestWithParam<int> {};

TEST_P(RingThreads, EveryCollectiveOnTheRingPathWithTinyMessages) {
  // 64-byte slots: 16 f32 per message, so 1021 elements take dozens of pieces; two slots
  // make senders wait for receivers constantly.
  run_all_collectives(GetParam(), shm_options(2, 64));
}

TEST_P(RingThreads, EveryCollectiveWithTheDirectSmallMessagePath) {
  run_all_collectives(GetParam(), shm_options(3, 4096, 4096));
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, RingThreads, ::testing::Values(1, 2, 3, 4, 5, 8),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

TEST(RingThreadsResults, AreBitIdenticalOnEveryRankForInexactInputs) {
  // Non-integer inputs make the order of reduction matter; every rank must still get the
  // same bits (each element is reduced in one place, or in rank order on the direct path).
  constexpr int kWorld = 5;
  constexpr int64_t kCount = 3001;
  for (size_t small_bytes : {size_t{0}, size_t{1} << 20}) {
    std::vector<std::vector<float>> results(kWorld);
    const std::string error =
        run_ranks(kWorld, shm_options(4, small_bytes ? 16384 : 256, small_bytes),
                  [&](int rank, ShmTransport& transport) {
                    RingAlgorithms ring(transport, Device::cpu());
                    std::vector<float> data(kCount);
                    for (int64_t i = 0; i < kCount; ++i)
                      data[i] = 1.f / (1.f + rank + 0.37f * i);
                    ring.all_reduce(data.data(), kCount, DType::f32, ReduceOp::sum);
                    results[rank] = data;
                  });
    ASSERT_EQ(error, "");
    for (int rank = 1; rank < kWorld; ++rank) {
      EXPECT_EQ(compare(results[0], results[rank]).count, 0) << "rank " << rank;
    }
    double expected = 0;
    for (int rank = 0; rank < kWorld; ++rank)
      expected += 1.0 / (1.0 + rank + 0.37 * 10);
    EXPECT_NEAR(results[0][10], expected, 1e-6);
  }
}

}  // namespace
}  // namespace engine
