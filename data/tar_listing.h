// The members of a tar file, from its headers alone: POSIX ustar, GNU tar's long names ('L'
// entries) and base-256 sizes, and pax extended headers ('x': path and size; 'g' is ignored).
// Only regular files are listed; directories, links and devices are passed over.
//
// The headers are read front to back with one 512-byte read each and the data skipped, so
// listing a 1 GB shard of 100 KB images costs about 10,000 small sequential reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace engine::data {

struct TarMember {
  std::string name;          // the member's path inside the archive
  uint64_t data_offset = 0;  // where its bytes start in the file
  uint64_t size = 0;
};

struct TarListing {
  std::vector<TarMember> members;  // regular files, in archive order
  // Empty for a well-formed archive; else why the listing stopped early (a truncated member, a
  // header that is not one), naming the offset and the last member read. The members before
  // that point are complete and listed.
  std::string damage;
};

// Throws engine::Error naming `path` when the file cannot be opened or read.
TarListing list_tar_members(const std::string& path);

// Reads `size` bytes at `offset` of the open file `fd` into `bytes`; false when the file ends
// first or a read fails (errno tells which).
bool read_exactly(int fd, uint64_t offset, uint64_t size, std::vector<uint8_t>& bytes);

}  // namespace engine::data
