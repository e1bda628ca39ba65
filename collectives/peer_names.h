// Who each rank of a communicator is, for messages: a transport numbers its peers 0..n-1 in
// its own communicator (a host's ranks, or one rank per host), but a person reading a timeout
// needs the rank in the whole job and the host it runs on.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace engine {

class PeerNames {
 public:
  // Collective over `comm`: every rank's MPI_COMM_WORLD rank and host name.
  static PeerNames of(MPI_Comm comm);

  int world_rank(int peer) const;
  const std::string& host(int peer) const;
  // "it runs on host node3" when the peers span hosts, else "".
  std::string where(int peer) const;
  // Which job ranks each host runs, hosts in order of their first rank:
  // "node0 (ranks 0-7), node1 (ranks 8-15)".
  std::string placement() const;

 private:
  std::vector<int> world_rank_;
  std::vector<std::string> host_;
  bool spans_hosts_ = false;  // then messages name the host
};

}  // namespace engine
