#include "collectives/transports/shm_channels.h"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <new>

#include "kernels/error.h"

namespace engine {
namespace {

constexpr uint64_t kMagic = 0x656e67696e65736dULL;  // "engine" "sm"
constexpr size_t kLine = 64;
constexpr size_t kPage = 4096;

size_t round_up(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

struct alignas(kLine) SegmentHeader {
  uint64_t magic;
  uint64_t world;
  uint64_t slots;
  uint64_t slot_bytes;
};

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, long nanoseconds) {
  const timespec timeout{nanoseconds / 1'000'000'000, nanoseconds % 1'000'000'000};
  // Not FUTEX_PRIVATE: the word is shared between processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

}  // namespace

struct alignas(kLine) ShmSlotHeader {
  std::atomic<uint64_t> sequence;  // the message number it holds (from 1); 0: never used
  uint64_t bytes;
  std::byte inline_payload[ShmLayout::kInlineBytes];
};
static_assert(sizeof(ShmSlotHeader) == kLine);

// The owner's doorbell and its "I am asleep" flag, on separate lines: peers write the first.
struct ShmRankControl {
  alignas(kLine) std::atomic<uint32_t> doorbell;
  alignas(kLine) std::atomic<uint32_t> sleeping;
  std::atomic<int32_t> pid;  // of the attached process, for timeout messages
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

size_t ShmLayout::control_offset(int rank) const {
  return kLine + static_cast<size_t>(rank) * sizeof(ShmRankControl);
}
size_t ShmLayout::tail_offset(int from, int to) const {
  return control_offset(world) + static_cast<size_t>(from * world + to) * kLine;
}
size_t ShmLayout::slot_header_offset(int from, int to, int slot) const {
  return tail_offset(world, 0) + (static_cast<size_t>(from * world + to) * slots + slot) * kLine;
}
size_t ShmLayout::payload_stride() const {
  return round_up(slot_bytes, kPage);
}
size_t ShmLayout::payload_start() const {
  return round_up(slot_header_offset(world, 0, 0), kPage);
}
size_t ShmLayout::payload_offset(int from, int to, int slot) const {
  return payload_start() +
         (static_cast<size_t>(from * world + to) * slots + slot) * payload_stride();
}
size_t ShmLayout::total_bytes() const {
  return payload_offset(world, 0, 0);
}

void ShmChannels::initialize(void* base, const ShmLayout& layout) {
  auto* bytes = static_cast<std::byte*>(base);
  new (bytes) SegmentHeader{kMagic, static_cast<uint64_t>(layout.world),
                            static_cast<uint64_t>(layout.slots), layout.slot_bytes};
  for (int rank = 0; rank < layout.world; ++rank) {
    auto* control = new (bytes + layout.control_offset(rank)) ShmRankControl;
    control->doorbell.store(0);
    control->sleeping.store(0);
    control->pid.store(0);
    for (int to = 0; to < layout.world; ++to) {
      new (bytes + layout.tail_offset(rank, to)) std::atomic<uint64_t>(0);
      for (int slot = 0; slot < layout.slots; ++slot) {
        auto* header = new (bytes + layout.slot_header_offset(rank, to, slot)) ShmSlotHeader;
        header->sequence.store(0);
        header->bytes = 0;
      }
    }
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

ShmChannels::ShmChannels(void* base, const ShmLayout& layout, int rank, int spin_iterations)
    : base_(static_cast<std::byte*>(base)),
      layout_(layout),
      rank_(rank),
      spin_iterations_(spin_iterations),
      sent_(layout.world, 0),
      known_consumed_(layout.world, 0),
      received_(layout.world, 0) {
  const auto* header = reinterpret_cast<const SegmentHeader*>(base_);
  if (header->magic != kMagic || header->world != static_cast<uint64_t>(layout.world) ||
      header->slots != static_cast<uint64_t>(layout.slots) ||
      header->slot_bytes != layout.slot_bytes) {
    fail("shared memory segment does not match this communicator (world " +
         std::to_string(layout.world) + ", " + std::to_string(layout.slots) + " slots of " +
         std::to_string(layout.slot_bytes) + " bytes)");
  }
  ENGINE_REQUIRE(layout.slots >= 2, "ShmChannels: at least two slots per pair are needed");
  control(rank_).pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
}

std::string ShmChannels::peer_note(int peer) const {
  const int32_t pid = control(peer).pid.load(std::memory_order_relaxed);
  if (pid <= 0 || pid == getpid()) return {};  // threads standing in for ranks share a pid
  if (kill(pid, 0) == 0 || errno != ESRCH)
    return "its process " + std::to_string(pid) + " is alive";
  return "its process " + std::to_string(pid) + " has exited";
}

ShmSlotHeader& ShmChannels::slot_header(int from, int to, uint64_t sequence) const {
  const int slot = slot_of(sequence);
  return *reinterpret_cast<ShmSlotHeader*>(base_ + layout_.slot_header_offset(from, to, slot));
}

std::atomic<uint64_t>& ShmChannels::consumed(int from, int to) const {
  return *reinterpret_cast<std::atomic<uint64_t>*>(base_ + layout_.tail_offset(from, to));
}

ShmRankControl& ShmChannels::control(int rank) const {
  return *reinterpret_cast<ShmRankControl*>(base_ + layout_.control_offset(rank));
}

void ShmChannels::ring_doorbell(int rank) {
  // Pairs with the fence in wait(): either the sleeper sees our update, or we see it sleeping.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  ShmRankControl& peer = control(rank);
  if (peer.sleeping.load(std::memory_order_relaxed) != 0) {
    peer.doorbell.fetch_add(1, std::memory_order_relaxed);
    futex_wake_all(&peer.doorbell);
  }
}

template <typename Ready>
void ShmChannels::wait(Ready&& ready, int peer, std::string_view waiting_for) {
  // Spin, then yield (Backoff), then sleep on the futex.
  Backoff backoff(spin_iterations_);
  do {
    if (ready()) return;
  } while (backoff.pause_unless_sleeping());
  const Deadline deadline(context_.timeout);
  ShmRankControl& mine = control(rank_);
  while (true) {
    mine.sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const uint32_t bell = mine.doorbell.load(std::memory_order_relaxed);
    if (ready()) break;
    futex_wait(&mine.doorbell, bell, 50'000'000);
    if (ready()) break;
    if (deadline.expired()) {
      mine.sleeping.store(0, std::memory_order_relaxed);
      const int named = peer_ranks_.empty() ? peer : peer_ranks_.at(peer);
      handle_timeout(context_, named, waiting_for, deadline.waited_seconds(), peer_note(peer));
    }
  }
  mine.sleeping.store(0, std::memory_order_relaxed);
}

std::byte* ShmChannels::begin_send(int to, size_t bytes) {
  ENGINE_REQUIRE(bytes <= layout_.slot_bytes, "ShmChannels: message larger than a slot");
  const uint64_t sequence = sent_[to] + 1;
  const uint64_t needed = sequence - layout_.slots;  // the receiver must have read this many
  if (sequence > static_cast<uint64_t>(layout_.slots) && known_consumed_[to] < needed) {
    std::atomic<uint64_t>& tail = consumed(rank_, to);
    wait(
        [&] {
          known_consumed_[to] = tail.load(std::memory_order_acquire);
          return known_consumed_[to] >= needed;
        },
        to, "a free slot at");
  }
  if (bytes <= ShmLayout::kInlineBytes) return slot_header(rank_, to, sequence).inline_payload;
  const int slot = slot_of(sequence);
  return base_ + layout_.payload_offset(rank_, to, slot);
}

void ShmChannels::end_send(int to, size_t bytes) {
  const uint64_t sequence = ++sent_[to];
  ShmSlotHeader& header = slot_header(rank_, to, sequence);
  header.bytes = bytes;
  header.sequence.store(sequence, std::memory_order_release);
  ring_doorbell(to);
}

ShmChannels::Message ShmChannels::begin_recv(int from) {
  const uint64_t sequence = received_[from] + 1;
  ShmSlotHeader& header = slot_header(from, rank_, sequence);
  wait([&] { return header.sequence.load(std::memory_order_acquire) == sequence; }, from,
       "data from");
  const size_t bytes = header.bytes;
  if (bytes <= ShmLayout::kInlineBytes) return {header.inline_payload, bytes};
  const int slot = slot_of(sequence);
  return {base_ + layout_.payload_offset(from, rank_, slot), bytes};
}

void ShmChannels::end_recv(int from) {
  const uint64_t sequence = ++received_[from];
  consumed(from, rank_).store(sequence, std::memory_order_release);
  ring_doorbell(from);
}

}  // namespace engine
