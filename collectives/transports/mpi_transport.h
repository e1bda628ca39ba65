// MpiTransport: the ring's messages as MPI point-to-point messages between host buffers,
// on a communicator of its own. Sends are copied into per-destination staging buffers and
// posted with MPI_Isend, so a sender runs up to `staging_depth` messages ahead; receives
// land in the destination (copies) or a staging buffer (reductions). Every wait polls
// MPI_Test against the collective's deadline, so a silent peer is named, not waited on.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "collectives/comm_options.h"
#include "collectives/peer_names.h"
#include "collectives/transports/host_transport.h"

namespace engine {

class MpiTransport : public HostTransport {
 public:
  // Duplicates `comm` (collective over it), so its messages never meet anyone else's.
  MpiTransport(MPI_Comm comm, const MpiTransportOptions& options);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  std::string_view name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  size_t max_message_bytes() const override { return options_.message_bytes; }
  size_t small_message_bytes() const override { return options_.small_message_bytes; }

  void begin(const OpContext& context) override { context_ = context; }
  void transfer(const Transfer& transfer) override;
  void finish() override;

 private:
  struct Staging {
    std::vector<std::byte> data;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  // The next staging buffer for `to`, once its previous send has completed.
  Staging& next_staging(int to);
  // Polls `request` until it completes or the deadline passes (then names `peer`).
  void wait(MPI_Request& request, int peer, std::string_view waiting_for);

  MPI_Comm comm_ = MPI_COMM_NULL;
  PeerNames peers_;  // timeouts name a peer by its rank in the job and its host
  int rank_ = 0;
  int world_ = 1;
  MpiTransportOptions options_;
  int spin_iterations_;
  OpContext context_;
  std::vector<std::vector<Staging>> staging_;  // [destination][depth], allocated on first use
  std::vector<int> next_staging_index_;
  std::vector<std::byte> receive_buffer_;
};

}  // namespace engine
