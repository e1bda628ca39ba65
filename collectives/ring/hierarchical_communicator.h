// HierarchicalCommunicator ("ring-hier"): our rings in two levels, for jobs spread over
// several hosts with several ranks on each. An all-reduce
//   1. reduce-scatters within each host over shared memory: local rank l ends with shard l
//      of the host's sum;
//   2. all-reduces shard l across the hosts among the ranks with local rank l, one ring per
//      local rank over MPI, all of them at once;
//   3. all-gathers the shards within each host.
// Buffers go in segments, pipelined: while one segment crosses the network (on a thread of
// its own), the host reduce-scatters the next and all-gathers the one before.
// Only step 2 crosses the network, and each host sends 2(H-1)/H of the buffer in all, split
// over its L ranks (and their connections); a flat ring through every rank sends
// 2(N-1)/N of it on each link it crosses between hosts. This is Horovod's hierarchical
// all-reduce (NCCL reduce-scatter, MPI all-reduce, NCCL all-gather) and the shape of
// NCCL's own inter-node rings, which run one ring per local GPU ("channel"); a tree among
// the hosts' leaders would push every byte through one rank and one connection per host.
// Each element is reduced in one place and copied from there, so every rank gets the same
// bits. The other collectives run on a flat ring over MPI through every rank.
//
// Needs the same number of ranks on every host (comm_factory.h says so otherwise).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/execution/host_executor.h"
#include "collectives/ring/ring_algorithms.h"
#include "collectives/transports/transport.h"

namespace engine {

class HierarchicalCommunicator : public Communicator {
 public:
  struct Transports {
    std::unique_ptr<Transport> host;    // this host's ranks, numbered by local rank
    std::unique_ptr<Transport> across;  // one rank per host: those of this local rank
    std::unique_ptr<Transport> world;   // every rank, numbered as the communicator
  };
  HierarchicalCommunicator(Transports transports, CommInfo info, CommOptions options);
  ~HierarchicalCommunicator() override;

  bool supports(Device device) const override { return device.is_cpu(); }

 protected:
  Work execute(const CollectiveRequest& request, const OpContext& context, Stream& stream,
               bool blocking) override;

 private:
  void run(const CollectiveRequest& request, const OpContext& context);
  void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op, const OpContext& context);
  // A segment's reduce-scatter and all-gather within the host (a count the host's ranks do
  // not divide goes through the padded staging buffer).
  void reduce_scatter_in_host(const std::byte* data, int64_t count, std::byte* shard, int64_t block,
                              DType dtype, ReduceOp op, const OpContext& context);
  void all_gather_in_host(const std::byte* shard, int64_t block, std::byte* data, int64_t count,
                          DType dtype, const OpContext& context);

  Transports transports_;
  RingAlgorithms host_ring_;
  RingAlgorithms across_ring_;
  RingAlgorithms world_ring_;
  std::vector<std::byte> shards_[2];  // this rank's shards of two segments in flight
  std::vector<std::byte> staging_;    // a segment padded to a multiple of the host's ranks
  HostExecutor across_executor_;      // the stage across hosts, beside the host's stages
  HostExecutor executor_;             // last: its jobs use the rest
};

// One over `comm` (collective): ranks passing the same `host` form a host, numbered in
// `comm`'s order. make_communicator("ring-hier") passes the real hosts; tests of the three
// stages on one machine pass pretend ones. Hosts of different sizes are an error on every
// rank.
std::unique_ptr<HierarchicalCommunicator> make_hierarchical_communicator(
    MPI_Comm comm, int host, const CommOptions& options, const std::string& name = "ring-hier");

}  // namespace engine
