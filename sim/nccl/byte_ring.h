// A single-producer single-consumer byte ring in shared memory: the sim device's NCCL shim
// moves every byte from one rank to another through the ring of that ordered pair. Both calls
// are non-blocking (they move what fits or what is there and return the count), so one
// progress loop can drive all the sends and receives of an NCCL group at once, as NCCL's
// kernels do; a ring that blocked would deadlock a grouped send+recv around the ranks.
//
// The producer owns `written`, the consumer owns `read`, both running byte totals: a release
// store publishes the bytes (or the free space) behind it, an acquire load on the other side
// makes them visible. shm_channels.h is the blocking, message-sized counterpart of the CPU ring.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace engine::sim_nccl {

class ByteRing {
 public:
  static constexpr size_t kLine = 64;
  // The control lines (two: producer and consumer do not share one) and the data behind them.
  static size_t footprint(size_t capacity) { return 2 * kLine + capacity; }

  // `base` points at footprint(capacity) zero-filled (or previously used) bytes; capacity is
  // a power of two.
  ByteRing(void* base, size_t capacity);

  // Copies up to `bytes` of `data` into the free space; returns how many.
  size_t write_some(const void* data, size_t bytes);
  // Copies up to `bytes` of what has arrived into `data`; returns how many.
  size_t read_some(void* data, size_t bytes);
  // Whether bytes written are waiting to be read (for the consumer).
  bool has_data() const;

 private:
  struct alignas(kLine) Counter {
    std::atomic<uint64_t> value;
  };
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared between processes");

  Counter* written_;
  Counter* read_;
  std::byte* data_;
  size_t capacity_;
};

}  // namespace engine::sim_nccl
