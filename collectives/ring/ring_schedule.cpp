#include "collectives/ring/ring_schedule.h"

#include <algorithm>

namespace engine {
namespace {
int wrap(int value, int world) {
  return ((value % world) + world) % world;
}
}  // namespace

RingStep ring_step(RingPhase phase, int rank, int world, int step) {
  if (phase == RingPhase::reduce_scatter) {
    return {wrap(rank - 1 - step, world), wrap(rank - 2 - step, world)};
  }
  return {wrap(rank - step, world), wrap(rank - 1 - step, world)};
}

ElementRange split_range(int64_t count, int parts, int index) {
  const int64_t base = count / parts;
  const int64_t larger = count % parts;
  const int64_t begin = index * base + std::min<int64_t>(index, larger);
  return {begin, base + (index < larger ? 1 : 0)};
}

int64_t piece_count(int64_t count, int64_t piece_elements) {
  return count <= 0 ? 0 : (count + piece_elements - 1) / piece_elements;
}

ElementRange piece_range(int64_t count, int64_t piece_elements, int64_t piece) {
  const int64_t begin = piece * piece_elements;
  return {begin, std::clamp<int64_t>(count - begin, 0, piece_elements)};
}

}  // namespace engine
