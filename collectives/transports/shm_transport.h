// ShmTransport: the ring's messages between ranks of one host through shared memory
// (shm_channels.h), for CPU tensors. A message is written once into the receiver's slot and
// reduced or copied straight out of it, and a "receive, reduce, forward" step writes its
// result directly into the next rank's slot, so each element crosses memory as few times as
// the algorithm allows.
#pragma once

#include <mpi.h>

#include <memory>

#include "collectives/comm_options.h"
#include "collectives/core/shared_memory.h"
#include "collectives/transports/host_transport.h"
#include "collectives/transports/shm_channels.h"

namespace engine {

class ShmTransport : public HostTransport {
 public:
  // Rank `rank` of `world` on a segment that every rank maps (initialized with
  // ShmChannels::initialize). `segment` is shared so threads standing in for ranks can use
  // one mapping.
  ShmTransport(std::shared_ptr<SharedMemory> segment, int rank, int world,
               const ShmOptions& options);

  // Creates the segment collectively over `comm` (every rank of it must be on this host):
  // rank 0 creates and initializes it, the others map it, and its name is removed at once
  // so nothing is left behind in /dev/shm whatever happens later.
  static std::unique_ptr<ShmTransport> create(MPI_Comm comm, const ShmOptions& options);
  // The layout for a world and options.
  static ShmLayout layout_for(int world, const ShmOptions& options);

  std::string_view name() const override { return "shm"; }
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  size_t max_message_bytes() const override { return channels_.layout().slot_bytes; }
  size_t small_message_bytes() const override { return options_.small_message_bytes; }

  void begin(const OpContext& context) override;
  void transfer(const Transfer& transfer) override;
  void finish() override {}

 private:
  void check_size(const ShmChannels::Message& message, size_t expected, int from) const;

  std::shared_ptr<SharedMemory> segment_;
  int rank_;
  int world_;
  ShmOptions options_;
  ShmChannels channels_;
};

}  // namespace engine
