#include "collectives/ring/hierarchical_communicator.h"

#include <algorithm>
#include <cstring>

#include "collectives/core/check_mpi.h"
#include "collectives/ring/ring_communicator.h"
#include "collectives/transports/mpi_transport.h"
#include "collectives/transports/shm_transport.h"
#include "kernels/error.h"

namespace engine {

HierarchicalCommunicator::HierarchicalCommunicator(Transports transports, CommInfo info,
                                                   CommOptions options)
    : Communicator(std::move(info), std::move(options)),
      transports_(std::move(transports)),
      host_ring_(*transports_.host, Device::cpu()),
      across_ring_(*transports_.across, Device::cpu()),
      world_ring_(*transports_.world, Device::cpu()),
      across_executor_(name() + " across hosts"),
      executor_(name()) {
  Transport& host = *transports_.host;
  Transport& across = *transports_.across;
  Transport& world = *transports_.world;
  ENGINE_REQUIRE(world.rank() == rank() && world.world() == size(),
                 "HierarchicalCommunicator: the world transport's rank/size differ");
  ENGINE_REQUIRE(host.world() * across.world() == size(),
                 "HierarchicalCommunicator: " + std::to_string(host.world()) +
                     " ranks per host x " + std::to_string(across.world()) +
                     " hosts != " + std::to_string(size()) + " ranks");
  for (Transport* transport : {&host, &across, &world}) {
    ENGINE_REQUIRE(transport->memory() == DeviceKind::cpu && transport->stream() == nullptr,
                   "HierarchicalCommunicator: its transports must be host transports");
  }
}

HierarchicalCommunicator::~HierarchicalCommunicator() = default;

Work HierarchicalCommunicator::execute(const CollectiveRequest& request, const OpContext& context,
                                       Stream&, bool blocking) {
  return executor_.execute(blocking, [this, request, context] { run(request, context); });
}

void HierarchicalCommunicator::run(const CollectiveRequest& request, const OpContext& context) {
  if (request.kind != CollectiveKind::all_reduce) {
    run_ring_collective(world_ring_, *transports_.world, request, context);
    return;
  }
  const Tensor& tensor = request.reference();
  all_reduce(request.output_data(), tensor.numel(), tensor.dtype(), request.op, context);
}

void HierarchicalCommunicator::all_reduce(void* data, int64_t count, DType dtype, ReduceOp op,
                                          const OpContext& context) {
  Transport& host = *transports_.host;
  Transport& across = *transports_.across;
  // One host, or one rank per host: a single level is the whole all-reduce.
  for (auto [level, ring] : {std::pair{&host, &host_ring_}, std::pair{&across, &across_ring_}}) {
    if (level->world() == size()) {
      level->begin(context);
      ring->all_reduce(data, count, dtype, op);
      level->finish();
      return;
    }
  }
  const int local = host.world();
  const size_t element = dtype_size(dtype);
  // Segments of a whole number of elements per local rank, the last one shorter.
  const int64_t segment_block = std::max<int64_t>(
      1, static_cast<int64_t>(options().hierarchical.segment_bytes / element) / local);
  const int64_t segment = segment_block * local;
  const int64_t segments = (count + segment - 1) / segment;
  for (std::vector<std::byte>& shard : shards_)
    shard.resize(static_cast<size_t>(std::min(segment, count + local - 1) / local) * element);
  // avg: the hosts' sums are summed across hosts and divided there by the number of ranks.
  const ReduceOp within = op == ReduceOp::avg ? ReduceOp::sum : op;
  auto* bytes = static_cast<std::byte*>(data);
  auto segment_count = [&](int64_t k) { return std::min(segment, count - k * segment); };
  auto block_of = [&](int64_t k) { return (segment_count(k) + local - 1) / local; };
  Work crossing[2];
  try {
    for (int64_t k = 0; k <= segments; ++k) {
      if (k < segments) {
        std::byte* shard = shards_[k % 2].data();
        const int64_t block = block_of(k);
        reduce_scatter_in_host(bytes + k * segment * element, segment_count(k), shard, block, dtype,
                               within, context);
        crossing[k % 2] = across_executor_.submit([this, shard, block, dtype, op, context] {
          Transport& across = *transports_.across;
          across.begin(context);
          across_ring_.all_reduce(shard, block, dtype, op, size());
          across.finish();
        });
      }
      if (k > 0) {
        const int64_t previous = k - 1;
        crossing[previous % 2].wait();
        all_gather_in_host(shards_[previous % 2].data(), block_of(previous),
                           bytes + previous * segment * element, segment_count(previous), dtype,
                           context);
      }
    }
  } catch (...) {
    // The crossing stage still uses the shards: let it end (it fails too, or times out).
    for (Work& work : crossing) {
      try {
        work.wait();
      } catch (...) {
      }
    }
    throw;
  }
}

void HierarchicalCommunicator::reduce_scatter_in_host(const std::byte* data, int64_t count,
                                                      std::byte* shard, int64_t block, DType dtype,
                                                      ReduceOp op, const OpContext& context) {
  Transport& host = *transports_.host;
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  const size_t padded = static_cast<size_t>(block) * host.world() * dtype_size(dtype);
  if (padded != bytes) {
    // Zeros: the padding is reduced like data but never copied back.
    staging_.resize(padded);
    std::memcpy(staging_.data(), data, bytes);
    std::memset(staging_.data() + bytes, 0, padded - bytes);
    data = staging_.data();
  }
  host.begin(context);
  host_ring_.reduce_scatter(data, shard, block, dtype, op);
  host.finish();
}

void HierarchicalCommunicator::all_gather_in_host(const std::byte* shard, int64_t block,
                                                  std::byte* data, int64_t count, DType dtype,
                                                  const OpContext& context) {
  Transport& host = *transports_.host;
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  const size_t padded = static_cast<size_t>(block) * host.world() * dtype_size(dtype);
  std::byte* gathered = padded != bytes ? (staging_.resize(padded), staging_.data()) : data;
  host.begin(context);
  host_ring_.all_gather(shard, gathered, block, dtype);
  host.finish();
  if (gathered != data) std::memcpy(data, gathered, bytes);
}

std::unique_ptr<HierarchicalCommunicator> make_hierarchical_communicator(MPI_Comm comm, int host,
                                                                         const CommOptions& options,
                                                                         const std::string& name) {
  CommInfo info;
  info.name = name;
  CHECK_MPI(MPI_Comm_rank(comm, &info.rank));
  CHECK_MPI(MPI_Comm_size(comm, &info.size));
  MPI_Comm host_comm = MPI_COMM_NULL, across_comm = MPI_COMM_NULL;
  CHECK_MPI(MPI_Comm_split(comm, host, info.rank, &host_comm));
  int local_size = 0;
  CHECK_MPI(MPI_Comm_rank(host_comm, &info.local_rank));
  CHECK_MPI(MPI_Comm_size(host_comm, &local_size));
  CHECK_MPI(MPI_Comm_split(comm, info.local_rank, info.rank, &across_comm));
  int sizes[2] = {-local_size, local_size}, extremes[2] = {};
  CHECK_MPI(MPI_Allreduce(sizes, extremes, 2, MPI_INT, MPI_MAX, comm));
  HierarchicalCommunicator::Transports transports;
  try {
    if (-extremes[0] != extremes[1]) {
      fail(name + " needs the same number of ranks on every host, but hosts have from " +
           std::to_string(-extremes[0]) + " to " + std::to_string(extremes[1]) + " ranks");
    }
    transports.host = ShmTransport::create(host_comm, options.shm);
    transports.across = std::make_unique<MpiTransport>(across_comm, options.mpi_transport);
    transports.world = std::make_unique<MpiTransport>(comm, options.mpi_transport);
  } catch (...) {
    MPI_Comm_free(&host_comm);
    MPI_Comm_free(&across_comm);
    throw;
  }
  CHECK_MPI(MPI_Comm_free(&host_comm));
  CHECK_MPI(MPI_Comm_free(&across_comm));
  return std::make_unique<HierarchicalCommunicator>(std::move(transports), std::move(info),
                                                    options);
}

}  // namespace engine
