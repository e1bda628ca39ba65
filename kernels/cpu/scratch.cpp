#include "kernels/cpu/scratch.h"

#include <algorithm>
#include <array>

namespace engine::cpu {
namespace {

// A kernel holds at most five temporaries at once on one thread (the grouped filter
// gradient: dW^T, the partials, a column chunk, a packed dY chunk and the GEMM's packed A
// tiles); one spare.
constexpr int kSlots = 6;

struct ThreadBuffers {
  std::array<AlignedBuffer, kSlots> data;
  std::array<int64_t, kSlots> capacity{};
  std::array<bool, kSlots> in_use{};
};
thread_local ThreadBuffers buffers;

// The free slot to use for `count` floats: the smallest that already fits, else the largest
// (to be grown), so that a small temporary does not grow a buffer it need not; -1 if none.
int pick_slot(int64_t count) {
  int fitting = -1, largest = -1;
  for (int slot = 0; slot < kSlots; ++slot) {
    if (buffers.in_use[slot]) continue;
    const int64_t capacity = buffers.capacity[slot];
    if (capacity >= count && (fitting < 0 || capacity < buffers.capacity[fitting])) fitting = slot;
    if (largest < 0 || capacity > buffers.capacity[largest]) largest = slot;
  }
  return fitting >= 0 ? fitting : largest;
}

}  // namespace

AlignedBuffer aligned_floats(int64_t count) {
  return AlignedBuffer(
      new (std::align_val_t{64}) float[static_cast<size_t>(std::max<int64_t>(count, 1))]);
}

ScratchFloats::ScratchFloats(int64_t count) {
  slot_ = pick_slot(count);
  if (slot_ < 0) {
    owned_ = aligned_floats(count);
    data_ = owned_.get();
    return;
  }
  if (buffers.capacity[slot_] < count) {
    buffers.data[slot_] = aligned_floats(count);
    buffers.capacity[slot_] = count;
  }
  buffers.in_use[slot_] = true;
  data_ = buffers.data[slot_].get();
}

ScratchFloats::~ScratchFloats() {
  if (slot_ >= 0) buffers.in_use[slot_] = false;
}

}  // namespace engine::cpu
