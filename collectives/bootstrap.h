// The process bootstrap: MPI_Init_thread (MPI_THREAD_MULTIPLE: communicators run
// collectives on their own threads), rank and world size from MPI_COMM_WORLD, the local
// rank from MPI_Comm_split_type(SHARED), and the rank prefix of every error message. A
// program started without mpirun is a world of one (MPI's singleton mode).
//
// Under mpirun as root, Open MPI needs --allow-run-as-root (or OMPI_ALLOW_RUN_AS_ROOT=1 and
// OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1); on machines with fewer cores than ranks, --oversubscribe.
#pragma once

#include <mpi.h>

#include <string>
#include <string_view>

#include "collectives/peer_names.h"
#include "kernels/device.h"

namespace engine {

struct WorldInfo {
  int rank = 0;
  int size = 1;
  int local_rank = 0;               // among the ranks of this host
  int local_size = 1;               // ranks on this host
  int hosts = 1;                    // hosts the job spans
  int host = 0;                     // this host's number: the job rank of its first rank
  bool same_ranks_per_host = true;  // every host runs local_size ranks
};

class MpiSession {
 public:
  // Initializes MPI unless something else already did (then this session leaves MPI_Finalize
  // to whoever initialized it).
  MpiSession(int* argc, char*** argv);
  ~MpiSession();  // MPI_Finalize, when this session initialized MPI
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  const WorldInfo& world() const { return world_; }
  int rank() const { return world_.rank; }
  int size() const { return world_.size; }
  int local_rank() const { return world_.local_rank; }
  // MPI_COMM_WORLD, with MPI_ERRORS_RETURN so CHECK_MPI sees the error codes.
  MPI_Comm comm() const { return MPI_COMM_WORLD; }
  // Every rank's host, gathered once at the start, for messages and the banner.
  const PeerNames& peers() const { return peers_; }

  // The device for `request` ("auto", "cpu", "cuda", "cuda:N"; see resolve_device):
  // "cuda"/"auto" mean the GPU numbered by the local rank, or cuda:0 when each rank sees one
  // GPU of its own (SLURM's --gpus-per-task=1; collective over the host's ranks then), and
  // asking for CUDA on a host with more ranks than GPUs is an error that says so.
  Device device(std::string_view request) const;

 private:
  WorldInfo world_;
  PeerNames peers_;
  bool owns_mpi_ = false;
};

// Ranks that share a host, from MPI_Comm_split_type(SHARED) over `comm`; collective.
WorldInfo query_world(MPI_Comm comm);

}  // namespace engine
