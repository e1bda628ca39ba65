#include "data/tar_listing.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "kernels/error.h"

namespace engine::data {

namespace {

constexpr uint64_t kBlock = 512;
// No path or pax record set is anywhere near this; a larger one is damage, not a name to read.
constexpr uint64_t kMaxHeaderText = uint64_t{1} << 20;

// A NUL-terminated field of at most `width` bytes.
std::string_view field(const uint8_t* header, size_t offset, size_t width) {
  const auto* begin = reinterpret_cast<const char*>(header + offset);
  return {begin, strnlen(begin, width)};
}

// Octal digits (leading spaces, then digits, ended by NUL or space), or GNU's base-256 form
// (top bit of the first byte set) for sizes of 8 GiB and more.
std::optional<uint64_t> parse_number(const uint8_t* bytes, size_t width) {
  if (bytes[0] & 0x80) {
    uint64_t value = bytes[0] & 0x7f;
    for (size_t i = 1; i < width; ++i)
      value = (value << 8) | bytes[i];
    return value;
  }
  size_t i = 0;
  while (i < width && bytes[i] == ' ')
    ++i;
  uint64_t value = 0;
  bool any = false;
  for (; i < width && bytes[i] >= '0' && bytes[i] <= '7'; ++i, any = true)
    value = value * 8 + (bytes[i] - '0');
  if (i < width && bytes[i] != 0 && bytes[i] != ' ') return std::nullopt;
  return any ? std::optional(value) : std::optional<uint64_t>(0);
}

bool checksum_matches(const uint8_t* header) {
  const std::optional<uint64_t> stored = parse_number(header + 148, 8);
  if (!stored) return false;
  uint64_t sum = 0;
  for (size_t i = 0; i < kBlock; ++i)
    sum += (i >= 148 && i < 156) ? uint8_t{' '} : header[i];
  return sum == *stored;
}

bool all_zero(const uint8_t* block) {
  return std::all_of(block, block + kBlock, [](uint8_t b) { return b == 0; });
}

// Records "LEN key=value\n" of a pax header: the ones that matter here are path and size.
// `size` is -1 until a record sets it.
void parse_pax(std::string_view records, std::optional<std::string>& path, int64_t& size) {
  while (!records.empty()) {
    const size_t space = records.find(' ');
    if (space == std::string_view::npos) return;
    size_t length = 0;
    for (char c : records.substr(0, space)) {
      if (c < '0' || c > '9') return;
      length = length * 10 + static_cast<size_t>(c - '0');
    }
    if (length <= space + 1 || length > records.size()) return;
    std::string_view record = records.substr(space + 1, length - space - 2);  // drop the '\n'
    records.remove_prefix(length);
    const size_t equals = record.find('=');
    if (equals == std::string_view::npos) continue;
    const std::string_view key = record.substr(0, equals), value = record.substr(equals + 1);
    if (key == "path") path = std::string(value);
    if (key == "size") {
      int64_t parsed = 0;
      for (char c : value)
        parsed = parsed * 10 + (c - '0');
      size = parsed;
    }
  }
}

class File {
 public:
  explicit File(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd_ >= 0) close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

bool read_exactly(int fd, uint64_t offset, uint64_t size, std::vector<uint8_t>& bytes) {
  bytes.resize(size);
  uint64_t done = 0;
  while (done < size) {
    const ssize_t count =
        pread(fd, bytes.data() + done, size - done, static_cast<off_t>(offset + done));
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) {
      if (count == 0) errno = 0;
      return false;
    }
    done += static_cast<uint64_t>(count);
  }
  return true;
}

TarListing list_tar_members(const std::string& path) {
  const File file(path);
  if (file.fd() < 0) throw Error("cannot open the shard " + path + ": " + std::strerror(errno));
  struct stat info = {};
  if (fstat(file.fd(), &info) != 0 || !S_ISREG(info.st_mode)) {
    throw Error("the shard " + path + " is not a regular file");
  }
  const auto file_size = static_cast<uint64_t>(info.st_size);
  posix_fadvise(file.fd(), 0, 0, POSIX_FADV_SEQUENTIAL);

  TarListing listing;
  std::vector<uint8_t> header, data;
  std::optional<std::string> long_name, pax_path;
  int64_t pax_size = -1;
  std::string last_member = "(none)";
  auto damaged = [&](uint64_t offset, const std::string& what) {
    listing.damage = what + " at offset " + std::to_string(offset) + " (after member " +
                     last_member + "; the members before it are used)";
  };
  uint64_t offset = 0;
  while (true) {
    if (offset == file_size) break;  // no end-of-archive blocks: tolerated, as tar does
    if (offset + kBlock > file_size) {
      damaged(offset, "truncated: a partial header");
      break;
    }
    if (!read_exactly(file.fd(), offset, kBlock, header)) {
      throw Error("cannot read the shard " + path + ": " + std::strerror(errno));
    }
    if (all_zero(header.data())) break;  // end of archive
    if (!checksum_matches(header.data())) {
      damaged(offset, "not a tar header (checksum mismatch)");
      break;
    }
    const std::optional<uint64_t> header_size = parse_number(header.data() + 124, 12);
    if (!header_size) {
      damaged(offset, "a header with an unreadable size");
      break;
    }
    const char type = static_cast<char>(header[156]);
    // Entries that describe the next one or the archive ('K': GNU's long link name, 'X': old
    // Solaris pax) leave the pending name for the entry they precede.
    const bool metadata = type == 'L' || type == 'K' || type == 'x' || type == 'X' || type == 'g';
    const uint64_t size =
        (!metadata && pax_size >= 0) ? static_cast<uint64_t>(pax_size) : *header_size;
    std::string name;
    if (long_name) {
      name = *long_name;
    } else if (pax_path) {
      name = *pax_path;
    } else {
      const std::string_view prefix = field(header.data(), 345, 155);
      const std::string_view base = field(header.data(), 0, 100);
      const bool ustar = field(header.data(), 257, 5) == "ustar";
      name = (ustar && !prefix.empty()) ? std::string(prefix) + "/" + std::string(base)
                                        : std::string(base);
    }
    const uint64_t data_offset = offset + kBlock;
    if (size > file_size - data_offset) {
      damaged(offset, "truncated: member " + name + " needs " + std::to_string(size) +
                          " bytes, the file ends " + std::to_string(file_size - data_offset) +
                          " bytes after its header");
      break;
    }
    if ((type == 'L' || type == 'x') && size > kMaxHeaderText) {
      damaged(offset, "a long-name or pax header of " + std::to_string(size) + " bytes");
      break;
    }
    if (type == 'L' || type == 'x') {
      if (!read_exactly(file.fd(), data_offset, size, data)) {
        throw Error("cannot read the shard " + path + ": " + std::strerror(errno));
      }
      const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
      if (type == 'L') long_name = std::string(text.substr(0, text.find('\0')));
      if (type == 'x') parse_pax(text, pax_path, pax_size);
    } else if (!metadata) {
      if (type == '0' || type == '\0' || type == '7') {
        listing.members.push_back({name, data_offset, size});
      }
      last_member = name;
      long_name.reset();
      pax_path.reset();
      pax_size = -1;
    }
    offset = data_offset + (size + kBlock - 1) / kBlock * kBlock;
  }
  return listing;
}

}  // namespace engine::data
