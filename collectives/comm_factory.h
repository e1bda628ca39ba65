// Communicators by name, for command lines and benchmarks:
//   ring-shm   ours: ring over shared memory (CPU tensors, every rank on one host)
//   ring-mpi   ours: ring over MPI point-to-point (CPU tensors, any hosts)
//   ring-hier  ours: shared memory within each host, MPI rings across hosts (CPU tensors;
//              the same number of ranks on every host)
//   ring-nccl  ours: ring over NCCL send/recv with our reduction kernels (CUDA tensors)
//   mpi        MPI's own collectives (CPU tensors)
//   nccl       NCCL's own collectives (CUDA tensors)
// Creating one is collective: every rank of the session calls it, in the same order.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/communicator.h"

namespace engine {

const std::vector<std::string_view>& communicator_names();

// "" when `impl` can run in this build and job, else why not (and what to use instead).
// Every rank gets the same answer, so ranks can skip an implementation together.
std::string communicator_unavailable_reason(std::string_view impl, const MpiSession& session);

// Our communicator for CPU tensors in this job, and why (for the banner): ring-shm on one
// host, ring-hier across hosts with several ranks each, else ring-mpi.
struct CommChoice {
  std::string name;
  std::string why;
};
CommChoice choose_host_communicator(const WorldInfo& world);

// The communicator; CUDA ones use `device` (default: session.device("cuda")).
std::unique_ptr<Communicator> make_communicator(std::string_view impl, const MpiSession& session,
                                                const CommOptions& options = {},
                                                std::string_view device = "cuda");

}  // namespace engine
