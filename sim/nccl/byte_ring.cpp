#include "sim/nccl/byte_ring.h"

#include <algorithm>
#include <cstring>

#include "kernels/error.h"

namespace engine::sim_nccl {

ByteRing::ByteRing(void* base, size_t capacity)
    : written_(static_cast<Counter*>(base)),
      read_(static_cast<Counter*>(base) + 1),
      data_(static_cast<std::byte*>(base) + 2 * kLine),
      capacity_(capacity) {
  ENGINE_REQUIRE(capacity != 0 && (capacity & (capacity - 1)) == 0,
                 "ByteRing: capacity must be a power of two");
}

size_t ByteRing::write_some(const void* data, size_t bytes) {
  const uint64_t head = written_->value.load(std::memory_order_relaxed);
  const uint64_t tail = read_->value.load(std::memory_order_acquire);
  const size_t count = std::min(bytes, capacity_ - static_cast<size_t>(head - tail));
  if (count == 0) return 0;
  const size_t at = static_cast<size_t>(head) & (capacity_ - 1);
  const size_t first = std::min(count, capacity_ - at);
  std::memcpy(data_ + at, data, first);
  std::memcpy(data_, static_cast<const std::byte*>(data) + first, count - first);
  written_->value.store(head + count, std::memory_order_release);
  return count;
}

size_t ByteRing::read_some(void* data, size_t bytes) {
  const uint64_t tail = read_->value.load(std::memory_order_relaxed);
  const uint64_t head = written_->value.load(std::memory_order_acquire);
  const size_t count = std::min(bytes, static_cast<size_t>(head - tail));
  if (count == 0) return 0;
  const size_t at = static_cast<size_t>(tail) & (capacity_ - 1);
  const size_t first = std::min(count, capacity_ - at);
  std::memcpy(data, data_ + at, first);
  std::memcpy(static_cast<std::byte*>(data) + first, data_, count - first);
  read_->value.store(tail + count, std::memory_order_release);
  return count;
}

bool ByteRing::has_data() const {
  return written_->value.load(std::memory_order_acquire) !=
         read_->value.load(std::memory_order_relaxed);
}

}  // namespace engine::sim_nccl
