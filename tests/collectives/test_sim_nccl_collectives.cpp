// The sim device's NCCL shim with threads as ranks (1-3): a grouped send/recv ring larger
// than a pair's byte ring, sends to oneself, an all-reduce captured into a CUDA graph, and every
// collective for every datatype and op the engine uses, out of place and in place, against a CPU
// reference that folds the ranks in the order 0..n-1 with one rounding per step. Inputs are inexact
// (1/(1+r+0.37i)), so the results must match bit for bit only because the order is fixed, and must
// be the same bits on every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/bfloat16.h"
#include "sim_nccl_ranks.h"

namespace engine {
namespace {

using testing::device_copy;
using testing::host_copy;
using testing::join_sim_ranks;
using testing::on_every_rank;
using testing::release_sim_ranks;
using testing::SimRank;

// How the test stores, loads and reduces an element type: float and double as themselves,
// bf16 through float (one rounding per step, as NCCL's and the shim's reductions).
template <typename T>
struct Nccl {
  static constexpr ncclDataType_t type = std::is_same_v<T, float> ? ncclFloat32 : ncclFloat64;
  using Math = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};
template <>
struct Nccl<bf16> {
  static constexpr ncclDataType_t type = ncclBfloat16;
  using Math = float;
  static float load(bf16 v) { return to_float(v); }
  static bf16 store(float v) { return bf16(v); }
};

template <typename T>
T input(int rank, int64_t i) {
  const double v = (i % 3 == 0 ? -1.0 : 1.0) / (1.0 + rank + 0.37 * static_cast<double>(i));
  return Nccl<T>::store(static_cast<typename Nccl<T>::Math>(v));
}

template <typename T>
std::vector<T> inputs(int rank, int64_t count, int64_t first = 0) {
  std::vector<T> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = input<T>(rank, first + i);
  return values;
}

// Rank 0's value op rank 1's ... op rank n-1's, rounded to T after each step; avg divides once,
// on the last step, before that rounding.
template <typename T>
T reference(ncclRedOp_t op, int nranks, int64_t i) {
  using Math = typename Nccl<T>::Math;
  T acc = input<T>(0, i);
  for (int r = 1; r < nranks; ++r) {
    const Math a = Nccl<T>::load(acc), b = Nccl<T>::load(input<T>(r, i));
    Math v = op == ncclMax   ? ((a > b || a != a) ? a : b)
             : op == ncclMin ? ((a < b || a != a) ? a : b)
                             : a + b;
    if (op == ncclAvg && r == nranks - 1) v = v / static_cast<Math>(nranks);
    acc = Nccl<T>::store(v);
  }
  return acc;
}

template <typename T>
std::vector<T> references(ncclRedOp_t op, int nranks, int64_t count, int64_t first = 0) {
  std::vector<T> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = reference<T>(op, nranks, first + i);
  return values;
}

template <typename T>
void expect_bits(const std::vector<T>& expected, const std::vector<std::byte>& actual,
                 const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size() * sizeof(T)) << what;
  int64_t wrong = 0, first = -1;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&expected[i], actual.data() + i * sizeof(T), sizeof(T)) != 0 && wrong++ == 0) {
      first = static_cast<int64_t>(i);
    }
  }
  EXPECT_EQ(wrong, 0) << what << ": first wrong element " << first;
}

template <typename T>
class SimNcclCollectives : public ::testing::Test {};
using Types = ::testing::Types<float, double, bf16>;
TYPED_TEST_SUITE(SimNcclCollectives, Types);

constexpr ncclRedOp_t kOps[] = {ncclSum, ncclAvg, ncclMax, ncclMin};
const char* op_name(ncclRedOp_t op) {
  return op == ncclSum ? "sum" : op == ncclAvg ? "avg" : op == ncclMax ? "max" : "min";
}

TYPED_TEST(SimNcclCollectives, EveryCollectiveAndOpMatchesTheFixedOrderReference) {
  using T = TypeParam;
  constexpr ncclDataType_t type = Nccl<T>::type;
  const int64_t count = 1031;
  const size_t bytes = count * sizeof(T);
  for (int nranks = 1; nranks <= 3; ++nranks) {
    std::vector<SimRank> ranks = join_sim_ranks(nranks);
    for (ncclRedOp_t op : kOps) {
      on_every_rank(ranks, [&](SimRank& me) {
        const std::string where = std::string(op_name(op)) + " on rank " + std::to_string(me.rank) +
                                  " of " + std::to_string(nranks);
        const std::vector<T> mine = inputs<T>(me.rank, count);
        const std::vector<T> all_reduced = references<T>(op, nranks, count);
        void* send = device_copy(mine.data(), bytes, me.stream);
        void* recv = device_copy(mine.data(), bytes, me.stream);
        void* in_place = device_copy(mine.data(), bytes, me.stream);
        ASSERT_EQ(ncclAllReduce(send, recv, count, type, op, me.comm, me.stream), ncclSuccess);
        ASSERT_EQ(ncclAllReduce(in_place, in_place, count, type, op, me.comm, me.stream),
                  ncclSuccess);
        expect_bits(all_reduced, host_copy(recv, bytes, me.stream), "all_reduce " + where);
        expect_bits(all_reduced, host_copy(in_place, bytes, me.stream),
                    "in-place all_reduce " + where);

        // reduce to the last rank: the others keep their recvbuff.
        const int root = nranks - 1;
        void* reduced = device_copy(mine.data(), bytes, me.stream);
        ASSERT_EQ(ncclReduce(send, reduced, count, type, op, root, me.comm, me.stream),
                  ncclSuccess);
        expect_bits(me.rank == root ? all_reduced : mine, host_copy(reduced, bytes, me.stream),
                    "reduce " + where);

        // reduce-scatter: rank r's block of the reduction of everyone's n blocks.
        const std::vector<T> blocks = inputs<T>(me.rank, count * nranks);
        void* scattered_in = device_copy(blocks.data(), bytes * nranks, me.stream);
        void* scattered_out = device_copy(mine.data(), bytes, me.stream);
        ASSERT_EQ(
            ncclReduceScatter(scattered_in, scattered_out, count, type, op, me.comm, me.stream),
            ncclSuccess);
        auto* own_block = static_cast<std::byte*>(scattered_in) + me.rank * bytes;
        ASSERT_EQ(ncclReduceScatter(scattered_in, own_block, count, type, op, me.comm, me.stream),
                  ncclSuccess);
        const std::vector<T> my_block = references<T>(op, nranks, count, me.rank * count);
        expect_bits(my_block, host_copy(scattered_out, bytes, me.stream),
                    "reduce_scatter " + where);
        expect_bits(my_block, host_copy(own_block, bytes, me.stream),
                    "in-place reduce_scatter " + where);
        for (void* p : {send, recv, in_place, reduced, scattered_in, scattered_out})
          EXPECT_EQ(cudaFree(p), cudaSuccess);
      });
    }
    release_sim_ranks(ranks);
  }
}

TYPED_TEST(SimNcclCollectives, BroadcastAndInPlaceAllGatherMoveEveryByte) {
  using T = TypeParam;
  constexpr ncclDataType_t type = Nccl<T>::type;
  const int64_t count = 1031;
  const size_t bytes = count * sizeof(T);
  for (int nranks = 1; nranks <= 3; ++nranks) {
    std::vector<SimRank> ranks = join_sim_ranks(nranks);
    on_every_rank(ranks, [&](SimRank& me) {
      const std::string where = "rank " + std::to_string(me.rank) + " of " + std::to_string(nranks);
      const int root = 1 % nranks;
      const std::vector<T> mine = inputs<T>(me.rank, count);
      void* data = device_copy(mine.data(), bytes, me.stream);
      ASSERT_EQ(ncclBroadcast(data, data, count, type, root, me.comm, me.stream), ncclSuccess);
      expect_bits(inputs<T>(root, count), host_copy(data, bytes, me.stream), "broadcast " + where);

      std::vector<T> all(count * nranks, Nccl<T>::store(-99));
      std::memcpy(all.data() + me.rank * count, mine.data(), bytes);
      void* gathered = device_copy(all.data(), bytes * nranks, me.stream);
      auto* own_block = static_cast<std::byte*>(gathered) + me.rank * bytes;
      ASSERT_EQ(ncclAllGather(own_block, gathered, count, type, me.comm, me.stream), ncclSuccess);
      std::vector<T> expected;
      for (int r = 0; r < nranks; ++r) {
        const std::vector<T> theirs = inputs<T>(r, count);
        expected.insert(expected.end(), theirs.begin(), theirs.end());
      }
      expect_bits(expected, host_copy(gathered, bytes * nranks, me.stream),
                  "in-place all_gather " + where);
      EXPECT_EQ(cudaFree(data), cudaSuccess);
      EXPECT_EQ(cudaFree(gathered), cudaSuccess);
    });
    release_sim_ranks(ranks);
  }
}

// 1 MiB + 12 bytes each way, four times a pair's ring: every rank sends to its right before it
// receives from its left, which completes only because the group drives both at once.
TEST(SimNccl, GroupedSendRecvRingLargerThanTheByteRingDoesNotDeadlock) {
  const int nranks = 3;
  const int64_t count = (int64_t{1} << 18) + 3;
  std::vector<SimRank> ranks = join_sim_ranks(nranks);
  on_every_rank(ranks, [&](SimRank& me) {
    const std::vector<float> mine = inputs<float>(me.rank, count);
    void* send = device_copy(mine.data(), count * sizeof(float), me.stream);
    void* recv = device_copy(mine.data(), count * sizeof(float), me.stream);
    const int right = (me.rank + 1) % nranks, left = (me.rank + nranks - 1) % nranks;
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclSend(send, count, ncclFloat32, right, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclRecv(recv, count, ncclFloat32, left, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    expect_bits(inputs<float>(left, count), host_copy(recv, count * sizeof(float), me.stream),
                "ring recv on rank " + std::to_string(me.rank));
    EXPECT_EQ(cudaFree(send), cudaSuccess);
    EXPECT_EQ(cudaFree(recv), cudaSuccess);
  });
  release_sim_ranks(ranks);
}

// P2P between a pair matches in call order, also to oneself and across nested groups.
TEST(SimNccl, SendsMatchReceivesInCallOrderIncludingToOneself) {
  std::vector<SimRank> ranks = join_sim_ranks(2);
  on_every_rank(ranks, [&](SimRank& me) {
    const int peer = 1 - me.rank;
    const std::vector<double> a = inputs<double>(me.rank, 100), b = inputs<double>(me.rank + 5, 7);
    void* send_a = device_copy(a.data(), 800, me.stream);
    void* send_b = device_copy(b.data(), 56, me.stream);
    void* recv_a = device_copy(a.data(), 800, me.stream);
    void* recv_b = device_copy(b.data(), 56, me.stream);
    void* self = device_copy(b.data(), 56, me.stream);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclRecv(recv_a, 100, ncclFloat64, peer, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclSend(send_a, 100, ncclFloat64, peer, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclSend(send_b, 56, ncclUint8, me.rank, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    ASSERT_EQ(ncclRecv(self, 56, ncclUint8, me.rank, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclSend(send_b, 7, ncclFloat64, peer, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclRecv(recv_b, 7, ncclFloat64, peer, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    const std::string where = " on rank " + std::to_string(me.rank);
    expect_bits(inputs<double>(peer, 100), host_copy(recv_a, 800, me.stream), "first" + where);
    expect_bits(inputs<double>(peer + 5, 7), host_copy(recv_b, 56, me.stream), "second" + where);
    expect_bits(b, host_copy(self, 56, me.stream), "to oneself" + where);
    for (void* p : {send_a, send_b, recv_a, recv_b, self})
      EXPECT_EQ(cudaFree(p), cudaSuccess);
  });
  release_sim_ranks(ranks);
}

// An all-reduce captured into a CUDA graph runs again at every launch of the graph, on what the
// buffer holds then, and takes its turn at each launch among the eager calls around it: three
// launches, each between new inputs and an eager all-reduce of another buffer.
TEST(SimNccl, ACapturedAllReduceRunsAtEveryLaunchInTurnWithEagerCalls) {
  const int64_t count = 1031;
  const size_t bytes = count * sizeof(float);
  for (int nranks = 2; nranks <= 3; ++nranks) {
    std::vector<SimRank> ranks = join_sim_ranks(nranks);
    on_every_rank(ranks, [&](SimRank& me) {
      const std::string where = "rank " + std::to_string(me.rank) + " of " + std::to_string(nranks);
      const std::vector<float> first = inputs<float>(me.rank, count);
      void* data = device_copy(first.data(), bytes, me.stream);
      void* other = device_copy(first.data(), bytes, me.stream);
      ASSERT_EQ(cudaStreamBeginCapture(me.stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
      ASSERT_EQ(ncclAllReduce(data, data, count, ncclFloat32, ncclSum, me.comm, me.stream),
                ncclSuccess);
      cudaGraph_t graph = nullptr;
      ASSERT_EQ(cudaStreamEndCapture(me.stream, &graph), cudaSuccess);
      cudaGraphExec_t executable = nullptr;
      ASSERT_EQ(cudaGraphInstantiate(&executable, graph, 0), cudaSuccess);
      expect_bits(first, host_copy(data, bytes, me.stream), "captured, not run, " + where);
      for (int64_t launch = 0; launch < 3; ++launch) {
        const std::vector<float> mine = inputs<float>(me.rank, count, launch * count);
        ASSERT_EQ(cudaMemcpyAsync(data, mine.data(), bytes, cudaMemcpyHostToDevice, me.stream),
                  cudaSuccess);
        ASSERT_EQ(cudaGraphLaunch(executable, me.stream), cudaSuccess);
        ASSERT_EQ(ncclAllReduce(other, other, count, ncclFloat32, ncclMax, me.comm, me.stream),
                  ncclSuccess);
        const std::string at = "launch " + std::to_string(launch) + " on " + where;
        expect_bits(references<float>(ncclSum, nranks, count, launch * count),
                    host_copy(data, bytes, me.stream), "captured all_reduce, " + at);
        expect_bits(references<float>(ncclMax, nranks, count), host_copy(other, bytes, me.stream),
                    "eager all_reduce after " + at);
      }
      EXPECT_EQ(cudaGraphExecDestroy(executable), cudaSuccess);
      EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
      EXPECT_EQ(cudaFree(data), cudaSuccess);
      EXPECT_EQ(cudaFree(other), cudaSuccess);
    });
    release_sim_ranks(ranks);
  }
}

}  // namespace
}  // namespace engine
