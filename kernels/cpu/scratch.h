// Per-thread, grow-only scratch for the CPU kernels' temporaries: packed GEMM operands,
// column chunks, partial filter gradients. A fresh multi-megabyte buffer per call is mapped
// anew by glibc and returned on free, so every call paid for the page faults of its pages
// (and a std::vector also for its zero-fill); a thread's buffers are kept instead, and only
// grow. Contents are unspecified: callers write what they later read.
#pragma once

#include <cstdint>
#include <memory>
#include <new>

namespace engine::cpu {

// 64-byte aligned float storage (the AVX-512 kernels use aligned loads).
struct AlignedDelete {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using AlignedBuffer = std::unique_ptr<float[], AlignedDelete>;
AlignedBuffer aligned_floats(int64_t count);

class ScratchFloats {
 public:
  // `count` floats, 64-byte aligned: one of this thread's kept buffers when one is free
  // (the smallest that fits, else the largest, grown), a private allocation otherwise.
  explicit ScratchFloats(int64_t count);
  ~ScratchFloats();
  ScratchFloats(const ScratchFloats&) = delete;
  ScratchFloats& operator=(const ScratchFloats&) = delete;

  float* data() const { return data_; }

 private:
  int slot_ = -1;        // the kept buffer in use, or -1 for a private one
  AlignedBuffer owned_;  // the private one
  float* data_ = nullptr;
};

}  // namespace engine::cpu
