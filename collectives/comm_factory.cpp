#include "collectives/comm_factory.h"

#include "collectives/communicators/mpi_communicator.h"
#include "collectives/ring/hierarchical_communicator.h"
#include "collectives/ring/ring_communicator.h"
#include "collectives/transports/mpi_transport.h"
#include "collectives/transports/shm_transport.h"
#include "kernels/error.h"
#include "kernels/runtime.h"
#if ENGINE_HAVE_NCCL
#include "collectives/communicators/nccl_comm.h"
#include "collectives/communicators/nccl_communicator.h"
#include "collectives/transports/nccl_transport.h"
#endif

namespace engine {

const std::vector<std::string_view>& communicator_names() {
  static const std::vector<std::string_view> names = {"ring-shm",  "ring-mpi", "ring-hier",
                                                      "ring-nccl", "mpi",      "nccl"};
  return names;
}

std::string communicator_unavailable_reason(std::string_view impl, const MpiSession& session) {
  const WorldInfo& world = session.world();
  if (impl == "ring-shm") {
    // local_size is the same on every rank exactly when all ranks share one host.
    int all_local = world.local_size == world.size ? 1 : 0, everywhere = 0;
    MPI_Allreduce(&all_local, &everywhere, 1, MPI_INT, MPI_MIN, session.comm());
    return everywhere ? "" : "ring-shm needs every rank on one host (use ring-mpi)";
  }
  if (impl == "ring-mpi" || impl == "mpi") return "";
  if (impl == "ring-hier") {
    // WorldInfo's fields are the same on every rank.
    if (!world.same_ranks_per_host) {
      return "ring-hier needs the same number of ranks on every host (this job has " +
             std::to_string(world.size) + " ranks on " + std::to_string(world.hosts) +
             " hosts; use ring-mpi)";
    }
    return "";
  }
  if (impl == "ring-nccl" || impl == "nccl") {
#if ENGINE_HAVE_NCCL
    int devices = cuda_device_count(), fewest = 0;
    MPI_Allreduce(&devices, &fewest, 1, MPI_INT, MPI_MIN, session.comm());
    if (fewest == 0)
      return std::string(impl) + " needs a CUDA device on every rank (" +
             cuda_unavailable_reason() + ")";
    return "";
#else
    return std::string(impl) + " needs a build with CUDA and NCCL";
#endif
  }
  std::string names;
  for (std::string_view name : communicator_names())
    names.append(names.empty() ? "" : ", ").append(name);
  return "unknown communicator '" + std::string(impl) + "' (use one of " + names + ")";
}

CommChoice choose_host_communicator(const WorldInfo& world) {
  if (world.hosts == 1) return {"ring-shm", "every rank on one host"};
  const std::string spread =
      std::to_string(world.size) + " ranks on " + std::to_string(world.hosts) + " hosts";
  if (world.local_size > 1 && world.same_ranks_per_host) {
    return {"ring-hier", spread + ": shared memory within each host, rings across"};
  }
  if (world.local_size == 1 && world.same_ranks_per_host) {
    return {"ring-mpi", spread + ", one per host"};
  }
  return {"ring-mpi", spread + ", not as many on each"};
}

std::unique_ptr<Communicator> make_communicator(std::string_view impl, const MpiSession& session,
                                                const CommOptions& options,
                                                std::string_view device) {
  const WorldInfo& world = session.world();
  CommInfo info{world.rank, world.size, world.local_rank, std::string(impl)};
  if (impl == "ring-shm") {
    return std::make_unique<RingCommunicator>(ShmTransport::create(session.comm(), options.shm),
                                              info, options);
  }
  if (impl == "ring-mpi") {
    return std::make_unique<RingCommunicator>(
        std::make_unique<MpiTransport>(session.comm(), options.mpi_transport), info, options);
  }
  if (impl == "mpi") return std::make_unique<MpiCommunicator>(session.comm(), info, options);
  if (impl == "ring-hier" && world.same_ranks_per_host) {
    return make_hierarchical_communicator(session.comm(), world.host, options);
  }
#if ENGINE_HAVE_NCCL
  if (impl == "ring-nccl" || impl == "nccl") {
    const Device gpu = session.device(device);
    if (!gpu.is_cuda()) fail(std::string(impl) + " needs a CUDA device, not " + gpu.str());
    auto comm = std::make_shared<NcclComm>(session.comm(), gpu);
    if (impl == "nccl") return std::make_unique<NcclCommunicator>(std::move(comm), info, options);
    return std::make_unique<RingCommunicator>(
        std::make_unique<NcclTransport>(std::move(comm), options.nccl_transport), info, options);
  }
#else
  (void)device;
#endif
  const std::string why = communicator_unavailable_reason(impl, session);
  fail(why.empty() ? "cannot make communicator " + std::string(impl) : why);
}

}  // namespace engine
