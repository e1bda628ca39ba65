// The command-line convention's argument walker (train/cli_usage.h): values, numbers and
// comma-separated lists, each malformed value a UsageError that names the flag.
#include "train/cli_usage.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace engine::cli {
namespace {

// Walks `flags` (argv without the program) to the first flag and returns what `read` reads.
template <typename Read>
auto read_first(std::vector<std::string> flags, Read&& read) {
  flags.insert(flags.begin(), "program");
  std::vector<char*> argv;
  for (std::string& flag : flags)
    argv.push_back(flag.data());
  Arguments args(static_cast<int>(argv.size()), argv.data());
  EXPECT_TRUE(args.next());
  return read(args);
}

std::string usage_error(std::vector<std::string> flags, auto read) {
  try {
    read_first(std::move(flags), read);
  } catch (const UsageError& error) {
    return error.what();
  }
  return "no UsageError";
}

TEST(CliArguments, ListsSplitAtCommas) {
  EXPECT_EQ(read_first({"--impls", "ring-shm,mpi"}, [](Arguments& a) { return a.list(); }),
            (std::vector<std::string>{"ring-shm", "mpi"}));
  EXPECT_EQ(read_first({"--workers", "1,2,16"}, [](Arguments& a) { return a.integers(); }),
            (std::vector<int64_t>{1, 2, 16}));
  EXPECT_EQ(read_first({"--bucket-cap-mb", "0.5,25"}, [](Arguments& a) { return a.numbers(); }),
            (std::vector<double>{0.5, 25}));
  EXPECT_EQ(read_first({"--batches", "8"}, [](Arguments& a) { return a.integers(); }),
            (std::vector<int64_t>{8}));
}

TEST(CliArguments, MalformedListItemsNameTheFlagAndTheItem) {
  const auto integers = [](Arguments& a) { return a.integers(); };
  const auto numbers = [](Arguments& a) { return a.numbers(); };
  // std::atoi and std::stod read "2x" as 2: the lists must not.
  EXPECT_EQ(usage_error({"--workers", "1,2x"}, integers), "--workers takes integers, got '2x'");
  EXPECT_EQ(usage_error({"--batches", "1.5"}, integers), "--batches takes integers, got '1.5'");
  EXPECT_EQ(usage_error({"--bucket-cap-mb", "1,25MB"}, numbers),
            "--bucket-cap-mb takes numbers, got '25MB'");
  EXPECT_EQ(usage_error({"--workers", "1,,2"}, integers),
            "--workers takes a comma-separated list, got '1,,2'");
  EXPECT_EQ(usage_error({"--workers", ""}, integers),
            "--workers takes a comma-separated list, got ''");
  EXPECT_EQ(usage_error({"--workers", "1,"}, integers),
            "--workers takes a comma-separated list, got '1,'");
  EXPECT_EQ(usage_error({"--workers"}, integers), "--workers needs a value");
}

TEST(CliArguments, SingleValues) {
  EXPECT_EQ(read_first({"--batch", "32"}, [](Arguments& a) { return a.integer(); }), 32);
  EXPECT_EQ(read_first({"--lr", "0.1"}, [](Arguments& a) { return a.number(); }), 0.1);
  EXPECT_EQ(usage_error({"--batch", "32x"}, [](Arguments& a) { return a.integer(); }),
            "--batch takes an integer, got '32x'");
}

TEST(CliSplit, KeepsEmptyParts) {
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(split("0.5,0.5,0.5/0.2,0.2,0.2", '/'),
            (std::vector<std::string>{"0.5,0.5,0.5", "0.2,0.2,0.2"}));
}

}  // namespace
}  // namespace engine::cli
