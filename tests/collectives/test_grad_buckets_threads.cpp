// GradBuckets with threads as ranks (RingCommunicator over ShmTransport on one segment), so
// the overlap itself runs under ThreadSanitizer (collectives_unit_test_tsan): each rank's
// "backward" writes one gradient range after another and reports it while the communicator's
// worker thread all-reduces the buckets already complete, and the WorkWatcher notes their
// completions. A race between the two, or a bucket read before its gradients were written,
// shows up as a TSan report or as a wrong average.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collective_cases.h"
#include "collectives/buckets/grad_buckets.h"
#include "collectives/ring/ring_communicator.h"
#include "shm_ranks.h"

namespace engine {
namespace {

// Ranges of awkward sizes with 16-element alignment gaps, and a tail gap.
struct Layout {
  std::vector<GradRange> ranges;
  int64_t total = 0;
  Layout() {
    int64_t offset = 0;
    for (int64_t numel : {3, 100, 1021, 16, 2000, 5, 777}) {
      ranges.push_back({offset, numel, ""});
      offset = (offset + numel + 15) / 16 * 16;
    }
    total = offset + 16;
  }
};

void run_steps(int world, bool overlap) {
  const ShmOptions options = testing::shm_options(4, 1024);
  auto segment = testing::make_segment(world, options);
  const Layout layout;
  std::mutex mutex;
  std::string first_error;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        CommOptions comm_options;
        comm_options.timeout = std::chrono::seconds(20);
        comm_options.on_timeout = TimeoutAction::throw_error;
        comm_options.shm = options;
        RingCommunicator comm(std::make_unique<ShmTransport>(segment, rank, world, options),
                              {rank, world, rank, "ring-shm"}, comm_options);
        Tensor flat = Tensor::empty({layout.total}, DType::f32);
        float* data = flat.data<float>();
        std::fill_n(data, layout.total, 0.f);
        GradBuckets buckets(flat, layout.ranges, comm, {64, 8192, overlap});
        EXPECT_EQ(buckets.buckets().size(), 4u);  // two of them hold several ranges
        Stream stream;
        for (uint32_t seed = 1; seed <= 3; ++seed) {
          buckets.begin(stream);
          for (int r = 0; r < static_cast<int>(layout.ranges.size()); ++r) {
            const GradRange& range = layout.ranges[r];
            for (int64_t i = range.offset; i < range.offset + range.numel; ++i)
              data[i] = testing::input_value(seed, rank, i);  // "backward" writes, then reports
            buckets.mark_ready(r);
            // The next layer's compute: gives the worker time to start the bucket just
            // completed, so that any overlap of its reads with later writes really happens.
            std::this_thread::sleep_for(std::chrono::microseconds(300));
          }
          buckets.finish(stream);
          int64_t wrong = 0;
          for (const GradRange& range : layout.ranges)
            for (int64_t i = range.offset; i < range.offset + range.numel; ++i)
              wrong +=
                  data[i] != testing::expected_reduction(ReduceOp::avg, DType::f32, seed, world, i);
          EXPECT_EQ(wrong, 0) << "rank " << rank << " step " << seed;
          EXPECT_GE(buckets.last_timing().hidden_fraction, 0.0);
          EXPECT_LE(buckets.last_timing().hidden_fraction, 1.0);
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        if (first_error.empty()) first_error = "rank " + std::to_string(rank) + ": " + e.what();
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  EXPECT_EQ(first_error, "");
}

TEST(GradBucketsThreads, OverlappedBucketsAverageExactlyWhileBackwardWrites) {
  for (int world : {2, 3}) {
    SCOPED_TRACE("world " + std::to_string(world));
    run_steps(world, true);
  }
}

TEST(GradBucketsThreads, BucketsAfterBackwardAverageExactly) {
  run_steps(3, false);
}

}  // namespace
}  // namespace engine
