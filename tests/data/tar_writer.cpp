#include "tests/data/tar_writer.h"

#include <cstdio>
#include <cstring>

namespace engine::data::testing {

void TarWriter::header(const std::string& name, uint64_t size, char type,
                       const std::string& prefix) {
  uint8_t block[512] = {};
  auto put = [&](size_t offset, const std::string& text) {
    std::memcpy(block + offset, text.data(), text.size());
  };
  put(0, name.substr(0, 100));
  put(100, "0000644");
  put(108, "0000000");
  put(116, "0000000");
  char number[16];
  std::snprintf(number, sizeof number, "%011llo", static_cast<unsigned long long>(size));
  put(124, number);
  put(136, "00000000000");
  block[156] = static_cast<uint8_t>(type);
  put(257, std::string("ustar\0"
                       "00",
                       8));
  put(345, prefix.substr(0, 155));
  std::memset(block + 148, ' ', 8);
  unsigned sum = 0;
  for (uint8_t b : block)
    sum += b;
  std::snprintf(number, sizeof number, "%06o", sum);
  std::memcpy(block + 148, number, 7);  // six digits and a NUL, then the space already there
  bytes_.insert(bytes_.end(), block, block + 512);
}

void TarWriter::data(const std::vector<uint8_t>& data) {
  bytes_.insert(bytes_.end(), data.begin(), data.end());
  bytes_.resize((bytes_.size() + 511) / 512 * 512, 0);
}

void TarWriter::add(const std::string& name, const std::vector<uint8_t>& bytes) {
  if (name.size() > 100) {
    std::vector<uint8_t> long_name(name.begin(), name.end());
    long_name.push_back(0);
    header("././@LongLink", long_name.size(), 'L');
    data(long_name);
  }
  header(name, bytes.size(), '0');
  data(bytes);
}

void TarWriter::add(const std::string& name, const std::string& text) {
  add(name, std::vector<uint8_t>(text.begin(), text.end()));
}

void TarWriter::add_with_prefix(const std::string& prefix, const std::string& name,
                                const std::vector<uint8_t>& bytes) {
  header(name, bytes.size(), '0', prefix);
  data(bytes);
}

void TarWriter::add_with_pax_path(const std::string& path, const std::vector<uint8_t>& bytes) {
  // "LEN path=VALUE\n", where LEN counts itself.
  const std::string body = " path=" + path + "\n";
  size_t length = body.size() + 1;
  while (std::to_string(length).size() + body.size() != length)
    ++length;
  const std::string record = std::to_string(length) + body;
  header("PaxHeaders/stand-in", record.size(), 'x');
  data(std::vector<uint8_t>(record.begin(), record.end()));
  header("stand-in-name", bytes.size(), '0');
  data(bytes);
}

void TarWriter::add_directory(const std::string& name) {
  header(name, 0, '5');
}

void TarWriter::finish() {
  bytes_.resize(bytes_.size() + 1024, 0);
}

}  // namespace engine::data::testing
