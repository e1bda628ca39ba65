// Every collective of every communicator this machine can run, under mpirun with 1-4 ranks
// (and as a plain process: a world of one), against results each rank computes locally:
// all reduce ops, f32, bf16 and f64, sizes 0, 1, world-1, primes, 1 MiB + 3 elements and (once
// per communicator) 64 MiB; async collectives overlapping with compute, many in flight at
// once, bit-identical results on every rank, and argument errors that leave the
// communicator usable. CUDA communicators run the same cases on GPUs and are skipped, with
// the reason, where there are none.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "collective_cases.h"
#include "collectives/buckets/grad_buckets.h"
#include "collectives/comm_factory.h"
#include "collectives/ring/hierarchical_communicator.h"
#include "kernels/cuda_graph.h"
#include "kernels/ops/copy.h"
#include "kernels/runtime.h"
#include "mpi_main.h"
#if ENGINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <future>

#include "kernels/cuda/check_cuda.h"
#endif

namespace engine {
namespace {

using testing::compare;
using testing::expected_reductions;
using testing::inputs;
using testing::session;

using testing::kDTypes;
using testing::kReduceOps;

// The dtypes every collective moves and reduces: the float dtypes and f64 (SyncBN's sums).
// The small-integer inputs are exact in each, so f64 results compare bit for bit too.
const std::vector<DType> kCollectiveDTypes = {DType::f32, DType::bf16, DType::f64};

// One communicator per implementation for the whole run (creating one is collective).
std::map<std::string, std::unique_ptr<Communicator>>& communicators() {
  static std::map<std::string, std::unique_ptr<Communicator>> cache;
  return cache;
}
class ReleaseCommunicators : public ::testing::Environment {
 public:
  void TearDown() override { communicators().clear(); }
};

// ring-hier's three stages on one machine: pretend hosts of two ranks each.
constexpr std::string_view kPretendHosts = "ring-hier-pairs";

class Collectives : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const bool pretend_hosts = GetParam() == kPretendHosts;
    std::string why = communicator_unavailable_reason(GetParam(), *session());
    if (pretend_hosts) {
      why = session()->size() % 2          ? "pretend hosts of two need an even world"
            : session()->world().hosts > 1 ? "the ranks span real hosts: see ring_hier"
                                           : "";
    }
    if (!why.empty()) GTEST_SKIP() << why;
    auto& comm = communicators()[GetParam()];
    if (!comm) {
      CommOptions options;
      options.timeout = std::chrono::seconds(60);  // a hang ends the job, never the CI
      if (pretend_hosts) {
        // Small segments: the pipeline runs many, the last one padded for odd counts.
        options.hierarchical.segment_bytes = 64 << 10;
        comm = make_hierarchical_communicator(session()->comm(), session()->rank() / 2, options,
                                              GetParam());
      } else {
        comm = make_communicator(GetParam(), *session(), options);
      }
    }
    comm_ = comm.get();
    device_ =
        GetParam().find("nccl") != std::string::npos ? session()->device("cuda") : Device::cpu();
    stream_ = std::make_unique<Stream>(device_);
    rank_ = comm_->rank();
    world_ = comm_->size();
  }

  Tensor tensor(const std::vector<float>& values, DType dtype) {
    return Tensor::from_floats({static_cast<int64_t>(values.size())}, values, dtype)
        .to(device_, *stream_);
  }
  std::vector<float> values(const Tensor& tensor) { return tensor.to_floats(*stream_); }
  void expect_values(const std::vector<float>& expected, const Tensor& actual,
                     const std::string& what) {
    const testing::Mismatch mismatch = compare(expected, values(actual));
    EXPECT_EQ(mismatch.count, 0) << what << ": " << mismatch.first;
  }
  std::string label(const char* op, DType dtype, int64_t count, ReduceOp reduce = ReduceOp::sum,
                    int root = 0) const {
    return testing::case_label(op, rank_, world_, dtype, count, reduce, root);
  }
  std::vector<int64_t> counts() const { return {0, 1, world_ - 1, 7, 13, 1021, 65537}; }
  std::vector<float> gathered(uint32_t seed, int64_t block) const {
    return testing::gathered_inputs(seed, world_, block);
  }

  Communicator* comm_ = nullptr;
  Device device_;
  std::unique_ptr<Stream> stream_;
  int rank_ = 0;
  int world_ = 1;
};

TEST_P(Collectives, AllReduceEveryOpDtypeAndSize) {
  uint32_t seed = 1;
  std::vector<int64_t> sizes = counts();
  sizes.push_back((int64_t{1} << 20) + 3);
  for (DType dtype : kCollectiveDTypes) {
    for (int64_t count : sizes) {
      for (ReduceOp op : kReduceOps) {
        ++seed;
        Tensor data = tensor(inputs(seed, rank_, count), dtype);
        comm_->all_reduce(data, op, *stream_);
        expect_values(expected_reductions(op, dtype, seed, world_, count), data,
                      label("all_reduce", dtype, count, op));
      }
    }
  }
}

TEST_P(Collectives, AllReduce64MiB) {
  const int64_t count = int64_t{16} << 20;  // 64 MiB of f32
  std::vector<float> mine(count), expected(count);
  for (int64_t i = 0; i < count; ++i) {
    const float base = static_cast<float>(i % 7) - 3.f;
    mine[i] = base + static_cast<float>(rank_);
    expected[i] = base * world_ + static_cast<float>(world_ * (world_ - 1) / 2);
  }
  Tensor data = tensor(mine, DType::f32);
  comm_->all_reduce(data, ReduceOp::sum, *stream_);
  expect_values(expected, data, label("all_reduce", DType::f32, count));
}

TEST_P(Collectives, ReduceScatterAndAllGather) {
  uint32_t seed = 1000;
  for (DType dtype : kCollectiveDTypes) {
    for (int64_t block : counts()) {
      for (ReduceOp op : kReduceOps) {
        ++seed;
        const Tensor input = tensor(inputs(seed, rank_, world_ * block), dtype);
        Tensor output = tensor(std::vector<float>(block, -99.f), dtype);
        comm_->reduce_scatter(input, output, op, *stream_);
        expect_values(expected_reductions(op, dtype, seed, world_, block, rank_ * block), output,
                      label("reduce_scatter", dtype, block, op));
      }
      const Tensor own = tensor(inputs(seed, rank_, block), dtype);
      Tensor all = tensor(std::vector<float>(world_ * block, -99.f), dtype);
      comm_->all_gather(own, all, *stream_);
      expect_values(gathered(seed, block), all, label("all_gather", dtype, block));
    }
  }
}

TEST_P(Collectives, BroadcastReduceGatherScatterFromEveryKindOfRoot) {
  uint32_t seed = 2000;
  for (DType dtype : kCollectiveDTypes) {
    for (int64_t count : counts()) {
      for (int root : {0, world_ - 1, world_ / 2}) {
        ++seed;
        Tensor data = tensor(inputs(seed, rank_, count), dtype);
        comm_->broadcast(data, root, *stream_);
        expect_values(inputs(seed, root, count), data,
                      label("broadcast", dtype, count, ReduceOp::sum, root));

        const ReduceOp op = kReduceOps[seed % 4];
        Tensor reduced = tensor(inputs(seed, rank_, count), dtype);
        comm_->reduce(reduced, root, op, *stream_);
        expect_values(rank_ == root ? expected_reductions(op, dtype, seed, world_, count)
                                    : inputs(seed, rank_, count),
                      reduced, label("reduce", dtype, count, op, root));

        const Tensor own = tensor(inputs(seed, rank_, count), dtype);
        Tensor at_root =
            rank_ == root ? tensor(std::vector<float>(world_ * count, -99.f), dtype) : Tensor();
        comm_->gather(own, at_root, root, *stream_);
        if (rank_ == root)
          expect_values(gathered(seed, count), at_root,
                        label("gather", dtype, count, ReduceOp::sum, root));

        const Tensor from_root =
            rank_ == root ? tensor(gathered(seed + 7, count), dtype) : Tensor();
        Tensor mine = tensor(std::vector<float>(count, -99.f), dtype);
        comm_->scatter(from_root, mine, root, *stream_);
        expect_values(inputs(seed + 7, rank_, count), mine,
                      label("scatter", dtype, count, ReduceOp::sum, root));
      }
    }
  }
}

TEST_P(Collectives, F64AllReduceKeepsTheDigitsF32Loses) {
  // Values near 1e8 with parts of 2^-20: no float holds them (an f32 path would round each to
  // a multiple of 8), every sum of up to 4 ranks is exact in fp64, so each rank computes the
  // expected bits locally whatever the order of reduction.
  for (int64_t count : {int64_t{1}, int64_t{2} * world_ + 1, int64_t{1021}, int64_t{65537}}) {
    auto value = [](int rank, int64_t i) {
      return 1e8 + 3.0 * rank + static_cast<double>((i * 7 + rank) % 1024) * 0x1p-20 -
             static_cast<double>(i % 5);
    };
    for (ReduceOp op : kReduceOps) {
      std::vector<double> mine(count), expected(count);
      for (int64_t i = 0; i < count; ++i) {
        mine[i] = value(rank_, i);
        double result = value(0, i);
        for (int r = 1; r < world_; ++r) {
          const double v = value(r, i);
          result = op == ReduceOp::max   ? std::max(result, v)
                   : op == ReduceOp::min ? std::min(result, v)
                                         : result + v;
        }
        expected[i] = op == ReduceOp::avg ? result / world_ : result;
      }
      Tensor data = Tensor::from_doubles({count}, mine).to(device_, *stream_);
      comm_->all_reduce(data, op, *stream_);
      const std::vector<double> got = data.to_doubles(*stream_);
      int64_t wrong = 0, first = -1;
      for (int64_t i = 0; i < count; ++i) {
        if (got[i] != expected[i] && wrong++ == 0) first = i;
      }
      EXPECT_EQ(wrong, 0) << label("all_reduce", DType::f64, count, op) << ": element " << first
                          << " is " << (first < 0 ? 0.0 : got[first]) << ", expected "
                          << (first < 0 ? 0.0 : expected[first]);
    }
  }
}

TEST_P(Collectives, BarrierWaitsForTheSlowestRank) {
  if (world_ == 1) GTEST_SKIP() << "a world of one has nobody to wait for";
  comm_->barrier();
  const auto start = std::chrono::steady_clock::now();
  if (rank_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  comm_->barrier();
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.25) << "rank " << rank_ << " left the barrier before rank 0 entered it";
}

TEST_P(Collectives, AsyncAllReduceOverlapsWithComputeOnTheCaller) {
  const int64_t count = (int64_t{1} << 20) + 3;
  Tensor data = tensor(inputs(77, rank_, count), DType::f32);
  Work work = comm_->all_reduce_async(data, ReduceOp::sum, *stream_);
  // The caller keeps computing while the collective runs elsewhere, polling test(). At least
  // one round runs even when the collective is already done (a world of one finishes at
  // once), so the result is always checked after compute on the caller's thread.
  std::vector<double> scratch(1 << 16, 1.0);
  double accumulated = 0;
  int64_t rounds = 0;
  do {
    for (double& v : scratch)
      accumulated += (v *= 1.0000001);
    ++rounds;
  } while (!work.test());
  work.wait();
  expect_values(expected_reductions(ReduceOp::sum, DType::f32, 77, world_, count), data,
                label("all_reduce_async", DType::f32, count) + " after " + std::to_string(rounds) +
                    " rounds of compute (checksum " + std::to_string(accumulated) + ")");
}

TEST_P(Collectives, ManyCollectivesInFlightAtOnceOnDifferentBuffers) {
  struct InFlight {
    Tensor tensor;
    std::vector<float> expected;
    std::string what;
    Work work;
  };
  std::vector<InFlight> flights;
  uint32_t seed = 3000;
  for (int k = 0; k < 16; ++k) {
    ++seed;
    const int64_t count = counts()[k % counts().size()] + k;
    const ReduceOp op = kReduceOps[k % 4];
    const DType dtype = kDTypes[(k / 4) % 2];
    InFlight flight{tensor(inputs(seed, rank_, count), dtype),
                    expected_reductions(op, dtype, seed, world_, count),
                    label("all_reduce_async", dtype, count, op), Work()};
    flight.work = comm_->all_reduce_async(flight.tensor, op, *stream_);
    flights.push_back(std::move(flight));
  }
  // Other collectives queue behind them, and a blocking one after those must still see
  // every earlier collective finished in order.
  const int64_t block = 1021;
  const Tensor own = tensor(inputs(++seed, rank_, block), DType::f32);
  Tensor all = tensor(std::vector<float>(world_ * block, -1.f), DType::f32);
  Work gather_work = comm_->all_gather_async(own, all, *stream_);
  Tensor shared = tensor(inputs(seed, rank_, 4099), DType::bf16);
  Work broadcast_work = comm_->broadcast_async(shared, world_ - 1, *stream_);
  Work barrier_work = comm_->barrier_async();
  Tensor last = tensor(inputs(seed + 1, rank_, 999), DType::f32);
  comm_->all_reduce(last, ReduceOp::max, *stream_);
  expect_values(expected_reductions(ReduceOp::max, DType::f32, seed + 1, world_, 999), last,
                "blocking after async");

  barrier_work.wait();
  broadcast_work.wait();
  gather_work.wait();
  expect_values(inputs(seed, world_ - 1, 4099), shared, "broadcast_async");
  expect_values(gathered(seed, block), all, "all_gather_async");
  for (auto it = flights.rbegin(); it != flights.rend(); ++it) {
    it->work.wait();
    EXPECT_TRUE(it->work.test());
    expect_values(it->expected, it->tensor, it->what);
  }
}

TEST_P(Collectives, ResultsAreBitIdenticalOnEveryRankForInexactInputs) {
  for (int64_t count : {int64_t{5}, int64_t{100003}}) {
    std::vector<float> mine(count);
    for (int64_t i = 0; i < count; ++i)
      mine[i] = 1.f / (1.f + rank_ + 0.37f * i);
    Tensor data = tensor(mine, DType::f32);
    comm_->all_reduce(data, ReduceOp::sum, *stream_);
    std::vector<float> result = values(data), from_rank0 = result;
    MPI_Bcast(from_rank0.data(), static_cast<int>(count), MPI_FLOAT, 0, session()->comm());
    EXPECT_EQ(compare(from_rank0, result).count, 0) << "rank " << rank_ << " differs from rank 0";
    double expected = 0;
    for (int r = 0; r < world_; ++r)
      expected += 1.0 / (1.0 + r + 0.37 * 3);
    EXPECT_NEAR(result[3], expected, 1e-5 * world_);
  }
}

TEST_P(Collectives, ArgumentErrorsNameTheProblemAndLeaveTheCommunicatorUsable) {
  const Tensor input = tensor(std::vector<float>(4, 1.f), DType::f32);
  Tensor wrong = tensor(std::vector<float>(4 * world_ + 1, 0.f), DType::f32);
  try {
    comm_->all_gather(input, wrong, *stream_);
    ADD_FAILURE() << "all_gather with a wrong output size did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all_gather on rank " + std::to_string(rank_)),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(comm_->broadcast(wrong, world_, *stream_), Error);  // root out of range
  Tensor data = tensor(inputs(5, rank_, 33), DType::f32);
  comm_->all_reduce(data, ReduceOp::sum, *stream_);
  expect_values(expected_reductions(ReduceOp::sum, DType::f32, 5, world_, 33), data,
                "after errors");
}

// The reducer of data parallelism on a GPU queues whole steps without waiting for the device
// (GradBuckets: alternating event sets, timings read when asked):
// with the compute stream held, two steps of GradBuckets (begin, every range reported,
// finish) return on the host; released, both steps' all-reduces complete with the average and
// take_timings() reports both. (Waiting for a step's events each step, as last_timing() did,
// hangs here until the hold is released, and the case fails.)
TEST_P(Collectives, GradBucketsQueueStepsWithoutWaitingForTheDevice) {
  if (!device_.is_cuda()) GTEST_SKIP() << "the CPU path has no device to wait for";
#if ENGINE_HAVE_CUDA
  constexpr int64_t kRange = 16384;  // floats: 64 KiB per range, one range per bucket
  const int ranges = 4;
  std::vector<GradRange> layout;
  for (int r = 0; r < ranges; ++r)
    layout.push_back({r * kRange, kRange, "range" + std::to_string(r)});
  std::vector<float> mine(ranges * kRange), expected(ranges * kRange);
  for (int64_t i = 0; i < ranges * kRange; ++i) {
    mine[i] = static_cast<float>((i % 5) + 2 * rank_);
    expected[i] = static_cast<float>(i % 5) + static_cast<float>(world_ - 1);  // the average
  }
  Tensor flat = tensor(mine, DType::f32);
  stream_->synchronize();
  GradBucketOptions options;
  options.first_bucket_bytes = kRange * 4;
  options.bucket_cap_bytes = kRange * 4;
  GradBuckets buckets(flat, layout, *comm_, options);
  ASSERT_EQ(static_cast<int>(buckets.buckets().size()), ranges);
  const int all_reduced = world_ > 1 ? ranges : 0;  // a world of one communicates nothing

  struct Gate {
    std::promise<void> promise;
    std::shared_future<void> future = promise.get_future().share();
  } gate;
  CHECK_CUDA(cudaLaunchHostFunc(
      stream_->native(), [](void* g) { static_cast<Gate*>(g)->future.wait(); }, &gate));
  auto steps = std::async(std::launch::async, [&] {
    for (int step = 0; step < 2; ++step) {
      buckets.begin(*stream_);
      for (int r = ranges - 1; r >= 0; --r)
        buckets.mark_ready(r);
      buckets.finish(*stream_);
    }
  });
  const bool returned = steps.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  gate.promise.set_value();
  steps.get();
  EXPECT_TRUE(returned) << "two steps of GradBuckets waited for a held compute stream";
  const std::vector<GradBucketTiming> timings = buckets.take_timings();
  ASSERT_EQ(timings.size(), 2u);
  for (const GradBucketTiming& t : timings)
    EXPECT_EQ(t.buckets, all_reduced);
  EXPECT_TRUE(buckets.take_timings().empty());
  expect_values(expected, flat, "flat gradients after two averaging steps");
#endif
}

// A GradBuckets step (begin, every range reported, finish) captured into a CUDA graph records the
// buckets' all-reduces without running them; each launch of the graph then averages what the
// gradients hold at that moment, and replayed() counts each launch as a step, untimed where it
// communicated. An eager step, the capture, then three launches on new gradients each, watched
// against the timeout.
TEST_P(Collectives, GradBucketsCapturedIntoACudaGraphAverageAtEveryLaunch) {
  if (!device_.is_cuda()) GTEST_SKIP() << "CUDA graphs capture device work only";
  ASSERT_TRUE(comm_->capturable()) << GetParam();
  constexpr int64_t kRange = 4099;  // floats: one range per bucket, an odd size
  const int ranges = 3;
  std::vector<GradRange> layout;
  for (int r = 0; r < ranges; ++r)
    layout.push_back({r * kRange, kRange, "range" + std::to_string(r)});
  const auto gradients = [&](int launch, int rank) {
    std::vector<float> values(ranges * kRange);
    for (int64_t i = 0; i < ranges * kRange; ++i)
      values[i] = static_cast<float>((i % 5) + 2 * rank + 10 * launch);
    return values;
  };
  const std::vector<float> before = gradients(-1, rank_);
  Tensor flat = tensor(before, DType::f32);
  GradBucketOptions options;
  options.first_bucket_bytes = kRange * 4;
  options.bucket_cap_bytes = kRange * 4;
  GradBuckets buckets(flat, layout, *comm_, options);
  const auto step = [&] {
    buckets.begin(*stream_);
    for (int r = 0; r < ranges; ++r)
      buckets.mark_ready(r);
    buckets.finish(*stream_);
  };
  // Run once first, as the trainer does: what a collective sets up on first use (the ring's
  // scratch buffers) cannot be allocated while captured.
  step();
  ASSERT_EQ(buckets.take_timings().size(), 1u);
  const std::vector<float> after_eager_step = values(flat);
  const CudaGraph graph = CudaGraph::capture(*stream_, "a GradBuckets step", step);
  expect_values(after_eager_step, flat, "the gradients after the capture (nothing ran)");
  EXPECT_TRUE(buckets.take_timings().empty()) << "a capture is not a step";
  for (int launch = 0; launch < 3; ++launch) {
    copy(tensor(gradients(launch, rank_), DType::f32), flat, *stream_);
    graph.replay(*stream_);
    buckets.replayed(true);
    comm_->watch_queued(*stream_, "a test's CUDA graph launch");
    std::vector<float> average(ranges * kRange);  // exact: the ranks' values differ by 2 each
    for (int64_t i = 0; i < ranges * kRange; ++i)
      average[i] = static_cast<float>((i % 5) + 10 * launch + (world_ - 1));
    expect_values(average, flat, "launch " + std::to_string(launch));
  }
  const std::vector<GradBucketTiming> timings = buckets.take_timings();
  ASSERT_EQ(timings.size(), 3u);
  for (const GradBucketTiming& t : timings) {
    EXPECT_EQ(t.measured, world_ == 1);
    EXPECT_EQ(t.buckets, world_ > 1 ? ranges : 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Communicators, Collectives,
                         ::testing::Values("ring-shm", "ring-mpi", "ring-hier",
                                           std::string(kPretendHosts), "mpi", "ring-nccl", "nccl"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// The placement the bootstrap should find, from every rank's host name alone: on one host
// (CI) and on simulated hosts (tests/hosts) under --map-by slot or node.
TEST(Bootstrap, WorldMatchesMpiAndLocalRanksNumberEachHost) {
  int size = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(mine, &length);
  std::vector<char> all(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, MPI_COMM_WORLD);
  std::map<std::string, int> per_host;
  int local_rank = -1;
  for (int r = 0; r < size; ++r) {
    const std::string host(all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME);
    if (r == rank) local_rank = per_host[host];
    ++per_host[host];
  }
  const int local_size = per_host[mine];
  const bool alike = std::all_of(per_host.begin(), per_host.end(),
                                 [&](const auto& host) { return host.second == local_size; });

  const WorldInfo& world = session()->world();
  EXPECT_EQ(world.size, size);
  EXPECT_EQ(world.rank, rank);
  EXPECT_EQ(world.local_size, local_size) << "on " << mine;
  EXPECT_EQ(world.local_rank, local_rank) << "on " << mine;
  EXPECT_EQ(world.hosts, static_cast<int>(per_host.size()));
  EXPECT_EQ(world.same_ranks_per_host, alike);
  EXPECT_EQ(process_rank(), size > 1 ? rank : -1);
  const CommChoice choice = choose_host_communicator(world);
  EXPECT_EQ(choice.name, per_host.size() == 1      ? "ring-shm"
                         : alike && local_size > 1 ? "ring-hier"
                                                   : "ring-mpi")
      << choice.why;
}

// Each rank seeing one GPU (CUDA_VISIBLE_DEVICES per rank, as SLURM's --gpus-per-task=1
// sets it): accepted as cuda:0 when the ranks' GPUs differ, refused naming the ranks when
// two see the same one. Run on the sim device by collectives_mpi_test_sim_{own,shared}_gpu.
TEST(Bootstrap, OneGpuPerRankIsItsCuda0UnlessShared) {
  const WorldInfo& world = session()->world();
  if (cuda_device_count() != 1 || world.local_size < 2)
    GTEST_SKIP() << "needs ranks on one host that each see one CUDA device";
  constexpr int kBytes = 64;
  char mine[kBytes] = {};
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
    std::string(visible).copy(mine, kBytes - 1);
  std::vector<char> all(static_cast<size_t>(world.size) * kBytes);
  MPI_Allgather(mine, kBytes, MPI_CHAR, all.data(), kBytes, MPI_CHAR, MPI_COMM_WORLD);
  std::set<std::string> distinct;
  for (int r = 0; r < world.size; ++r)
    distinct.insert(all.data() + static_cast<size_t>(r) * kBytes);
  if (distinct.size() == static_cast<size_t>(world.size)) {
    EXPECT_EQ(session()->device("cuda"), Device::cuda(0));
    EXPECT_EQ(session()->device("auto"), Device::cuda(0));
    return;
  }
  try {
    session()->device("cuda");
    ADD_FAILURE() << "two ranks on one GPU were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("local ranks 0 and 1 see the same one (UUID "),
              std::string::npos)
        << e.what();
  }
}

TEST(Bootstrap, UnknownCommunicatorSaysWhichExist) {
  try {
    make_communicator("ring-carrier-pigeon", *session());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ring-shm, ring-mpi"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace engine

int main(int argc, char** argv) {
  ::testing::AddGlobalTestEnvironment(new engine::ReleaseCommunicators);
  return engine::testing::run_all_tests_on_every_rank(argc, argv);
}
