#include "collectives/bootstrap.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/core/check_mpi.h"
#include "collectives/launch_environment.h"
#include "kernels/error.h"
#include "kernels/runtime.h"

namespace engine {

WorldInfo query_world(MPI_Comm comm) {
  WorldInfo world;
  CHECK_MPI(MPI_Comm_rank(comm, &world.rank));
  CHECK_MPI(MPI_Comm_size(comm, &world.size));
  MPI_Comm node = MPI_COMM_NULL;
  CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, world.rank, MPI_INFO_NULL, &node));
  CHECK_MPI(MPI_Comm_rank(node, &world.local_rank));
  CHECK_MPI(MPI_Comm_size(node, &world.local_size));
  world.host = world.rank;
  const int status = MPI_Bcast(&world.host, 1, MPI_INT, 0, node);
  CHECK_MPI(MPI_Comm_free(&node));
  CHECK_MPI(status);
  // Each host's first rank counts it; the fewest and most ranks on a host tell whether the
  // hosts are alike (what a hierarchical all-reduce needs).
  int counts[3] = {world.local_rank == 0 ? 1 : 0, -world.local_size, world.local_size};
  int totals[3] = {};
  CHECK_MPI(MPI_Allreduce(&counts[0], &totals[0], 1, MPI_INT, MPI_SUM, comm));
  CHECK_MPI(MPI_Allreduce(&counts[1], &totals[1], 2, MPI_INT, MPI_MAX, comm));
  world.hosts = totals[0];
  world.same_ranks_per_host = -totals[1] == totals[2];
  return world;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  CHECK_MPI(MPI_Initialized(&initialized));
  if (!initialized) {
    // Open MPI would abort inside MPI_Init with a page about how it was built.
    if (const std::string why = srun_without_pmix(); !why.empty()) fail(why);
    int provided = MPI_THREAD_SINGLE;
    CHECK_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    owns_mpi_ = true;
    if (provided < MPI_THREAD_MULTIPLE) {
      MPI_Finalize();
      owns_mpi_ = false;
      fail("MPI provides thread level " + std::to_string(provided) +
           ", but the communicators need MPI_THREAD_MULTIPLE (" +
           std::to_string(MPI_THREAD_MULTIPLE) + "); use an MPI built with thread support");
    }
  }
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  world_ = query_world(MPI_COMM_WORLD);
  peers_ = PeerNames::of(MPI_COMM_WORLD);
  // A world of one prints no "[rank 0]" prefix.
  set_process_rank(world_.size > 1 ? world_.rank : -1);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && !finalized) MPI_Finalize();
}

namespace {

// One visible GPU per rank (SLURM's --gpus-per-task=1, or CUDA_VISIBLE_DEVICES set per rank):
// fine when the GPUs differ, which their UUIDs tell; collective over this host's ranks.
void require_own_gpu(MPI_Comm comm, const WorldInfo& world) {
  MPI_Comm node = MPI_COMM_NULL;
  CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, world.rank, MPI_INFO_NULL, &node));
  constexpr int kBytes = 32;
  char mine[kBytes + 1] = {};
  cuda_device_uuid(0).copy(mine, kBytes);
  std::vector<char> all(static_cast<size_t>(world.local_size) * kBytes);
  const int status = MPI_Allgather(mine, kBytes, MPI_CHAR, all.data(), kBytes, MPI_CHAR, node);
  MPI_Comm_free(&node);
  CHECK_MPI(status);
  for (int other = 0; other < world.local_size; ++other) {
    if (other == world.local_rank ||
        std::memcmp(all.data() + static_cast<size_t>(other) * kBytes, mine, kBytes) != 0) {
      continue;
    }
    fail("this host runs " + std::to_string(world.local_size) +
         " ranks and each sees one CUDA device, but local ranks " +
         std::to_string(std::min(other, world.local_rank)) + " and " +
         std::to_string(std::max(other, world.local_rank)) + " see the same one (UUID " +
         std::string(mine) +
         "); give each rank its own GPU (CUDA_VISIBLE_DEVICES, or --gpus-per-task=1) or start "
         "at most one rank per GPU");
  }
}

}  // namespace

Device MpiSession::device(std::string_view request) const {
  if ((request == "cuda" || request == "auto") && world_.local_size > 1 &&
      cuda_device_count() == 1) {
    require_own_gpu(comm(), world_);
    return Device::cuda(0);
  }
  const Device device = resolve_device(request, world_.local_rank);
  if (device.is_cuda() && (request == "cuda" || request == "auto") &&
      world_.local_size > cuda_device_count()) {
    fail("this host runs " + std::to_string(world_.local_size) + " ranks but has " +
         std::to_string(cuda_device_count()) +
         " CUDA device(s); start at most one rank per GPU on each host");
  }
  return device;
}

}  // namespace engine
