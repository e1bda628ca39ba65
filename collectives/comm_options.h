// Options of the communicators and their transports. Defaults suit a CPU host with a few
// ranks; the benchmark and the tests change them.
#pragma once

#include <chrono>
#include <cstddef>

#include "collectives/core/timeout.h"

namespace engine {

struct ShmOptions {
  int slots = 4;                          // messages a sender may run ahead (>= 2)
  size_t slot_bytes = 256 << 10;          // the ring's message size
  size_t small_message_bytes = 64 << 10;  // direct path up to this / (ranks - 1) bytes
  int spin_iterations = -1;               // -1: from the number of ranks on the host
};

struct MpiTransportOptions {
  int staging_depth = 4;                  // messages in flight per destination (>= 2)
  size_t message_bytes = 1 << 20;         // the ring's message size
  size_t small_message_bytes = 16 << 10;  // direct path up to this / (ranks - 1) bytes
  int spin_iterations = -1;               // -1: from the number of ranks on the host
};

struct NcclTransportOptions {
  size_t message_bytes = 8 << 20;         // the ring's message size (device staging per buffer)
  size_t small_message_bytes = 64 << 10;  // direct path up to this / (ranks - 1) bytes
};

struct HierarchicalOptions {
  // Buffers are all-reduced in segments of about this size, so that one segment crosses the
  // network while the host reduces the next and gathers the previous.
  size_t segment_bytes = 4 << 20;
};

struct CommOptions {
  // A collective that waits this long for a peer ends the job (see timeout.h).
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  TimeoutAction on_timeout = TimeoutAction::abort_job;
  ShmOptions shm;
  MpiTransportOptions mpi_transport;
  NcclTransportOptions nccl_transport;
  HierarchicalOptions hierarchical;
};

}  // namespace engine
