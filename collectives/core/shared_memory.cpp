#include "collectives/core/shared_memory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "kernels/error.h"

namespace engine {
namespace {

[[noreturn]] void fail_errno(const std::string& what) {
  fail(what + ": " + std::strerror(errno));
}

void* map_fd(int fd, size_t bytes, const std::string& what) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) fail_errno(what + ": mmap of " + std::to_string(bytes) + " bytes");
  return data;
}

}  // namespace

SharedMemory::~SharedMemory() {
  if (data_ != nullptr) munmap(data_, size_);
}

SharedMemory::SharedMemory(SharedMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

SharedMemory& SharedMemory::operator=(SharedMemory&& other) noexcept {
  if (this != &other) {
    SharedMemory dying(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SharedMemory SharedMemory::anonymous(size_t bytes) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED)
    fail_errno("anonymous shared mapping of " + std::to_string(bytes) + " bytes");
  return SharedMemory(data, bytes);
}

SharedMemory SharedMemory::create(const std::string& name, size_t bytes) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) fail_errno("shm_open(" + name + ", O_CREAT)");
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int saved = errno;
    close(fd);
    shm_unlink(name.c_str());
    errno = saved;
    fail_errno("ftruncate(" + name + ", " + std::to_string(bytes) + ") (is /dev/shm big enough?)");
  }
  void* data = nullptr;
  try {
    data = map_fd(fd, bytes, name);
  } catch (...) {
    close(fd);
    shm_unlink(name.c_str());
    throw;
  }
  close(fd);
  return SharedMemory(data, bytes);
}

SharedMemory SharedMemory::open(const std::string& name, size_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) fail_errno("shm_open(" + name + ")");
  struct stat info {};
  if (fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) < bytes) {
    close(fd);
    fail("shared memory segment " + name + " is smaller than the expected " +
         std::to_string(bytes) + " bytes");
  }
  void* data = nullptr;
  try {
    data = map_fd(fd, bytes, name);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return SharedMemory(data, bytes);
}

SharedMemory SharedMemory::open_or_create(const std::string& name, size_t bytes) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) fail_errno("shm_open(" + name + ", O_CREAT)");
  // Two peers that both find the segment empty must not both size it (one could shrink it
  // under the other's mapping), so checking and sizing happen under an exclusive lock.
  if (flock(fd, LOCK_EX) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    fail_errno("flock(" + name + ")");
  }
  void* data = nullptr;
  try {
    struct stat info {};
    if (fstat(fd, &info) != 0) fail_errno("fstat(" + name + ")");
    const auto existing = static_cast<size_t>(info.st_size);
    if (existing == 0) {
      if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
        fail_errno("ftruncate(" + name + ", " + std::to_string(bytes) +
                   ") (is /dev/shm big enough?)");
      }
    } else if (existing != bytes) {
      fail("shared memory segment " + name + " has " + std::to_string(existing) +
           " bytes, not the expected " + std::to_string(bytes));
    }
    data = map_fd(fd, bytes, name);
  } catch (...) {
    flock(fd, LOCK_UN);
    close(fd);
    throw;
  }
  // Explicitly: the mapping keeps the open file, and so the lock, alive after close().
  flock(fd, LOCK_UN);
  close(fd);
  return SharedMemory(data, bytes);
}

void SharedMemory::unlink(const std::string& name) {
  shm_unlink(name.c_str());
}

}  // namespace engine
