#include "collectives/transports/shm_transport.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>

#include "collectives/bootstrap.h"
#include "collectives/core/check_mpi.h"
#include "collectives/cpu/reduce.h"
#include "collectives/peer_names.h"
#include "kernels/error.h"

namespace engine {
namespace {

// Granularity of fused receive-combine-forward-keep passes: small enough to stay in L1.
constexpr size_t kFusedBlockBytes = 8 << 10;

std::string unique_segment_name() {
  static std::atomic<int> counter{0};
  std::random_device entropy;
  return "/engine-shm-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" +
         std::to_string(entropy() % 1000000);
}

}  // namespace

ShmLayout ShmTransport::layout_for(int world, const ShmOptions& options) {
  return {world, options.slots, options.slot_bytes};
}

ShmTransport::ShmTransport(std::shared_ptr<SharedMemory> segment, int rank, int world,
                           const ShmOptions& options)
    : segment_(std::move(segment)),
      rank_(rank),
      world_(world),
      options_(options),
      channels_(
          segment_->data(), layout_for(world, options), rank,
          options.spin_iterations >= 0 ? options.spin_iterations : spin_iterations_for(world)) {}

std::unique_ptr<ShmTransport> ShmTransport::create(MPI_Comm comm, const ShmOptions& options) {
  int rank = 0, world = 1;
  CHECK_MPI(MPI_Comm_rank(comm, &rank));
  CHECK_MPI(MPI_Comm_size(comm, &world));
  const int on_host = query_world(comm).local_size;
  if (on_host != world) {
    fail("ShmTransport needs every rank on one host, but this host has " + std::to_string(on_host) +
         " of " + std::to_string(world) + " ranks; use ring-mpi (MpiTransport) across hosts");
  }
  ENGINE_REQUIRE(options.slots >= 2, "ShmTransport: slots must be at least 2");
  const ShmLayout layout = layout_for(world, options);

  // Rank 0 creates the segment; a failure anywhere is agreed on before anyone throws, so
  // no rank is left waiting in a collective the others abandoned.
  char name[64] = {};
  std::shared_ptr<SharedMemory> segment;
  std::string error;
  if (rank == 0) {
    const std::string chosen = unique_segment_name();
    std::strncpy(name, chosen.c_str(), sizeof(name) - 1);
    try {
      segment = std::make_shared<SharedMemory>(SharedMemory::create(name, layout.total_bytes()));
      ShmChannels::initialize(segment->data(), layout);
    } catch (const Error& e) {
      error = e.what();
      name[0] = '\0';
    }
  }
  CHECK_MPI(MPI_Bcast(name, sizeof(name), MPI_CHAR, 0, comm));
  if (rank != 0 && name[0] != '\0') {
    try {
      segment = std::make_shared<SharedMemory>(SharedMemory::open(name, layout.total_bytes()));
    } catch (const Error& e) {
      error = e.what();
    }
  }
  int ok = error.empty() && name[0] != '\0' ? 1 : 0, all_ok = 0;
  CHECK_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm));
  if (rank == 0 && name[0] != '\0') SharedMemory::unlink(name);
  if (!all_ok) {
    fail("ShmTransport: could not set up shared memory" +
         (error.empty() ? std::string(" (another rank failed)") : ": " + error));
  }
  auto transport = std::make_unique<ShmTransport>(std::move(segment), rank, world, options);
  const PeerNames peers = PeerNames::of(comm);
  std::vector<int> ranks(world);
  for (int peer = 0; peer < world; ++peer)
    ranks[peer] = peers.world_rank(peer);
  transport->channels_.set_peer_ranks(std::move(ranks));
  return transport;
}

void ShmTransport::begin(const OpContext& context) {
  channels_.set_context(context);
}

void ShmTransport::check_size(const ShmChannels::Message& message, size_t expected,
                              int from) const {
  if (message.bytes == expected) return;
  fail("ring-shm: rank " + std::to_string(rank_) + " expected a message of " +
       std::to_string(expected) + " bytes from rank " + std::to_string(from) + " but got " +
       std::to_string(message.bytes) +
       " (did the ranks call different collectives, or with different sizes?)");
}

void ShmTransport::transfer(const Transfer& t) {
  const size_t bytes = t.bytes();
  if (t.from < 0) {
    std::byte* out = channels_.begin_send(t.to, bytes);
    std::memcpy(out, t.src, bytes);
    channels_.end_send(t.to, bytes);
    return;
  }
  const ShmChannels::Message in = channels_.begin_recv(t.from);
  check_size(in, bytes, t.from);
  if (t.to >= 0) {
    // Receive, combine and forward in one pass: the result goes straight into the next
    // rank's slot; when this rank keeps it too, each block is copied out while it is still
    // in L1 rather than re-read from the slot afterwards.
    std::byte* out = channels_.begin_send(t.to, bytes);
    const size_t element = dtype_size(t.dtype);
    const int64_t block = static_cast<int64_t>(kFusedBlockBytes / element);
    for (int64_t begin = 0; begin < t.count; begin += block) {
      const int64_t count = std::min(block, t.count - begin);
      const size_t offset = static_cast<size_t>(begin) * element, length = count * element;
      if (t.reduction) {
        cpu::reduce(*t.reduction, out + offset, static_cast<const std::byte*>(t.src) + offset,
                    in.data + offset, count);
      } else {
        std::memcpy(out + offset, in.data + offset, length);
      }
      if (t.dst != nullptr)
        std::memcpy(static_cast<std::byte*>(t.dst) + offset, out + offset, length);
    }
    channels_.end_send(t.to, bytes);
  } else if (t.reduction) {
    cpu::reduce(*t.reduction, t.dst, t.src, in.data, t.count);
  } else {
    std::memcpy(t.dst, in.data, bytes);
  }
  channels_.end_recv(t.from);
}

}  // namespace engine
