// A mapping of shared memory: a named POSIX segment (ranks of one host map the same one) or
// an anonymous shared mapping (threads of one process standing in for ranks in tests).
// Move-only; unmaps on destruction. New mappings are zero-filled.
#pragma once

#include <cstddef>
#include <string>

namespace engine {

class SharedMemory {
 public:
  SharedMemory() = default;
  ~SharedMemory();
  SharedMemory(SharedMemory&& other) noexcept;
  SharedMemory& operator=(SharedMemory&& other) noexcept;
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  static SharedMemory anonymous(size_t bytes);
  // Creates the segment `name` ("/engine-...") of `bytes`; fails if it already exists.
  static SharedMemory create(const std::string& name, size_t bytes);
  // Maps an existing segment, which must be at least `bytes` long.
  static SharedMemory open(const std::string& name, size_t bytes);
  // Maps the segment `name`, creating it with `bytes` if it does not exist yet: for peers that
  // arrive in any order (the sim device's NCCL shim). An existing segment of another size is
  // an error naming both sizes; the size check and the creation are one step under a lock.
  static SharedMemory open_or_create(const std::string& name, size_t bytes);
  // Removes the name (mappings stay valid); no error if it is already gone.
  static void unlink(const std::string& name);

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  SharedMemory(void* data, size_t size) : data_(data), size_(size) {}
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace engine
