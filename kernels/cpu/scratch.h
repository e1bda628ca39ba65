// Per-thread, grow-only scratch for the CPU kernels' temporaries (column chunks, partial
// filter gradients). A fresh multi-megabyte std::vector per call is zero-filled, and glibc
// maps such blocks anew and returns them on free, so every call paid for a memset and the
// page faults of its pages; a thread's buffers are kept instead, and only grow. Contents are
// unspecified: callers write what they later read.
#pragma once

#include <cstdint>
#include <memory>

namespace engine::cpu {

class ScratchFloats {
 public:
  // `count` floats, 64-byte aligned: one of this thread's kept buffers when one is free
  // (grown if needed), a private allocation otherwise.
  explicit ScratchFloats(int64_t count);
  ~ScratchFloats();
  ScratchFloats(const ScratchFloats&) = delete;
  ScratchFloats& operator=(const ScratchFloats&) = delete;

  float* data() const { return data_; }

 private:
  int slot_ = -1;  // the kept buffer in use, or -1 for a private one
  std::unique_ptr<float[]> owned_;
  float* data_ = nullptr;
};

}  // namespace engine::cpu
