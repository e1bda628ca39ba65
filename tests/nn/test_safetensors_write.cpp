// The safetensors writer: round trips through memory and files, its input checks, and the
// atomic write (a failed write leaves the old file as it was and no temporary file behind).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "kernels/error.h"
#include "nn/safetensors.h"
#include "tests/error_text.h"
#include "tests/nn/safetensors_test_files.h"

namespace engine::nn {
namespace {

namespace fs = std::filesystem;

using engine::testing::contains;

// "(no error)" when body throws none.
template <typename Body>
std::string error_of(Body&& body) {
  return engine::testing::error_of(body, "(no error)");
}

std::vector<std::byte> pattern(size_t count, unsigned seed) {
  std::vector<std::byte> bytes(count);
  for (size_t i = 0; i < count; ++i)
    bytes[i] = static_cast<std::byte>((i * 131 + seed) & 0xFF);
  return bytes;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> folder_listing(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class SafetensorsWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "safetensors_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    folder_ = templ;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::permissions(folder_, fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(folder_, ignored);
  }
  fs::path folder_;
};

// Every dtype, a scalar, an empty tensor, names and metadata that need escaping.
struct Sample {
  std::vector<std::vector<std::byte>> data = {
      pattern(24, 1), pattern(8, 2), pattern(8, 3), pattern(0, 4),  pattern(3, 5),  pattern(16, 6),
      pattern(4, 7),  pattern(2, 8), pattern(1, 9), pattern(2, 10), pattern(8, 11), pattern(4, 12)};
  std::vector<SafetensorsTensor> tensors = {
      {"conv1.weight", "F32", {2, 1, 3}, data[0].data()},
      {"bn1.bias \"quoted\"\n\\", "BF16", {4}, data[1].data()},
      {"step", "I64", {}, data[2].data()},
      {"empty", "F16", {0, 5}, nullptr},
      {"mask", "BOOL", {3}, data[4].data()},
      {"caf\xc3\xa9.\xf0\x9f\x98\x80", "F64", {2}, data[5].data()},
      {"i32", "I32", {1}, data[6].data()},
      {"i16", "I16", {1}, data[7].data()},
      {"i8", "I8", {1}, data[8].data()},
      {"u8", "U8", {1, 1, 2}, data[9].data()},
      {"u64", "U64", {1}, data[10].data()},
      {"u32", "U32", {1}, data[11].data()},
  };
  std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"note", "tab\there, \"quotes\", \x01 and \xe2\x82\xac"}};
};

void expect_same(const SafetensorsReader& reader, const Sample& sample) {
  ASSERT_EQ(reader.entries().size(), sample.tensors.size());
  for (size_t i = 0; i < sample.tensors.size(); ++i) {
    const SafetensorsEntry& entry = reader.entries()[i];
    SCOPED_TRACE(entry.name);
    EXPECT_EQ(entry.name, sample.tensors[i].name);  // the order given
    EXPECT_EQ(entry.dtype, sample.tensors[i].dtype);
    EXPECT_EQ(entry.shape, sample.tensors[i].shape);
    EXPECT_EQ(reader.read(entry), i == 3 ? std::vector<std::byte>{} : sample.data[i]);
  }
  EXPECT_EQ(reader.metadata(), sample.metadata);
}

TEST(SafetensorsEncode, RoundTripIsBitExact) {
  const Sample sample;
  const std::vector<std::byte> file = encode_safetensors(sample.tensors, sample.metadata);
  expect_same(SafetensorsReader::parse(file), sample);
  // The data section starts 8-byte aligned, as the reference writer pads it.
  const SafetensorsReader reader = SafetensorsReader::parse(file);
  EXPECT_EQ((file.size() - reader.data_section_bytes()) % 8, 0u);
}

TEST(SafetensorsEncode, RejectsWhatCouldNotBeReadBack) {
  const std::vector<std::byte> data(16);
  const auto error_for = [&](SafetensorsTensor tensor) {
    const std::vector<SafetensorsTensor> tensors = {tensor};
    return error_of([&] { encode_safetensors(tensors, {}, "out.safetensors"); });
  };
  EXPECT_TRUE(contains(error_for({"a", "F33", {4}, data.data()}),
                       "out.safetensors: tensor 'a': unknown dtype 'F33'"));
  EXPECT_TRUE(contains(error_for({"a", "F32", {-1, 4}, data.data()}),
                       "tensor 'a': negative dimension in shape [-1, 4]"));
  EXPECT_TRUE(contains(error_for({"a", "F32", {4}, nullptr}), "tensor 'a': no data for its 16"));
  EXPECT_TRUE(contains(error_for({"__metadata__", "F32", {}, data.data()}),
                       "the tensor name \"__metadata__\" is reserved"));
  EXPECT_TRUE(contains(error_for({"bad\xff", "U8", {1}, data.data()}),
                       "the name of tensor 'bad\xff' is not valid UTF-8 (byte 3)"));
  EXPECT_TRUE(contains(error_for({"a", "U8", {INT64_MAX, INT64_MAX}, data.data()}),
                       "the file's size would overflow 64 bits"));
  const std::vector<SafetensorsTensor> twice = {{"a", "U8", {1}, data.data()},
                                                {"a", "U8", {1}, data.data()}};
  EXPECT_TRUE(contains(error_of([&] { encode_safetensors(twice); }),
                       "<memory>: duplicate tensor name 'a'"));
  EXPECT_TRUE(contains(error_of([&] {
                         encode_safetensors({}, {{"k", "\xc3"}});
                       }),
                       "metadata value of 'k' is not valid UTF-8 (byte 0)"));
}

TEST_F(SafetensorsWrite, RoundTripThroughAFile) {
  const Sample sample;
  const std::string path = (folder_ / "model.safetensors").string();
  write_safetensors(path, sample.tensors, sample.metadata);
  expect_same(SafetensorsReader::open(path), sample);
  // Identical bytes to the memory encoder, and nothing else left in the folder.
  const std::vector<std::byte> encoded = encode_safetensors(sample.tensors, sample.metadata);
  EXPECT_EQ(read_text(path),
            std::string(reinterpret_cast<const char*>(encoded.data()), encoded.size()));
  EXPECT_EQ(folder_listing(folder_), std::vector<std::string>{"model.safetensors"});
}

TEST_F(SafetensorsWrite, ReplacesAnExistingFile) {
  const std::string path = (folder_ / "model.safetensors").string();
  std::ofstream(path) << "old contents";
  const std::vector<std::byte> data = pattern(4, 3);
  const std::vector<SafetensorsTensor> tensors = {{"x", "F32", {1}, data.data()}};
  write_safetensors(path, tensors);
  EXPECT_EQ(SafetensorsReader::open(path).read(SafetensorsReader::open(path).at("x")), data);
  EXPECT_EQ(folder_listing(folder_), std::vector<std::string>{"model.safetensors"});
}

TEST_F(SafetensorsWrite, MissingFolderNamesThePathAndReason) {
  const std::string path = (folder_ / "no_such_folder" / "model.safetensors").string();
  const std::string error = error_of([&] { write_safetensors(path, {}); });
  EXPECT_TRUE(contains(error, path + ": cannot create the temporary file "));
  EXPECT_TRUE(contains(error, "No such file or directory"));
  EXPECT_EQ(folder_listing(folder_), std::vector<std::string>{});
}

TEST_F(SafetensorsWrite, RenameOntoAFolderFailsCleanly) {
  const fs::path target = folder_ / "model.safetensors";
  fs::create_directory(target);
  const std::string error = error_of([&] { write_safetensors(target.string(), {}); });
  EXPECT_TRUE(contains(error, target.string() + ": cannot rename the temporary file "));
  EXPECT_TRUE(contains(error, "Is a directory"));
  EXPECT_TRUE(fs::is_directory(target));
  EXPECT_EQ(folder_listing(folder_), std::vector<std::string>{"model.safetensors"});
}

// Runs `body` in a forked child (for process-wide settings: a user id, a file size limit,
// which must not reach this process's own output) and returns the error it reported.
template <typename Body>
std::string error_in_child(Body&& body) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "(pipe failed)";
  const pid_t child = ::fork();
  if (child < 0) return "(fork failed)";
  if (child == 0) {
    ::close(pipe_fds[0]);
    const std::string error = error_of(body);
    (void)!::write(pipe_fds[1], error.data(), error.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string error;
  char buffer[512];
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) {
    error.append(buffer, static_cast<size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) error += " (the child failed)";
  return error;
}

TEST_F(SafetensorsWrite, ReadOnlyFolderNamesThePathAndReason) {
  const std::string path = (folder_ / "model.safetensors").string();
  fs::permissions(folder_, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                               fs::perms::group_exec | fs::perms::others_read |
                               fs::perms::others_exec);
  const std::string error = error_in_child([&] {
    // Root writes to read-only folders: become nobody first.
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      fail("cannot drop root privileges for the test");
    }
    write_safetensors(path, {});
  });
  EXPECT_TRUE(contains(error, path + ": cannot create the temporary file"));
  EXPECT_TRUE(contains(error, "Permission denied"));
  EXPECT_EQ(folder_listing(folder_), std::vector<std::string>{});
}

// A full disk, simulated by a file size limit (EFBIG after a partial write): the old file
// stays, the partial temporary file is removed.
TEST_F(SafetensorsWrite, FullDiskLeavesTheOldFileIntact) {
  const std::string path = (folder_ / "model.safetensors").string();
  std::ofstream(path) << "the previous checkpoint";
  const std::string error = error_in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{64 * 1024, 64 * 1024};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const std::vector<std::byte> data = pattern(1 << 20, 1);
    const std::vector<SafetensorsTensor> tensors = {{"big", "U8", {1 << 20}, data.data()}};
    write_safetensors(path, tensors);
  });
  EXPECT_TRUE(contains(error, path + ": cannot write the temporary file "));
  EXPECT_TRUE(contains(error, "File too large"));
  EXPECT_EQ(read_text(path), "the previous checkpoint");
  EXPECT_EQ(folder_listing(folder_), std::vector<std::string>{"model.safetensors"});
}

TEST_F(SafetensorsWrite, OpenNamesTheFile) {
  const std::string missing = (folder_ / "missing.safetensors").string();
  EXPECT_TRUE(contains(error_of([&] { SafetensorsReader::open(missing); }),
                       missing + ": cannot open: No such file or directory"));
  EXPECT_TRUE(contains(error_of([&] { SafetensorsReader::open(folder_.string()); }),
                       folder_.string() + ": not a regular file"));

  const std::string bad = (folder_ / "bad.safetensors").string();
  const std::vector<std::byte> file = testing::file_with_header(
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[10,5],\"data_offsets\":[0,100]}}", 100);
  std::ofstream(bad, std::ios::binary)
      .write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  EXPECT_TRUE(contains(error_of([&] { SafetensorsReader::open(bad); }),
                       bad + ": tensor 'w': data_offsets [0, 100] but F32 [10, 5] needs 200"));
}

// A 200 MB (sparse) file claiming a 150 MB header: refused by the format's limit before
// anything of that size is read or allocated.
TEST_F(SafetensorsWrite, HeaderLimitIsCheckedBeforeReading) {
  const std::string path = (folder_ / "huge.safetensors").string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  std::vector<std::byte> length;
  testing::append_le64(length, 150'000'000);
  ASSERT_EQ(::write(fd, length.data(), 8), 8);
  ASSERT_EQ(::ftruncate(fd, 200'000'000), 0);
  ::close(fd);
  EXPECT_TRUE(contains(error_of([&] { SafetensorsReader::open(path); }),
                       path + ": header length 150000000 exceeds the limit of 100000000 bytes"));
}

TEST_F(SafetensorsWrite, TruncatedWhileOpenIsAnError) {
  const std::string path = (folder_ / "model.safetensors").string();
  const std::vector<std::byte> data = pattern(4096, 1);
  const std::vector<SafetensorsTensor> tensors = {{"x", "U8", {4096}, data.data()}};
  write_safetensors(path, tensors);
  const SafetensorsReader reader = SafetensorsReader::open(path);
  fs::resize_file(path, 100);
  EXPECT_TRUE(contains(error_of([&] { reader.read(reader.at("x")); }),
                       path + ": the file ends at byte 100 while reading tensor 'x'"));
}

}  // namespace
}  // namespace engine::nn
