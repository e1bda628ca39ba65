// DataParallel on resnet18 (10 classes, 32x32, local BatchNorm) under mpirun: DDP gradients
// equal the average of every rank's single-process gradients, which each rank recomputes
// locally; broadcast_from_rank0 makes differently seeded replicas identical and 20 SGD steps
// keep them bit-identical; no_sync accumulation; the step's timing; and hook misuse errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ddp_cases.h"
#include "nn/sgd.h"

namespace engine {
namespace {

using testing::Batch;
using testing::ddp_comm;
using testing::make_batch;
using testing::SmallModel;

constexpr int64_t kBatch = 2;  // per rank
constexpr nn::DataParallelOptions kSmallBuckets{0.25, 2.0, true};

// fp32 check of an average of W per-rank gradients: the ring adds the W terms in its own order
// and divides once, the reference adds in double; both are within a few ulps of the terms'
// magnitudes, so the tolerance is relative to mean_q |g_q| at each element.
void expect_average(const std::vector<float>& actual, const std::vector<double>& sum,
                    const std::vector<double>& sum_abs, int world, const std::string& what) {
  ASSERT_EQ(actual.size(), sum.size());
  int64_t bad = 0;
  std::string first;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double expected = sum[i] / world;
    const double tolerance = 1e-6 * sum_abs[i] / world + 1e-12;
    if (std::abs(actual[i] - expected) <= tolerance) continue;
    if (bad++ == 0)
      first = "element " + std::to_string(i) + ": expected " + std::to_string(expected) + ", got " +
              std::to_string(actual[i]);
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " elements off, first " << first;
}

struct Sums {
  std::vector<double> sum, sum_abs;
  void add(const std::vector<float>& g) {
    sum.resize(g.size(), 0.0);
    sum_abs.resize(g.size(), 0.0);
    for (size_t i = 0; i < g.size(); ++i) {
      sum[i] += g[i];
      sum_abs[i] += std::abs(g[i]);
    }
  }
};

TEST(DataParallel, GradientsAreTheAverageOfEveryRanksSingleProcessGradients) {
  Communicator& comm = ddp_comm();
  const int world = comm.size();
  constexpr uint64_t kSeed = 11, kData = 500;
  SmallModel ddp_model(kSeed, kBatch);
  nn::DataParallel ddp(ddp_model.params(), comm, kSmallBuckets);
  EXPECT_GT(ddp.bucket_count(), 2);
  ddp_model.params().zero_grad();
  ddp_model.step(make_batch(kData, comm.rank(), 0, kBatch), &ddp);
  const std::vector<float> averaged = ddp_model.grads();

  // Every rank's single-process gradient, from a second model with the same seed.
  SmallModel reference(kSeed, kBatch);
  Sums sums;
  std::vector<float> own;
  for (int q = 0; q < world; ++q) {
    reference.params().zero_grad();
    reference.step(make_batch(kData, q, 0, kBatch));
    const std::vector<float> g = reference.grads();
    sums.add(g);
    if (q == comm.rank()) own = g;
  }
  expect_average(averaged, sums.sum, sums.sum_abs, world, "DDP gradients");
  if (world > 1) {
    EXPECT_NE(averaged, own) << "the gradients were not communicated";
  }
}

// The bytes of every parameter, hashed, on every rank.
std::vector<uint64_t> parameter_hashes(Communicator& comm, SmallModel& model) {
  return testing::all_gather_u64(comm, testing::hash_bytes(model.values()));
}

TEST(DataParallel, BroadcastMakesReplicasIdenticalAndTrainingKeepsThemBitIdentical) {
  Communicator& comm = ddp_comm();
  const int rank = comm.rank();
  constexpr uint64_t kRank0Seed = 100;
  SmallModel model(kRank0Seed + rank, kBatch);  // a different initialization on every rank
  nn::ParameterSet& params = model.params();
  // Running statistics and counters that differ too.
  float* buffers = params.flat_buffers().data<float>();
  for (int64_t i = 0; i < params.flat_buffers().numel(); ++i)
    buffers[i] = static_cast<float>(rank) + 0.25f * static_cast<float>(i % 5);
  for (size_t c = 0; c < params.counters().size(); ++c)
    params.counter(static_cast<nn::CounterId>(c)) = (int64_t{1} << 40) * rank + 7 + c;
  if (comm.size() > 1) {
    const std::vector<uint64_t> before = parameter_hashes(comm, model);
    EXPECT_NE(before[0], before[1]) << "the replicas should start different";
  }

  nn::DataParallel ddp(params, comm, kSmallBuckets);
  ddp.broadcast_from_rank0(model.stream);
  {
    Stream stream;
    nn::ResNet rank0("resnet18", {.num_classes = testing::kClasses, .seed = kRank0Seed});
    rank0.allocate(Device::cpu(), stream);
    EXPECT_EQ(testing::hash_bytes(model.values()),
              testing::hash_bytes(rank0.params().flat_values().to_floats(stream)))
        << "the parameters are not rank 0's";
    const float* now = params.flat_buffers().data<float>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < params.flat_buffers().numel(); ++i)
      wrong += now[i] != 0.25f * static_cast<float>(i % 5);
    EXPECT_EQ(wrong, 0) << "BatchNorm buffers are not rank 0's";
    for (size_t c = 0; c < params.counters().size(); ++c)
      EXPECT_EQ(params.counter(static_cast<nn::CounterId>(c)), static_cast<int64_t>(7 + c))
          << params.counters()[c].name;
  }
  const uint64_t initial = testing::hash_bytes(model.values());

  nn::SgdConfig config;
  config.lr = 0.02f;
  config.momentum = 0.9f;
  config.weight_decay = 1e-4f;
  nn::Sgd sgd(params, config, model.stream);
  for (int step = 0; step < 20; ++step) {
    params.zero_grad();
    model.step(make_batch(600 + step, rank, 0, kBatch), &ddp);
    sgd.step(config.lr, model.stream);
  }
  const std::vector<uint64_t> after = parameter_hashes(comm, model);
  for (int r = 1; r < comm.size(); ++r)
    EXPECT_EQ(after[r], after[0]) << "rank " << r << "'s parameters differ from rank 0's";
  EXPECT_NE(after[comm.rank()], initial) << "training did not change the parameters";
}

TEST(DataParallel, NoSyncAccumulatesLocallyThenAveragesTheSum) {
  Communicator& comm = ddp_comm();
  constexpr uint64_t kSeed = 21, kData = 700;
  const Batch first = make_batch(kData, comm.rank(), 0, kBatch);
  const Batch second = make_batch(kData, comm.rank(), 1, kBatch);

  SmallModel reference(kSeed, kBatch);
  reference.params().zero_grad();
  reference.step(first);
  const std::vector<float> local_first = reference.grads();
  reference.step(second);  // accumulates
  const std::vector<float> local_sum = reference.grads();

  SmallModel model(kSeed, kBatch);
  nn::DataParallel ddp(model.params(), comm, kSmallBuckets);
  model.params().zero_grad();
  model.step(first, &ddp, /*sync=*/false);
  EXPECT_EQ(model.grads(), local_first) << "a no_sync backward changed the gradients";
  model.step(second, &ddp, /*sync=*/true);
  const std::vector<float> averaged = model.grads();

  // The reference: each rank's accumulated sum, gathered and averaged here.
  Tensor all = Tensor::empty({comm.size() * static_cast<int64_t>(local_sum.size())}, DType::f32);
  comm.all_gather(Tensor::from_floats({static_cast<int64_t>(local_sum.size())}, local_sum), all,
                  model.stream);
  const std::vector<float> gathered = all.to_floats(model.stream);
  Sums sums;
  for (int q = 0; q < comm.size(); ++q)
    sums.add(std::vector<float>(gathered.begin() + q * local_sum.size(),
                                gathered.begin() + (q + 1) * local_sum.size()));
  expect_average(averaged, sums.sum, sums.sum_abs, comm.size(), "no_sync + sync gradients");
}

TEST(DataParallel, TimingIsConsistentWithAndWithoutOverlap) {
  Communicator& comm = ddp_comm();
  constexpr uint64_t kSeed = 31;
  for (bool overlap : {true, false}) {
    SCOPED_TRACE(overlap ? "overlap" : "no overlap");
    SmallModel model(kSeed, kBatch);
    nn::DataParallel ddp(model.params(), comm, {0.25, 0.5, overlap});
    EXPECT_GT(ddp.bucket_count(), 4);
    EXPECT_EQ(ddp.world_size(), comm.size());
    model.params().zero_grad();
    model.step(make_batch(800, comm.rank(), 0, kBatch), &ddp);
    const nn::CommTiming& t = ddp.last_timing();
    EXPECT_GT(t.backward_s, 0.0);
    EXPECT_GE(t.exposed_s, 0.0);
    EXPECT_GE(t.comm_busy_s, 0.0);
    EXPECT_GE(t.hidden_fraction, 0.0);
    EXPECT_LE(t.hidden_fraction, 1.0);
    if (comm.size() == 1) {
      EXPECT_EQ(t.buckets, 0);
      EXPECT_EQ(t.bytes, 0);
      EXPECT_EQ(t.hidden_fraction, 1.0);
      continue;
    }
    EXPECT_EQ(t.buckets, ddp.bucket_count());
    EXPECT_EQ(t.bytes, static_cast<int64_t>(model.params().flat_grads().nbytes()));
    EXPECT_GT(t.comm_busy_s, 0.0);
    if (!overlap) {
      EXPECT_EQ(t.hidden_fraction, 0.0) << "every bucket ran after backward";
    }
    std::printf(
        "[rank %d] %s: backward %.1f ms, comm busy %.1f ms, exposed %.1f ms, hidden %.2f, "
        "%d buckets\n",
        comm.rank(), overlap ? "overlap" : "no overlap", t.backward_s * 1e3, t.comm_busy_s * 1e3,
        t.exposed_s * 1e3, t.hidden_fraction, t.buckets);
  }
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(DataParallel, UnknownDuplicateAndMissingReportsAreClearErrors) {
  Communicator& comm = ddp_comm();
  Stream stream;
  nn::ResNet model("resnet18", {.num_classes = testing::kClasses});
  model.allocate(Device::cpu(), stream);
  nn::ParameterSet& params = model.params();
  const int count = static_cast<int>(params.parameters().size());
  nn::DataParallel ddp(params, comm, kSmallBuckets);
  nn::Pass pass{stream, true, false, {}};

  ddp.begin_backward(pass);
  std::string message = error_of([&] { pass.grad_ready(count + 5); });
  EXPECT_NE(message.find("parameter id " + std::to_string(count + 5)), std::string::npos)
      << message;
  EXPECT_NE(message.find("not one of the " + std::to_string(count)), std::string::npos) << message;
  pass.grad_ready(0);
  message = error_of([&] { pass.grad_ready(0); });
  EXPECT_NE(message.find("'conv1.weight' (id 0) was reported ready twice"), std::string::npos)
      << message;
  for (int id = 1; id < count; ++id)
    pass.grad_ready(id);
  EXPECT_NO_THROW(ddp.end_backward(stream));

  // A parameter never reported: the error names it and how many were missing.
  ddp.begin_backward(pass);
  for (int id = 0; id < count; ++id)
    if (id != 3) pass.grad_ready(id);
  message = error_of([&] { ddp.end_backward(stream); });
  EXPECT_NE(message.find("1 of " + std::to_string(count) + " gradients were never reported"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(params.info(3).name), std::string::npos) << message;

  // no_sync installs no hook: nothing is checked, nothing communicated.
  ddp.begin_backward(pass, false);
  EXPECT_NO_THROW(pass.grad_ready(count + 5));
  ddp.end_backward(stream);

  EXPECT_NE(error_of([&] {
              nn::DataParallel(params, comm, {0.0, 25.0, true});
            }).find("first_bucket_mb must be a positive"),
            std::string::npos);
}

}  // namespace
}  // namespace engine
