// Threads standing in for ranks: each runs `body(rank, transport)` with its own
// ShmTransport on one shared segment, so the ring and the shared-memory FIFOs are tested
// without processes (and under the sanitizers). Every wait has a short deadline and throws,
// so a protocol bug fails the test instead of hanging it.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/transports/shm_transport.h"

namespace engine::testing {

inline OpContext test_context(std::string_view op, int rank,
                              std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  OpContext context;
  context.op = op;
  context.impl = "ring-shm";
  context.rank = rank;
  context.timeout = timeout;
  context.on_timeout = TimeoutAction::throw_error;
  return context;
}

// Small slots make short buffers span many messages; no spinning suits threads on few cores.
inline ShmOptions shm_options(int slots, size_t slot_bytes, size_t small_message_bytes = 0) {
  ShmOptions options;
  options.slots = slots;
  options.slot_bytes = slot_bytes;
  options.small_message_bytes = small_message_bytes;
  options.spin_iterations = 0;
  return options;
}

inline std::shared_ptr<SharedMemory> make_segment(int world, const ShmOptions& options) {
  const ShmLayout layout = ShmTransport::layout_for(world, options);
  auto segment = std::make_shared<SharedMemory>(SharedMemory::anonymous(layout.total_bytes()));
  ShmChannels::initialize(segment->data(), layout);
  return segment;
}

// Runs body on `world` threads; returns the first error any of them threw ("" if none).
template <typename Body>
std::string run_ranks(int world, const ShmOptions& options, Body&& body) {
  auto segment = make_segment(world, options);
  std::mutex mutex;
  std::string first_error;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        ShmTransport transport(segment, rank, world, options);
        transport.begin(test_context("test", rank));
        body(rank, transport);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        if (first_error.empty()) first_error = "rank " + std::to_string(rank) + ": " + e.what();
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  return first_error;
}

}  // namespace engine::testing
