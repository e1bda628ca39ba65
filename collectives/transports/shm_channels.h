// Message FIFOs between the ranks of one host, in one shared memory segment: for every
// ordered pair (from, to) a ring of `slots` slots of `slot_bytes`, written by `from` and
// read by `to`. Each slot starts with a 64-byte header line holding its sequence number,
// its size and, for messages of up to 48 bytes, the payload itself, so a small message
// costs the receiver a single cache-line transfer.
//
// A sender may run `slots` messages ahead of its receiver. Waiting spins briefly, then
// yields the core a while (on oversubscribed hosts the peer may be waiting for it), then
// sleeps on a futex "doorbell" that the peer rings only when the waiter said it sleeps, so
// idle ranks do not burn the cores the others need. Every wait has a deadline: a
// peer that never answers ends the collective through handle_timeout (timeout.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/core/timeout.h"

namespace engine {

struct ShmSlotHeader;   // defined in shm_channels.cpp
struct ShmRankControl;  // defined in shm_channels.cpp

struct ShmLayout {
  int world = 1;
  int slots = 4;
  size_t slot_bytes = 256 << 10;

  static constexpr size_t kInlineBytes = 48;
  size_t total_bytes() const;
  size_t control_offset(int rank) const;
  size_t tail_offset(int from, int to) const;
  size_t slot_header_offset(int from, int to, int slot) const;
  size_t payload_offset(int from, int to, int slot) const;

 private:
  size_t payload_stride() const;
  size_t payload_start() const;
};

class ShmChannels {
 public:
  // Writes the segment header; done once, by the creator, before any rank attaches.
  static void initialize(void* base, const ShmLayout& layout);

  // Attaches rank `rank` to an initialized segment (checks its header).
  ShmChannels(void* base, const ShmLayout& layout, int rank, int spin_iterations);

  // The collective in progress (names it in timeout messages; sets the deadline).
  void set_context(const OpContext& context) { context_ = context; }
  // How timeout messages number the peers (default: as the segment does). A host's ranks
  // are a slice of the job; messages give their ranks in the job.
  void set_peer_ranks(std::vector<int> ranks) { peer_ranks_ = std::move(ranks); }

  // The place for the next message to `to`, waiting while `to` has `slots` messages unread.
  std::byte* begin_send(int to, size_t bytes);
  // Publishes that message.
  void end_send(int to, size_t bytes);

  struct Message {
    const std::byte* data;
    size_t bytes;
  };
  // The next message from `from`, waiting until it arrives.
  Message begin_recv(int from);
  // Hands its slot back to the sender.
  void end_recv(int from);

  const ShmLayout& layout() const { return layout_; }

 private:
  // The slot of message number `sequence` (from 1): messages cycle through the slots.
  int slot_of(uint64_t sequence) const { return static_cast<int>((sequence - 1) % layout_.slots); }
  ShmSlotHeader& slot_header(int from, int to, uint64_t sequence) const;
  std::atomic<uint64_t>& consumed(int from, int to) const;
  ShmRankControl& control(int rank) const;
  void ring_doorbell(int rank);
  // Whether the peer's process still exists, for the timeout message ("" for threads).
  std::string peer_note(int peer) const;
  template <typename Ready>
  void wait(Ready&& ready, int peer, std::string_view waiting_for);

  std::byte* base_;
  ShmLayout layout_;
  int rank_;
  int spin_iterations_;
  OpContext context_;
  std::vector<uint64_t> sent_;            // messages sent, per destination
  std::vector<uint64_t> known_consumed_;  // the destination's last seen read count
  std::vector<uint64_t> received_;        // messages received, per source
  std::vector<int> peer_ranks_;           // empty: peers are named by their index
};

}  // namespace engine
