// The machinery around the algorithms: collectives run in issue order whether blocking or
// async, a failure fails later collectives instead of desynchronizing the ranks, the
// watchdog ends the process with the timeout message (and stays quiet when work finishes),
// timeout messages name operation, rank and peer, and argument checks name the problem.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "collectives/collective_request.h"
#include "collectives/core/timeout.h"
#include "collectives/execution/host_executor.h"
#include "collectives/execution/watchdog.h"

namespace engine {
namespace {

using namespace std::chrono_literals;

TEST(HostExecutor, BlockingRunsAfterEveryQueuedJobInIssueOrder) {
  HostExecutor executor("test");
  std::vector<int> order;
  std::vector<Work> works;
  for (int i = 0; i < 5; ++i) {
    works.push_back(executor.submit([&order, i] {
      std::this_thread::sleep_for(5ms);
      order.push_back(i);
    }));
  }
  executor.run([&] { order.push_back(5); });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  for (Work& work : works)
    EXPECT_TRUE(work.test());
}

TEST(HostExecutor, WorkTestsFalseUntilTheJobHasRun) {
  HostExecutor executor("test");
  std::atomic<bool> release{false};
  Work work = executor.submit([&] {
    while (!release)
      std::this_thread::sleep_for(1ms);
  });
  EXPECT_FALSE(work.test());
  release = true;
  work.wait();
  EXPECT_TRUE(work.test());
}

TEST(HostExecutor, AFailureReachesItsWorkAndFailsEveryLaterCollective) {
  HostExecutor executor("ring-test");
  std::atomic<bool> release{false};
  Work failing = executor.submit([&] {
    while (!release)
      std::this_thread::sleep_for(1ms);
    throw Error("peer 3 vanished");
  });
  Work queued = executor.submit([] {});  // queued while the first is still running
  release = true;
  EXPECT_THROW(failing.wait(), Error);
  try {
    queued.wait();
    ADD_FAILURE() << "a collective queued after a failure ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("peer 3 vanished"), std::string::npos) << e.what();
  }
  EXPECT_THROW(executor.submit([] {}), Error);
  try {
    executor.run([] {});
    ADD_FAILURE() << "a blocking collective ran after a failure";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ring-test cannot run more collectives"),
              std::string::npos);
  }
}

TEST(Timeouts, MessageNamesOperationRankAndPeer) {
  OpContext context;
  context.op = "reduce_scatter";
  context.impl = "ring-mpi";
  context.sequence = 7;
  context.bytes = 1024;
  context.rank = 3;
  EXPECT_EQ(timeout_message(context, 2, "data from", 5.04),
            "reduce_scatter #7 (ring-mpi, 1024 bytes) timed out after 5.0 s: rank 3 waited for "
            "data from rank 2, which never answered");
  EXPECT_NE(timeout_message(context, -1, "the other ranks", 1).find("does not say which rank"),
            std::string::npos);
}

// Waits spin only while every rank's waiting thread and its compute threads each have a core.
TEST(Backoff, SpinsOnlyWhereEveryThreadWantingACoreHasOne) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  ASSERT_GT(cores, 0);
  EXPECT_GT(spin_iterations_for(1), 0);
  EXPECT_GT(spin_iterations_for(cores), 0);  // a benchmark: nothing computes beside the waits
  EXPECT_EQ(spin_iterations_for(cores + 1), 0);
  EXPECT_GT(spin_iterations_for(1, cores - 1), 0);
  EXPECT_EQ(spin_iterations_for(1, cores), 0);
  EXPECT_EQ(spin_iterations_for(cores, 1), 0);  // the CPU demo: 2 ranks of 1 thread, 2 cores
  EXPECT_GT(spin_iterations_for(1, -1), 0);     // no compute threads named
}

TEST(Timeouts, ThrowActionThrowsCollectiveTimeout) {
  OpContext context;
  context.on_timeout = TimeoutAction::throw_error;
  EXPECT_THROW(handle_timeout(context, 1, "data from", 0.1), CollectiveTimeout);
}

TEST(WatchdogDeathTest, EndsTheProcessWithTheMessageWhenACollectiveOverruns) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "death tests fork, which ThreadSanitizer does not support in threaded programs";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Watchdog watchdog;
        OpContext context;
        context.op = "all_reduce";
        context.impl = "mpi";
        context.sequence = 4;
        context.timeout = 50ms;
        watchdog.watch(context);
        std::this_thread::sleep_for(5s);
      },
      ::testing::ExitedWithCode(kCollectiveTimeoutExitCode),
      "all_reduce #4 \\(mpi, 0 bytes\\) timed out after 0\\.[0-9] s");
}

TEST(Watchdog, StaysQuietForCollectivesThatFinish) {
  Watchdog watchdog;
  OpContext context;
  context.timeout = 30ms;
  { const Watchdog::Scope scope(watchdog, context); }
  std::atomic<bool> done{false};
  watchdog.watch(context, [&] { return done.load(); });
  done = true;
  std::this_thread::sleep_for(100ms);  // past both deadlines: the process is still here
  SUCCEED();
}

CollectiveRequest request(CollectiveKind kind, int64_t in, int64_t out, int root = 0) {
  CollectiveRequest r;
  r.kind = kind;
  r.root = root;
  if (in >= 0) r.input = Tensor::empty({in}, DType::f32);
  if (out >= 0) r.output = Tensor::empty({out}, DType::f32);
  return r;
}

TEST(RequestValidation, AcceptsMatchingShapesAndNamesMismatches) {
  EXPECT_NO_THROW(validate_request(request(CollectiveKind::all_gather, 3, 12), 1, 4));
  EXPECT_NO_THROW(validate_request(request(CollectiveKind::reduce_scatter, 12, 3), 1, 4));
  EXPECT_NO_THROW(validate_request(request(CollectiveKind::gather, 3, -1, 0), 1, 4));
  EXPECT_NO_THROW(validate_request(request(CollectiveKind::scatter, -1, 3, 0), 1, 4));
  EXPECT_NO_THROW(validate_request(request(CollectiveKind::barrier, -1, -1), 0, 4));
  try {
    validate_request(request(CollectiveKind::all_gather, 3, 11), 2, 4);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all_gather on rank 2 (world 4): output"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(validate_request(request(CollectiveKind::gather, 3, -1, 0), 0, 4), Error);
  EXPECT_THROW(validate_request(request(CollectiveKind::broadcast, 3, 3, 4), 0, 4), Error);
  EXPECT_THROW(validate_request(request(CollectiveKind::all_reduce, -1, -1), 0, 4), Error);
  CollectiveRequest mixed = request(CollectiveKind::all_gather, 3, 12);
  mixed.output = Tensor::empty({12}, DType::bf16);
  EXPECT_THROW(validate_request(mixed, 0, 4), Error);
  // i32 tensors (labels, indices) are not reduced or sent: MPI and NCCL would take them for
  // bf16.
  CollectiveRequest integers = request(CollectiveKind::all_reduce, -1, -1);
  integers.input = integers.output = Tensor::empty({3}, DType::i32);
  try {
    validate_request(integers, 1, 4);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "all_reduce on rank 1 (world 4): i32[3] on cpu is not a float tensor"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace engine
