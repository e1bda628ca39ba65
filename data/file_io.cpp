#include "data/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "data/decode.h"

namespace engine::data {

namespace {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void system_failure(const std::string& path, const char* what) {
  throw BadImageError(std::string(what) + ": " + std::strerror(errno), path);
}

}  // namespace

void read_file(const std::string& path, std::vector<uint8_t>& bytes, uint64_t max_bytes) {
  const FileDescriptor file(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) system_failure(path, "cannot open");
  struct stat info;
  if (fstat(file.get(), &info) != 0) system_failure(path, "cannot stat");
  if (!S_ISREG(info.st_mode)) throw BadImageError("not a regular file", path);
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size > max_bytes) {
    throw BadImageError("file of " + std::to_string(size) + " bytes is larger than the limit of " +
                            std::to_string(max_bytes) + " bytes",
                        path);
  }
  bytes.resize(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t count = read(file.get(), bytes.data() + done, size - done);
    if (count < 0) {
      if (errno == EINTR) continue;
      system_failure(path, "read error");
    }
    if (count == 0) break;  // the file shrank while we read it
    done += static_cast<size_t>(count);
  }
  bytes.resize(done);
}

void decode_image_file(const std::string& path, std::vector<uint8_t>& bytes, RgbImage& image,
                       const DecodeLimits& limits) {
  read_file(path, bytes);
  try {
    decode_image(bytes, read_image_header(bytes, limits), 8, image);
  } catch (const BadImageError& error) {
    throw BadImageError(error.reason(), path);
  }
}

}  // namespace engine::data
