// Writes tar archives in memory for the shard tests: ustar headers (with the prefix field), GNU
// long names ('L') and pax paths ('x'), so the reader meets each form as other tools write it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace engine::data::testing {

class TarWriter {
 public:
  // A regular file; a name over 100 bytes goes in a GNU 'L' entry first.
  void add(const std::string& name, const std::vector<uint8_t>& data);
  void add(const std::string& name, const std::string& text);
  // A regular file whose name is in a ustar prefix + name split ("prefix/name").
  void add_with_prefix(const std::string& prefix, const std::string& name,
                       const std::vector<uint8_t>& data);
  // A regular file named by a pax extended header (its ustar name field is a stand-in).
  void add_with_pax_path(const std::string& path, const std::vector<uint8_t>& data);
  void add_directory(const std::string& name);
  // The two zero blocks that end an archive.
  void finish();
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void header(const std::string& name, uint64_t size, char type, const std::string& prefix = "");
  void data(const std::vector<uint8_t>& data);
  std::vector<uint8_t> bytes_;
};

}  // namespace engine::data::testing
