// The ring schedule: which chunk each rank sends and receives at each step of the
// reduce-scatter and all-gather phases, and how a buffer is cut into pieces and chunks.
// One set of pure functions, shared by every transport and tested exhaustively
// (tests/collectives/test_ring_schedule.cpp).
//
// Ranks form the ring r -> r+1 (mod n). A buffer is processed in pieces (one message per
// chunk per step, so all steps of a piece stay in cache); each piece is cut into n chunks.
//
// Reduce-scatter, steps s = 0 .. n-2: rank r sends chunk (r-1-s) and receives chunk
// (r-2-s), adding its own contribution; after the last step rank r holds chunk r reduced
// over every rank. All-gather, steps s = 0 .. n-2: rank r sends chunk (r-s) and receives
// chunk (r-1-s). What a rank sends at step s+1 is exactly what it received at step s, which
// lets transports fuse "receive, reduce, forward" into one pass (as NCCL's primitives do).
#pragma once

#include <cstdint>

namespace engine {

enum class RingPhase { reduce_scatter, all_gather };

struct RingStep {
  int send_chunk = 0;  // chunk index sent to rank (r+1) % n
  int recv_chunk = 0;  // chunk index received from rank (r-1) % n
};

// The schedule. Requires world >= 2, 0 <= rank < world, 0 <= step < world - 1.
RingStep ring_step(RingPhase phase, int rank, int world, int step);

inline int ring_right(int rank, int world) {
  return (rank + 1) % world;
}
inline int ring_left(int rank, int world) {
  return (rank + world - 1) % world;
}

// A range of elements [begin, begin + count).
struct ElementRange {
  int64_t begin = 0;
  int64_t count = 0;
  friend bool operator==(const ElementRange&, const ElementRange&) = default;
};

// Part `index` of `count` elements cut into `parts` contiguous parts whose sizes differ by
// at most one (the first count % parts parts are one larger). Empty parts are allowed.
ElementRange split_range(int64_t count, int parts, int index);

// How many pieces a buffer of `count` elements needs when one piece holds at most
// `piece_elements` (>= 1): ceil(count / piece_elements), 0 for an empty buffer.
int64_t piece_count(int64_t count, int64_t piece_elements);

// Piece `piece` of a buffer of `count` elements cut into pieces of `piece_elements`.
ElementRange piece_range(int64_t count, int64_t piece_elements, int64_t piece);

}  // namespace engine
