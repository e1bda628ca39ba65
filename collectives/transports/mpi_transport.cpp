#include "collectives/transports/mpi_transport.h"

#include <climits>
#include <cstring>

#include "collectives/bootstrap.h"
#include "collectives/core/check_mpi.h"
#include "collectives/cpu/reduce.h"
#include "kernels/error.h"

namespace engine {
namespace {

constexpr int kTag = 7;

int message_count(size_t bytes) {
  ENGINE_REQUIRE(bytes <= static_cast<size_t>(INT_MAX), "MpiTransport: message over 2 GiB");
  return static_cast<int>(bytes);
}

}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm, const MpiTransportOptions& options) : options_(options) {
  ENGINE_REQUIRE(options.staging_depth >= 2, "MpiTransport: staging_depth must be at least 2");
  ENGINE_REQUIRE(options.message_bytes > 0, "MpiTransport: message_bytes must be positive");
  CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  CHECK_MPI(MPI_Comm_size(comm_, &world_));
  peers_ = PeerNames::of(comm_);
  spin_iterations_ = options.spin_iterations >= 0
                         ? options.spin_iterations
                         : spin_iterations_for(query_world(comm_).local_size);
  staging_.resize(world_);
  next_staging_index_.assign(world_, 0);
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& destination : staging_) {
    for (Staging& staging : destination) {
      if (staging.request != MPI_REQUEST_NULL) MPI_Wait(&staging.request, MPI_STATUS_IGNORE);
    }
  }
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiTransport::wait(MPI_Request& request, int peer, std::string_view waiting_for) {
  if (request == MPI_REQUEST_NULL) return;
  int done = 0;
  CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
  if (done) return;
  const Deadline deadline(context_.timeout);
  Backoff backoff(spin_iterations_);
  while (true) {
    CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (deadline.expired()) {
      handle_timeout(context_, peers_.world_rank(peer), waiting_for, deadline.waited_seconds(),
                     peers_.where(peer));
    }
    backoff.pause();
  }
}

MpiTransport::Staging& MpiTransport::next_staging(int to) {
  std::vector<Staging>& ring = staging_[to];
  if (ring.empty()) {
    ring.resize(options_.staging_depth);
    for (Staging& staging : ring)
      staging.data.resize(options_.message_bytes);
  }
  Staging& staging = ring[next_staging_index_[to]];
  next_staging_index_[to] = (next_staging_index_[to] + 1) % options_.staging_depth;
  wait(staging.request, to, "an earlier message to be taken by");
  return staging;
}

void MpiTransport::transfer(const Transfer& t) {
  const size_t bytes = t.bytes();
  ENGINE_REQUIRE(bytes <= options_.message_bytes,
                 "MpiTransport: message larger than message_bytes");
  const void* outgoing = t.src;
  Staging* staging = t.to >= 0 ? &next_staging(t.to) : nullptr;
  if (t.from >= 0) {
    // Copies land where they belong (or straight in the staging buffer when only
    // forwarded); reductions need the incoming data beside the local operand.
    void* landing = t.reduction ? nullptr : t.dst;
    if (landing == nullptr) {
      if (!t.reduction && staging != nullptr) {
        landing = staging->data.data();
      } else {
        if (receive_buffer_.empty()) receive_buffer_.resize(options_.message_bytes);
        landing = receive_buffer_.data();
      }
    }
    MPI_Request request = MPI_REQUEST_NULL;
    CHECK_MPI(MPI_Irecv(landing, message_count(bytes), MPI_BYTE, t.from, kTag, comm_, &request));
    wait(request, t.from, "data from");
    if (t.reduction) {
      void* result = t.dst != nullptr ? t.dst : staging->data.data();
      cpu::reduce(*t.reduction, result, t.src, landing, t.count);
      outgoing = result;
    } else {
      outgoing = landing;
    }
  }
  if (staging == nullptr) return;
  if (outgoing != staging->data.data()) std::memcpy(staging->data.data(), outgoing, bytes);
  CHECK_MPI(MPI_Isend(staging->data.data(), message_count(bytes), MPI_BYTE, t.to, kTag, comm_,
                      &staging->request));
}

void MpiTransport::finish() {
  for (int to = 0; to < world_; ++to) {
    for (Staging& staging : staging_[to])
      wait(staging.request, to, "an earlier message to be taken by");
  }
}

}  // namespace engine
