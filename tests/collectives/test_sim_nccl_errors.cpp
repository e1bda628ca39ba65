// The sim device's NCCL shim when things go wrong: ncclCommAbort from another thread ends a
// receive that would wait forever (within a bound) and leaves the asynchronous error; queued
// work behind it does nothing; a receive of another size than its send is reported; bad
// arguments give NCCL's result codes with ncclGetLastError naming the call, rank and argument;
// ncclCommInitRank refuses bad ranks, foreign ids, a rank on another host and ranks that
// disagree on nranks.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "sim_nccl_ranks.h"

namespace engine {
namespace {

using testing::join_sim_ranks;
using testing::release_sim_ranks;
using testing::SimRank;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The call fails with `status` and ncclGetLastError contains `text`.
#define EXPECT_NCCL_FAILS(call, status, text)                                    \
  do {                                                                           \
    EXPECT_EQ((call), (status)) << #call;                                        \
    const std::string last = ncclGetLastError(nullptr);                          \
    EXPECT_NE(last.find(text), std::string::npos) << #call << " said: " << last; \
  } while (0)

TEST(SimNcclAbort, AbortFromAnotherThreadEndsABlockedRecvAndSetsTheAsyncError) {
  std::vector<SimRank> ranks = join_sim_ranks(2);
  SimRank& waiter = ranks[0];
  void* landing = nullptr;
  void* untouched = nullptr;
  ASSERT_EQ(cudaMalloc(&landing, 4096), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&untouched, 64), cudaSuccess);
  const std::vector<unsigned char> pattern(64, 0x5a);
  ASSERT_EQ(cudaMemcpyAsync(untouched, pattern.data(), 64, cudaMemcpyHostToDevice, waiter.stream),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(waiter.stream), cudaSuccess);
  // Rank 1 never sends: the first receive blocks the stream, the second is queued behind it.
  ASSERT_EQ(ncclRecv(landing, 1024, ncclFloat32, 1, waiter.comm, waiter.stream), ncclSuccess);
  ASSERT_EQ(ncclRecv(untouched, 64, ncclUint8, 1, waiter.comm, waiter.stream), ncclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(cudaStreamQuery(waiter.stream), cudaErrorNotReady) << "the receive did not block";

  const Clock::time_point start = Clock::now();
  std::thread watchdog([&] { EXPECT_EQ(ncclCommAbort(waiter.comm), ncclSuccess); });
  watchdog.join();
  EXPECT_EQ(cudaStreamSynchronize(waiter.stream), cudaSuccess);
  const double took = seconds_since(start);
  EXPECT_LT(took, 0.5) << "abort and the stream's return took " << took << " s";

  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(waiter.comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSystemError);
  const std::string why = ncclGetLastError(waiter.comm);
  EXPECT_NE(why.find("ncclRecv on rank 0 of 2 was receiving 4096 bytes from rank 1"),
            std::string::npos)
      << why;
  std::vector<unsigned char> after(64);
  ASSERT_EQ(cudaMemcpyAsync(after.data(), untouched, 64, cudaMemcpyDeviceToHost, waiter.stream),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(waiter.stream), cudaSuccess);
  EXPECT_EQ(after, pattern) << "the queued receive ran after abort";

  EXPECT_NCCL_FAILS(ncclSend(landing, 1, ncclFloat32, 1, waiter.comm, waiter.stream),
                    ncclInvalidUsage, "ncclSend on rank 0 of 2: the communicator was aborted");
  EXPECT_EQ(cudaFree(landing), cudaSuccess);
  EXPECT_EQ(cudaFree(untouched), cudaSuccess);
  release_sim_ranks(ranks);  // destroying an aborted communicator is allowed here
}

TEST(SimNcclAbort, AReceiveOfAnotherSizeIsReportedAndWaitsForAbort) {
  std::vector<SimRank> ranks = join_sim_ranks(2);
  void* data[2] = {nullptr, nullptr};
  for (void*& d : data)
    ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
  ASSERT_EQ(ncclSend(data[0], 2, ncclFloat32, 1, ranks[0].comm, ranks[0].stream), ncclSuccess);
  ASSERT_EQ(ncclRecv(data[1], 4, ncclFloat32, 0, ranks[1].comm, ranks[1].stream), ncclSuccess);
  EXPECT_EQ(cudaStreamSynchronize(ranks[0].stream), cudaSuccess);  // the send got through
  ncclResult_t async = ncclSuccess;
  const Clock::time_point start = Clock::now();
  while (async == ncclSuccess && seconds_since(start) < 5) {
    ASSERT_EQ(ncclCommGetAsyncError(ranks[1].comm, &async), ncclSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(async, ncclInvalidUsage);
  const std::string why = ncclGetLastError(ranks[1].comm);
  EXPECT_NE(why.find("ncclRecv on rank 1 of 2: expected 16 bytes from rank 0, whose matching "
                     "send has 8"),
            std::string::npos)
      << why;
  EXPECT_EQ(cudaStreamQuery(ranks[1].stream), cudaErrorNotReady);
  EXPECT_EQ(ncclCommAbort(ranks[1].comm), ncclSuccess);
  EXPECT_EQ(cudaStreamSynchronize(ranks[1].stream), cudaSuccess);
  for (void* d : data)
    EXPECT_EQ(cudaFree(d), cudaSuccess);
  release_sim_ranks(ranks);
}

// Rank 1 is a child process that joins and exits: rank 0's receive from it reports
// ncclRemoteError naming the process (the child stays a zombie until reaped, as under a slow
// mpirun daemon), and, as with NCCL, keeps waiting until ncclCommAbort.
TEST(SimNcclAbort, APeerWhoseProcessExitedIsTheAsyncRemoteErrorUntilAbort) {
  ncclUniqueId id{};
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ncclComm_t comm = nullptr;
    _exit(ncclCommInitRank(&comm, 2, id, 1) == ncclSuccess ? 0 : 1);
  }
  SimRank me;
  ASSERT_EQ(ncclCommInitRank(&me.comm, 2, id, 0), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_EQ(cudaStreamCreate(&me.stream), cudaSuccess);
  void* landing = nullptr;
  ASSERT_EQ(cudaMalloc(&landing, 64), cudaSuccess);
  ASSERT_EQ(ncclRecv(landing, 16, ncclFloat32, 1, me.comm, me.stream), ncclSuccess);
  ncclResult_t async = ncclSuccess;
  const Clock::time_point start = Clock::now();
  while (async == ncclSuccess && seconds_since(start) < 10) {
    ASSERT_EQ(ncclCommGetAsyncError(me.comm, &async), ncclSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(async, ncclRemoteError);
  const std::string why = ncclGetLastError(me.comm);
  EXPECT_NE(why.find("ncclRecv on rank 0 of 2: peer rank 1 (process " + std::to_string(child) +
                     ") has exited"),
            std::string::npos)
      << why;
  EXPECT_EQ(cudaStreamQuery(me.stream), cudaErrorNotReady) << "the receive did not wait";
  EXPECT_EQ(ncclCommAbort(me.comm), ncclSuccess);
  EXPECT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
  int status = -1;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed to join";
  EXPECT_EQ(cudaFree(landing), cudaSuccess);
  std::vector<SimRank> ranks{me};
  release_sim_ranks(ranks);
}

TEST(SimNcclArguments, BadArgumentsGiveNcclsCodesAndNameTheCallRankAndArgument) {
  std::vector<SimRank> ranks = join_sim_ranks(1);
  const ncclComm_t comm = ranks[0].comm;
  const cudaStream_t stream = ranks[0].stream;
  void* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, 1024), cudaSuccess);
  float host[4] = {};

  EXPECT_NCCL_FAILS(ncclSend(buffer, 1, ncclFloat32, 0, nullptr, stream), ncclInvalidArgument,
                    "ncclSend: comm is NULL");
  EXPECT_NCCL_FAILS(ncclAllReduce(buffer, buffer, 1, ncclFloat32, ncclSum,
                                  reinterpret_cast<ncclComm_t>(uintptr_t{12345}), stream),
                    ncclInvalidArgument, "ncclAllReduce: comm 0x3039 is not a live communicator");
  EXPECT_NCCL_FAILS(ncclSend(buffer, 1, ncclFloat32, 5, comm, stream), ncclInvalidArgument,
                    "ncclSend on rank 0 of 1: peer 5 is out of range (0..0)");
  EXPECT_NCCL_FAILS(ncclRecv(buffer, 1, ncclFloat32, -1, comm, stream), ncclInvalidArgument,
                    "ncclRecv on rank 0 of 1: peer -1 is out of range");
  EXPECT_NCCL_FAILS(ncclBroadcast(buffer, buffer, 1, ncclFloat32, 3, comm, stream),
                    ncclInvalidArgument, "ncclBroadcast on rank 0 of 1: root 3 is out of range");
  EXPECT_NCCL_FAILS(ncclSend(buffer, 1, static_cast<ncclDataType_t>(42), 0, comm, stream),
                    ncclInvalidArgument, "ncclSend on rank 0 of 1: invalid datatype 42");
  EXPECT_NCCL_FAILS(
      ncclAllReduce(buffer, buffer, 1, ncclFloat32, static_cast<ncclRedOp_t>(99), comm, stream),
      ncclInvalidArgument, "ncclAllReduce on rank 0 of 1: invalid reduction op 99");
  EXPECT_NCCL_FAILS(ncclReduce(buffer, buffer, 1, ncclFloat32, ncclProd, 0, comm, stream),
                    ncclInvalidArgument, "ncclProd is not reduced");
  EXPECT_NCCL_FAILS(ncclReduceScatter(buffer, buffer, 1, ncclFloat16, ncclSum, comm, stream),
                    ncclInvalidArgument, "datatype 6 is not reduced");
  EXPECT_NCCL_FAILS(ncclAllGather(buffer, buffer, SIZE_MAX / 2, ncclFloat32, comm, stream),
                    ncclInvalidArgument, "ncclAllGather on rank 0 of 1: count");
  EXPECT_NCCL_FAILS(ncclSend(host, 4, ncclFloat32, 0, comm, stream), ncclInvalidArgument,
                    "(16 bytes) is not device memory");
  EXPECT_NCCL_FAILS(
      ncclRecv(static_cast<std::byte*>(buffer) + 1000, 8, ncclFloat32, 0, comm, stream),
      ncclInvalidArgument, "runs past the end of its 1024-byte allocation");
  EXPECT_NCCL_FAILS(ncclAllReduce(nullptr, buffer, 4, ncclFloat32, ncclSum, comm, stream),
                    ncclInvalidArgument, "sendbuff (nil) (16 bytes) is NULL");
  EXPECT_NCCL_FAILS(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart");
  EXPECT_STREQ(ncclGetErrorString(ncclInvalidArgument), "invalid argument");
  EXPECT_STREQ(ncclGetErrorString(ncclRemoteError),
               "remote process exited or there was a network error");

  // A bad call inside a group fails the group, whose other calls are dropped.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(buffer, 1, ncclFloat32, 0, comm, stream), ncclSuccess);
  EXPECT_EQ(ncclRecv(buffer, 1, ncclFloat32, 7, comm, stream), ncclInvalidArgument);
  EXPECT_NCCL_FAILS(ncclGroupEnd(), ncclInvalidArgument, "ncclRecv on rank 0 of 1: peer 7");
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  // Zero elements need no buffer, and the communicator still works.
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm, stream), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 256, ncclFloat32, ncclMax, comm, stream), ncclSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  EXPECT_NCCL_FAILS(ncclCommGetAsyncError(comm, nullptr), ncclInvalidArgument,
                    "asyncError is NULL");
  EXPECT_EQ(cudaFree(buffer), cudaSuccess);
  release_sim_ranks(ranks);
}

// A rank on another host (a child in a UTS namespace of its own, with another hostname) is
// refused at once with a message naming both hosts, not left to the join timeout.
TEST(SimNcclInit, InitRefusesARankOnAnotherHost) {
  ncclUniqueId id{};
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  int report[2] = {-1, -1};
  ASSERT_EQ(pipe(report), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(report[0]);
    std::string text;
    ncclResult_t status = ncclSuccess;
    if (unshare(CLONE_NEWUTS) != 0 || sethostname("elsewhere", 9) != 0) {
      text = "SKIP";
    } else {
      ncclComm_t comm = nullptr;
      status = ncclCommInitRank(&comm, 2, id, 1);
      text = std::to_string(static_cast<int>(status)) + " " + ncclGetLastError(nullptr);
    }
    const ssize_t written = write(report[1], text.data(), text.size());
    _exit(written == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  close(report[1]);
  std::string text;
  char buffer[512];
  for (ssize_t got; (got = read(report[0], buffer, sizeof(buffer))) > 0;)
    text.append(buffer, static_cast<size_t>(got));
  close(report[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (text == "SKIP") GTEST_SKIP() << "no UTS namespace here (needs root)";
  EXPECT_EQ(text.substr(0, text.find(' ')), std::to_string(static_cast<int>(ncclInvalidUsage)))
      << text;
  char here[64] = {};
  gethostname(here, sizeof(here) - 1);
  EXPECT_NE(text.find("ncclCommInitRank on rank 1 of 2: the sim device's NCCL joins the ranks "
                      "of one host, but the unique id was made on host " +
                      std::string(here) + " and this rank runs on host elsewhere"),
            std::string::npos)
      << text;
}

TEST(SimNcclInit, InitRefusesBadRanksForeignIdsAndRanksThatDisagreeOnNranks) {
  ncclUniqueId id{};
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_NCCL_FAILS(ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument,
                    "ncclCommInitRank on rank 0 of 0: nranks must be at least 1");
  EXPECT_NCCL_FAILS(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument,
                    "ncclCommInitRank on rank 2 of 2: rank is out of range (0..1)");
  EXPECT_NCCL_FAILS(ncclCommInitRank(nullptr, 2, id, 0), ncclInvalidArgument, "comm is NULL");
  ncclUniqueId foreign{};
  foreign.internal[0] = 'x';
  EXPECT_NCCL_FAILS(ncclCommInitRank(&comm, 1, foreign, 0), ncclInvalidArgument,
                    "the unique id was not made by ncclGetUniqueId");
  EXPECT_NCCL_FAILS(ncclGetUniqueId(nullptr), ncclInvalidArgument, "uniqueId is NULL");

  // Rank 0 says 2 ranks, rank 1 says 3: rank 1 is refused at once, and rank 0, left alone,
  // gives up after the join timeout instead of waiting forever.
  ASSERT_EQ(setenv("ENGINE_SIM_NCCL_INIT_TIMEOUT_S", "1", 1), 0);
  ncclResult_t first = ncclSuccess;
  std::string first_why;
  const Clock::time_point start = Clock::now();
  std::thread rank0([&] {
    ncclComm_t c = nullptr;
    first = ncclCommInitRank(&c, 2, id, 0);
    first_why = ncclGetLastError(nullptr);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_NCCL_FAILS(ncclCommInitRank(&comm, 3, id, 1), ncclInvalidUsage,
                    "ncclCommInitRank on rank 1 of 3: the ranks disagree on nranks");
  rank0.join();
  unsetenv("ENGINE_SIM_NCCL_INIT_TIMEOUT_S");
  EXPECT_EQ(first, ncclSystemError);
  EXPECT_NE(first_why.find("ncclCommInitRank on rank 0 of 2: only 1 of 2 ranks joined within"),
            std::string::npos)
      << first_why;
  EXPECT_LT(seconds_since(start), 3.0);
}

}  // namespace
}  // namespace engine
