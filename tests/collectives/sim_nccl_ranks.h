// Threads as the ranks of a communicator of the sim device's NCCL shim (one process, one sim
// device): each rank has its communicator, its stream and device buffers, as an mpirun rank
// would. The shim's segment and rings are the same whether the ranks are threads or processes.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstddef>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace engine::testing {

struct SimRank {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

// nranks communicators joined concurrently (ncclCommInitRank waits for every rank).
inline std::vector<SimRank> join_sim_ranks(int nranks) {
  ncclUniqueId id{};
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<SimRank> ranks(nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      ranks[r].rank = r;
      EXPECT_EQ(ncclCommInitRank(&ranks[r].comm, nranks, id, r), ncclSuccess)
          << ncclGetLastError(nullptr);
      EXPECT_EQ(cudaStreamCreate(&ranks[r].stream), cudaSuccess);
    });
  }
  for (std::thread& t : threads)
    t.join();
  return ranks;
}

inline void release_sim_ranks(std::vector<SimRank>& ranks) {
  for (SimRank& r : ranks) {
    EXPECT_EQ(ncclCommDestroy(r.comm), ncclSuccess) << ncclGetLastError(nullptr);
    EXPECT_EQ(cudaStreamDestroy(r.stream), cudaSuccess);
  }
}

// Runs body(rank) on a thread per rank, as the ranks of a job run at once.
inline void on_every_rank(std::vector<SimRank>& ranks, const std::function<void(SimRank&)>& body) {
  std::vector<std::thread> threads;
  for (SimRank& r : ranks)
    threads.emplace_back([&body, &r] { body(r); });
  for (std::thread& t : threads)
    t.join();
}

// A device buffer holding `bytes` of `host`, and back (the sim runtime copies on a stream).
inline void* device_copy(const void* host, size_t bytes, cudaStream_t stream) {
  void* data = nullptr;
  EXPECT_EQ(cudaMalloc(&data, bytes == 0 ? 1 : bytes), cudaSuccess);
  if (bytes != 0) {
    EXPECT_EQ(cudaMemcpyAsync(data, host, bytes, cudaMemcpyHostToDevice, stream), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  return data;
}
inline std::vector<std::byte> host_copy(const void* device, size_t bytes, cudaStream_t stream) {
  std::vector<std::byte> host(bytes);
  if (bytes != 0) {
    EXPECT_EQ(cudaMemcpyAsync(host.data(), device, bytes, cudaMemcpyDeviceToHost, stream),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  return host;
}

}  // namespace engine::testing
