// GradBuckets on its own: the bucket layout (PyTorch DDP's caps, contiguous, covering the
// buffer), the timing summary, and under mpirun the reducer itself on synthetic gradients
// built from (seed, rank, index), whose averages every rank computes locally and compares
// bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "collectives/buckets/grad_buckets.h"
#include "ddp_cases.h"
#include "tests/collectives/collective_cases.h"

namespace engine {
namespace {

using testing::ddp_comm;

constexpr int64_t kMiB = 1 << 20;

// The layout invariants: contiguous from 0 to the end, every range in exactly one bucket in
// order, each bucket within its cap unless it holds a single range, and each bucket as full
// as the cap allows (taking the next range would pass it).
void expect_valid_layout(const std::vector<GradBucket>& buckets,
                         const std::vector<GradRange>& ranges, int64_t total,
                         int64_t first_cap_bytes, int64_t cap_bytes) {
  ASSERT_FALSE(buckets.empty());
  int64_t next_offset = 0;
  int next_range = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const GradBucket& bucket = buckets[b];
    const std::string where = "bucket " + std::to_string(b);
    EXPECT_EQ(bucket.offset, next_offset) << where << " is not contiguous with the previous";
    EXPECT_EQ(bucket.first_range, next_range) << where;
    ASSERT_GE(bucket.range_count, 1) << where;
    const int64_t cap = b == 0 ? first_cap_bytes : cap_bytes;
    if (bucket.range_count > 1) {
      EXPECT_LE(bucket.numel * 4, cap) << where << " passes its cap";
    }
    for (int r = bucket.first_range; r < bucket.first_range + bucket.range_count; ++r) {
      EXPECT_GE(ranges[r].offset, bucket.offset) << where << " range " << r;
      EXPECT_LE(ranges[r].offset + ranges[r].numel, bucket.offset + bucket.numel)
          << where << " range " << r;
    }
    next_offset = bucket.offset + bucket.numel;
    next_range = bucket.first_range + bucket.range_count;
    if (next_range < static_cast<int>(ranges.size())) {
      const int64_t with_next =
          (next_range + 1 < static_cast<int>(ranges.size()) ? ranges[next_range + 1].offset
                                                            : total) -
          bucket.offset;
      EXPECT_GT(with_next * 4, cap) << where << " could have taken range " << next_range;
    }
  }
  EXPECT_EQ(next_offset, total) << "the buckets do not reach the end of the buffer";
  EXPECT_EQ(next_range, static_cast<int>(ranges.size()));
}

TEST(GradBucketPlan, Resnet18BucketsAreContiguousWithinCapsAndCoverTheBuffer) {
  Stream stream;
  nn::ResNet model("resnet18", {.num_classes = testing::kClasses});
  model.allocate(Device::cpu(), stream);
  const std::vector<GradRange> ranges = nn::grad_ranges(model.params());
  const int64_t total = model.params().flat_grads().numel();
  struct Caps {
    int64_t first, rest;
  };
  for (const Caps caps : {Caps{kMiB, 25 * kMiB}, Caps{kMiB / 4, kMiB}, Caps{4096, 64 << 10}}) {
    SCOPED_TRACE("caps " + std::to_string(caps.first) + " / " + std::to_string(caps.rest));
    const std::vector<GradBucket> buckets =
        plan_grad_buckets(ranges, total, 4, caps.first, caps.rest);
    expect_valid_layout(buckets, ranges, total, caps.first, caps.rest);
    EXPECT_GT(buckets.size(), 2u);
    EXPECT_LE(buckets[0].numel * 4, caps.first);  // fc and the last BN: small enough
  }
}

TEST(GradBucketPlan, GapsTravelWithTheBucketBeforeThem) {
  // Ranges [3, 8), [16, 20), [32, 132) in a buffer of 144; first cap 10 elements, then 30.
  const std::vector<GradRange> ranges = {{3, 5, "a"}, {16, 4, "b"}, {32, 100, "c"}};
  const std::vector<GradBucket> buckets = plan_grad_buckets(ranges, 144, 4, 40, 120);
  ASSERT_EQ(buckets.size(), 3u);
  // a's share is [0, 16): more than the first cap, but a bucket always takes one range.
  EXPECT_EQ(buckets[0].offset, 0);
  EXPECT_EQ(buckets[0].numel, 16);
  EXPECT_EQ(buckets[1].offset, 16);  // b: [16, 32)
  EXPECT_EQ(buckets[1].numel, 16);
  EXPECT_EQ(buckets[2].offset, 32);  // c and the tail gap: [32, 144)
  EXPECT_EQ(buckets[2].numel, 112);
  // With a larger cap, b and c share a bucket.
  const std::vector<GradBucket> merged = plan_grad_buckets(ranges, 144, 4, 40, 1000);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[1].range_count, 2);
  EXPECT_EQ(merged[1].numel, 128);
}

TEST(GradBucketPlan, BadRangesAndCapsNameTheProblem) {
  const auto message = [](const std::vector<GradRange>& ranges, int64_t cap) {
    try {
      plan_grad_buckets(ranges, 100, 4, cap, cap);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{0, 10, "w"}, {5, 10, "v"}}, 64).find("range 1 (v)"), std::string::npos);
  EXPECT_NE(message({{0, 10, "w"}, {90, 20, "v"}}, 64).find("leaves the flat buffer"),
            std::string::npos);
  EXPECT_NE(message({{0, 0, "w"}}, 64).find("range 0 (w)"), std::string::npos);
  EXPECT_NE(message({{0, 10, "w"}}, 0).find("caps must be positive"), std::string::npos);
}

TEST(GradBucketTiming, BusyIsTheUnionAndHiddenIsClamped) {
  // Two overlapping intervals and one apart: busy = (3 - 1) + (6 - 5) = 3.
  GradBucketTiming t = summarize_grad_bucket_timing(4.0, {{1, 2.5}, {2, 3}, {5, 6}}, 100);
  EXPECT_DOUBLE_EQ(t.busy_s, 3.0);
  EXPECT_DOUBLE_EQ(t.exposed_s, 2.0);  // 6 - 4
  EXPECT_DOUBLE_EQ(t.hidden_fraction, 1.0 - 2.0 / 3.0);
  EXPECT_EQ(t.buckets, 3);
  EXPECT_EQ(t.bytes, 100);
  // Everything after backward: exposed > busy, hidden clamps to 0.
  t = summarize_grad_bucket_timing(1.0, {{2, 3}}, 4);
  EXPECT_DOUBLE_EQ(t.exposed_s, 2.0);
  EXPECT_DOUBLE_EQ(t.hidden_fraction, 0.0);
  // Done before backward ends: nothing exposed.
  t = summarize_grad_bucket_timing(5.0, {{1, 2}, {2, 4}}, 4);
  EXPECT_DOUBLE_EQ(t.exposed_s, 0.0);
  EXPECT_DOUBLE_EQ(t.hidden_fraction, 1.0);
  // Nothing communicated.
  t = summarize_grad_bucket_timing(5.0, {}, 0);
  EXPECT_DOUBLE_EQ(t.busy_s, 0.0);
  EXPECT_DOUBLE_EQ(t.hidden_fraction, 1.0);
}

// Synthetic gradients: ranges of awkward sizes with 16-element alignment gaps, small caps so
// there are many buckets.
struct Synthetic {
  std::vector<GradRange> ranges;
  int64_t total = 0;
  Synthetic() {
    int64_t offset = 0;
    int index = 0;
    for (int64_t numel : {1, 7, 100, 1021, 16, 3000, 5, 513, 4096, 2, 777}) {
      // Not "g" + to_string(): g++ 12 warns falsely on that (-Wrestrict, GCC bug 105329).
      std::string name(1, 'g');
      name += std::to_string(index++);
      ranges.push_back({offset, numel, name});
      offset = (offset + numel + 15) / 16 * 16;
    }
    total = offset + 16;  // and a tail gap
  }
  bool in_range(int64_t i) const {
    return std::any_of(ranges.begin(), ranges.end(),
                       [&](const GradRange& r) { return i >= r.offset && i < r.offset + r.numel; });
  }
  Tensor gradients(uint32_t seed, int rank) const {
    std::vector<float> values(static_cast<size_t>(total), 0.f);
    for (int64_t i = 0; i < total; ++i)
      if (in_range(i)) values[i] = testing::input_value(seed, rank, i);
    return Tensor::from_floats({total}, values);
  }
  std::vector<float> expected(uint32_t seed, int world) const {
    std::vector<float> values(static_cast<size_t>(total), 0.f);
    for (int64_t i = 0; i < total; ++i)
      if (in_range(i))
        values[i] = testing::expected_reduction(ReduceOp::avg, DType::f32, seed, world, i);
    return values;
  }
};

constexpr GradBucketOptions kSmallBuckets{256, 4096, true};

TEST(GradBuckets, AveragesAreExactInEveryReportOrder) {
  Communicator& comm = ddp_comm();
  const Synthetic synthetic;
  const int n = static_cast<int>(synthetic.ranges.size());
  std::vector<int> forward(n), backward(n), shuffled = {5, 0, 9, 2, 10, 1, 7, 3, 8, 4, 6};
  for (int i = 0; i < n; ++i) {
    forward[i] = i;
    backward[i] = n - 1 - i;
  }
  uint32_t seed = 40;
  for (bool overlap : {true, false}) {
    for (const std::vector<int>* order : {&forward, &backward, &shuffled}) {
      SCOPED_TRACE("overlap " + std::to_string(overlap) + " order from range " +
                   std::to_string((*order)[0]) + ", seed " + std::to_string(seed));
      Tensor flat = synthetic.gradients(seed, comm.rank());
      GradBucketOptions options = kSmallBuckets;
      options.overlap = overlap;
      GradBuckets buckets(flat, synthetic.ranges, comm, options);
      ASSERT_GT(buckets.buckets().size(), 4u);
      Stream stream;
      buckets.begin(stream);
      for (int r : *order)
        buckets.mark_ready(r);
      buckets.finish(stream);
      const testing::Mismatch mismatch =
          testing::compare(synthetic.expected(seed, comm.size()), flat.to_floats(stream));
      EXPECT_EQ(mismatch.count, 0) << mismatch.first;
      const GradBucketTiming& timing = buckets.last_timing();
      EXPECT_EQ(timing.buckets, comm.size() > 1 ? static_cast<int>(buckets.buckets().size()) : 0);
      EXPECT_EQ(timing.bytes, comm.size() > 1 ? synthetic.total * 4 : 0);
      ++seed;
    }
  }
}

TEST(GradBuckets, BucketsStartInBucketOrderAsSoonAsTheyAreComplete) {
  Communicator& comm = ddp_comm();
  if (comm.size() == 1) GTEST_SKIP() << "a world of one starts no all-reduce";
  const Synthetic synthetic;
  Tensor flat = synthetic.gradients(7, comm.rank());
  GradBuckets buckets(flat, synthetic.ranges, comm, kSmallBuckets);
  const std::vector<GradBucket>& layout = buckets.buckets();
  ASSERT_GT(layout.size(), 3u);
  const auto report_bucket = [&](int b) {
    for (int r = layout[b].first_range; r < layout[b].first_range + layout[b].range_count; ++r)
      buckets.mark_ready(r);
  };
  constexpr auto kPause = std::chrono::milliseconds(30);
  Stream stream;
  buckets.begin(stream);
  report_bucket(1);  // complete, but bucket 0 is not: it must wait
  std::this_thread::sleep_for(kPause);
  report_bucket(0);  // now both start, 0 first
  for (int b = 2; b < static_cast<int>(layout.size()); ++b)
    report_bucket(b);
  std::this_thread::sleep_for(kPause);  // the all-reduces run while "backward" goes on
  buckets.finish(stream);
  const GradBucketTiming& timing = buckets.last_timing();
  ASSERT_EQ(timing.intervals.size(), layout.size());
  const double pause = std::chrono::duration<double>(kPause).count();
  EXPECT_GE(timing.intervals[1].start_s, pause * 0.9) << "bucket 1 started before bucket 0";
  EXPECT_GE(timing.intervals[1].start_s, timing.intervals[0].start_s);
  EXPECT_LT(timing.intervals[0].start_s, timing.backward_s - pause * 0.9)
      << "bucket 0 did not start during backward";
  for (size_t b = 0; b < layout.size(); ++b)
    EXPECT_LE(timing.intervals[b].start_s, timing.intervals[b].end_s) << "bucket " << b;
  EXPECT_GT(timing.hidden_fraction, 0.0);
  EXPECT_EQ(testing::compare(synthetic.expected(7, comm.size()), flat.to_floats(stream)).count, 0);
}

TEST(GradBuckets, WithoutOverlapNothingStartsBeforeFinish) {
  Communicator& comm = ddp_comm();
  if (comm.size() == 1) GTEST_SKIP() << "a world of one starts no all-reduce";
  const Synthetic synthetic;
  Tensor flat = synthetic.gradients(8, comm.rank());
  GradBucketOptions options = kSmallBuckets;
  options.overlap = false;
  GradBuckets buckets(flat, synthetic.ranges, comm, options);
  Stream stream;
  buckets.begin(stream);
  for (int r = 0; r < static_cast<int>(synthetic.ranges.size()); ++r)
    buckets.mark_ready(r);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  buckets.finish(stream);
  const GradBucketTiming& timing = buckets.last_timing();
  for (const BucketInterval& interval : timing.intervals)
    EXPECT_GE(interval.start_s, timing.backward_s);
  EXPECT_EQ(timing.hidden_fraction, 0.0);
  EXPECT_GE(timing.exposed_s, timing.busy_s);
}

TEST(GradBuckets, AMissingReportIsAnErrorAfterEveryBucketWasReduced) {
  Communicator& comm = ddp_comm();
  const Synthetic synthetic;
  Tensor flat = synthetic.gradients(9, comm.rank());
  GradBuckets buckets(flat, synthetic.ranges, comm, kSmallBuckets);
  Stream stream;
  buckets.begin(stream);
  for (int r = 0; r < static_cast<int>(synthetic.ranges.size()); ++r)
    if (r != 3 && r != 6) buckets.mark_ready(r);
  try {
    buckets.finish(stream);
    ADD_FAILURE() << "finish() accepted two unreported ranges";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("2 of 11 gradients were never reported"), std::string::npos) << message;
    EXPECT_NE(message.find("range 3 (g3), range 6 (g6)"), std::string::npos) << message;
  }
  EXPECT_FALSE(buckets.in_step());
  // Every bucket was still all-reduced, so the ranks stayed in step and the next step works.
  EXPECT_EQ(testing::compare(synthetic.expected(9, comm.size()), flat.to_floats(stream)).count, 0);
  buckets.begin(stream);
  for (int r = 0; r < static_cast<int>(synthetic.ranges.size()); ++r)
    buckets.mark_ready(r);
  EXPECT_NO_THROW(buckets.finish(stream));
}

TEST(GradBuckets, DuplicateAndUnknownReportsAndMisuseAreErrors) {
  Communicator& comm = ddp_comm();
  const Synthetic synthetic;
  Tensor flat = synthetic.gradients(10, comm.rank());
  GradBuckets buckets(flat, synthetic.ranges, comm, kSmallBuckets);
  Stream stream;
  EXPECT_THROW(buckets.mark_ready(0), Error);  // outside a step
  EXPECT_THROW(buckets.finish(stream), Error);
  buckets.begin(stream);
  EXPECT_THROW(buckets.begin(stream), Error);
  buckets.mark_ready(2);
  try {
    buckets.mark_ready(2);
    ADD_FAILURE() << "a duplicate report was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("range 2 (g2) was reported ready twice"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(buckets.mark_ready(11), Error);
  EXPECT_THROW(buckets.mark_ready(-1), Error);
  for (int r = 0; r < static_cast<int>(synthetic.ranges.size()); ++r)
    if (r != 2) buckets.mark_ready(r);
  EXPECT_NO_THROW(buckets.finish(stream));
}

TEST(GradBuckets, NoSyncStepsCommunicateNothing) {
  Communicator& comm = ddp_comm();
  const Synthetic synthetic;
  Tensor flat = synthetic.gradients(11, comm.rank());
  Stream stream;
  const std::vector<float> local = flat.to_floats(stream);
  GradBuckets buckets(flat, synthetic.ranges, comm, kSmallBuckets);
  buckets.begin(stream, /*sync=*/false);
  buckets.mark_ready(0);
  buckets.mark_ready(0);  // not even checked: nothing at all happens
  buckets.finish(stream);
  EXPECT_EQ(testing::compare(local, flat.to_floats(stream)).count, 0);
}

}  // namespace
}  // namespace engine
