#include "kernels/cpu/scratch.h"

#include <algorithm>
#include <array>
#include <new>

namespace engine::cpu {
namespace {

struct AlignedDelete {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using KeptBuffer = std::unique_ptr<float[], AlignedDelete>;

float* aligned_floats(int64_t count) {
  return static_cast<float*>(::operator new[](
      static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float), std::align_val_t{64}));
}

// A few buffers per thread: a kernel holds at most three temporaries at once.
struct ThreadBuffers {
  std::array<KeptBuffer, 4> data;
  std::array<int64_t, 4> capacity{};
  std::array<bool, 4> in_use{};
};
thread_local ThreadBuffers buffers;

}  // namespace

ScratchFloats::ScratchFloats(int64_t count) {
  for (int slot = 0; slot < static_cast<int>(buffers.data.size()); ++slot) {
    if (buffers.in_use[slot]) continue;
    if (buffers.capacity[slot] < count) {
      buffers.data[slot].reset(aligned_floats(count));
      buffers.capacity[slot] = count;
    }
    buffers.in_use[slot] = true;
    slot_ = slot;
    data_ = buffers.data[slot].get();
    return;
  }
  owned_.reset(new float[static_cast<size_t>(std::max<int64_t>(count, 1))]);
  data_ = owned_.get();
}

ScratchFloats::~ScratchFloats() {
  if (slot_ >= 0) buffers.in_use[slot_] = false;
}

}  // namespace engine::cpu
