// The ring schedule, exhaustively for world sizes 1..8: neighbours agree on every message,
// what a rank forwards is what it just received (so transports may fuse the two), each
// chunk is reduced over every rank exactly once and ends on its owner, and pieces and
// chunks cover awkward counts (0, fewer elements than ranks, primes) exactly once.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "collectives/ring/ring_schedule.h"

namespace engine {
namespace {

constexpr int kMaxWorld = 8;
const int64_t kCounts[] = {0, 1, 2, 3, 5, 7, 8, 9, 13, 16, 31, 97, 257, 1021};
const int64_t kPieceSizes[] = {1, 2, 3, 5, 64, 1 << 20};

TEST(RingSchedule, SplitRangeCoversEveryElementOnceInBalancedParts) {
  for (int parts = 1; parts <= kMaxWorld + 1; ++parts) {
    for (int64_t count = 0; count <= 200; ++count) {
      int64_t next = 0, smallest = count, largest = 0;
      for (int index = 0; index < parts; ++index) {
        const ElementRange part = split_range(count, parts, index);
        EXPECT_EQ(part.begin, next)
            << "count " << count << " parts " << parts << " index " << index;
        next = part.begin + part.count;
        smallest = std::min(smallest, part.count);
        largest = std::max(largest, part.count);
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(largest - smallest, 1) << "count " << count << " parts " << parts;
    }
  }
}

TEST(RingSchedule, PiecesCoverTheBufferInOrder) {
  for (int64_t count : kCounts) {
    for (int64_t piece_elements : kPieceSizes) {
      const int64_t pieces = piece_count(count, piece_elements);
      EXPECT_EQ(pieces, (count + piece_elements - 1) / piece_elements);
      int64_t next = 0;
      for (int64_t piece = 0; piece < pieces; ++piece) {
        const ElementRange range = piece_range(count, piece_elements, piece);
        EXPECT_EQ(range.begin, next);
        EXPECT_GT(range.count, 0);
        EXPECT_LE(range.count, piece_elements);
        next += range.count;
      }
      EXPECT_EQ(next, count) << "count " << count << " piece " << piece_elements;
    }
  }
}

TEST(RingSchedule, NeighboursAgreeAndForwardWhatTheyReceived) {
  for (int world = 2; world <= kMaxWorld; ++world) {
    for (RingPhase phase : {RingPhase::reduce_scatter, RingPhase::all_gather}) {
      for (int rank = 0; rank < world; ++rank) {
        const int right = ring_right(rank, world);
        EXPECT_EQ(ring_left(right, world), rank);
        for (int step = 0; step < world - 1; ++step) {
          const RingStep mine = ring_step(phase, rank, world, step);
          EXPECT_EQ(ring_step(phase, right, world, step).recv_chunk, mine.send_chunk)
              << "world " << world << " rank " << rank << " step " << step;
          EXPECT_NE(mine.send_chunk, mine.recv_chunk);
          if (step + 1 < world - 1) {
            EXPECT_EQ(ring_step(phase, rank, world, step + 1).send_chunk, mine.recv_chunk)
                << "world " << world << " rank " << rank << " step " << step;
          }
        }
      }
    }
  }
}

TEST(RingSchedule, ReduceScatterEndsWithOwnChunkAndAllGatherStartsFromIt) {
  for (int world = 2; world <= kMaxWorld; ++world) {
    for (int rank = 0; rank < world; ++rank) {
      EXPECT_EQ(ring_step(RingPhase::reduce_scatter, rank, world, world - 2).recv_chunk, rank);
      EXPECT_EQ(ring_step(RingPhase::all_gather, rank, world, 0).send_chunk, rank);
      std::set<int> gathered = {rank};
      for (int step = 0; step < world - 1; ++step) {
        gathered.insert(ring_step(RingPhase::all_gather, rank, world, step).recv_chunk);
      }
      EXPECT_EQ(static_cast<int>(gathered.size()), world) << "world " << world << " rank " << rank;
    }
  }
}

// Runs the schedule the way RingAlgorithms::all_reduce_ring does, on bitmasks of the ranks
// whose contribution each element holds, and checks nothing is counted twice or lost.
void simulate_all_reduce(int world, int64_t count, int64_t message_elements) {
  SCOPED_TRACE("world " + std::to_string(world) + " count " + std::to_string(count) + " message " +
               std::to_string(message_elements));
  const uint32_t everyone = (1u << world) - 1;
  std::vector<std::vector<uint32_t>> held(world);
  for (int rank = 0; rank < world; ++rank)
    held[rank].assign(count, 1u << rank);
  const int64_t piece_elements = message_elements * world;
  for (int64_t piece = 0; piece < piece_count(count, piece_elements); ++piece) {
    const ElementRange range = piece_range(count, piece_elements, piece);
    auto chunk = [&](int index) {
      ElementRange part = split_range(range.count, world, index);
      part.begin += range.begin;
      EXPECT_LE(part.count, message_elements);
      return part;
    };
    for (RingPhase phase : {RingPhase::reduce_scatter, RingPhase::all_gather}) {
      for (int step = 0; step < world - 1; ++step) {
        // Every rank sends what it holds at the start of the step (messages cross at once).
        std::vector<std::vector<uint32_t>> sent(world);
        for (int rank = 0; rank < world; ++rank) {
          const ElementRange part = chunk(ring_step(phase, rank, world, step).send_chunk);
          sent[rank].assign(held[rank].begin() + part.begin,
                            held[rank].begin() + part.begin + part.count);
        }
        for (int rank = 0; rank < world; ++rank) {
          const ElementRange part = chunk(ring_step(phase, rank, world, step).recv_chunk);
          const std::vector<uint32_t>& message = sent[ring_left(rank, world)];
          ASSERT_EQ(static_cast<int64_t>(message.size()), part.count);
          for (int64_t i = 0; i < part.count; ++i) {
            uint32_t& mine = held[rank][part.begin + i];
            if (phase == RingPhase::reduce_scatter) {
              ASSERT_EQ(mine & message[i], 0u) << "a contribution counted twice";
              mine |= message[i];
            } else {
              ASSERT_EQ(message[i], everyone) << "all-gather forwarded a partial result";
              mine = message[i];
            }
          }
        }
      }
      if (phase == RingPhase::reduce_scatter) {
        for (int rank = 0; rank < world; ++rank) {
          const ElementRange own = chunk(rank);
          for (int64_t i = 0; i < own.count; ++i)
            ASSERT_EQ(held[rank][own.begin + i], everyone);
        }
      }
    }
  }
  for (int rank = 0; rank < world; ++rank) {
    for (int64_t i = 0; i < count; ++i)
      ASSERT_EQ(held[rank][i], everyone) << "rank " << rank;
  }
}

TEST(RingSchedule, AllReduceSimulationReducesEveryElementOnceForAwkwardCounts) {
  for (int world = 2; world <= kMaxWorld; ++world) {
    for (int64_t count : kCounts) {
      for (int64_t message_elements :
           {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{7}, int64_t{64}}) {
        simulate_all_reduce(world, count, message_elements);
      }
    }
    simulate_all_reduce(world, world - 1, 1);
  }
}

}  // namespace
}  // namespace engine
