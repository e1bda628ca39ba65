// The command-line module (train/cli_command.h on CLI11, train/common_flags.h): values, numbers
// and comma-separated lists, each malformed value a one-line UsageError naming the flag, old
// spellings refused with a hint, and one usage style with the defaults.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "train/cli_command.h"
#include "train/common_flags.h"

namespace engine::cli {
namespace {

void parse(Command& command, std::vector<std::string> flags) {
  flags.insert(flags.begin(), "program");
  std::vector<char*> argv;
  for (std::string& flag : flags)
    argv.push_back(flag.data());
  command.parse(static_cast<int>(argv.size()), argv.data());
}

std::string usage_error(Command& command, std::vector<std::string> flags) {
  try {
    parse(command, std::move(flags));
  } catch (const UsageError& error) {
    return error.what();
  }
  return "no UsageError";
}

struct Values {
  std::vector<std::string> impls = {"ring-shm"};
  std::vector<int64_t> workers = {1, 2};
  std::vector<double> caps = {1, 25};
  int64_t epochs = 90;
  double lr = 0.1;
  bool json = false;
};

Command values_command(Values& v) {
  Command command("program", "[flags]", "Takes values.");
  command.list("--impls", v.impls, "A,B,...", "communicators");
  command.integers("-j,--workers", v.workers, "loader threads");
  command.numbers("--bucket-cap-mb", v.caps, "bucket caps");
  command.integer("--epochs", v.epochs, "epochs");
  command.number("--lr", v.lr, "learning rate");
  command.flag("--json", v.json, "JSON rows");
  return command;
}

TEST(CliCommand, ListsSplitAtCommas) {
  Values v;
  Command command = values_command(v);
  parse(command, {"--impls", "ring-shm,mpi", "-j", "1,2,16", "--bucket-cap-mb=0.5,25"});
  EXPECT_EQ(v.impls, (std::vector<std::string>{"ring-shm", "mpi"}));
  EXPECT_EQ(v.workers, (std::vector<int64_t>{1, 2, 16}));
  EXPECT_EQ(v.caps, (std::vector<double>{0.5, 25}));
}

TEST(CliCommand, MalformedListItemsNameTheFlagAndTheItem) {
  Values v;
  Command command = values_command(v);
  // std::atoi and std::stod read "2x" as 2: the lists must not.
  EXPECT_EQ(usage_error(command, {"--workers", "1,2x"}), "--workers takes integers, got '2x'");
  EXPECT_EQ(usage_error(command, {"--workers", "1.5"}), "--workers takes integers, got '1.5'");
  EXPECT_EQ(usage_error(command, {"--bucket-cap-mb", "1,25MB"}),
            "--bucket-cap-mb takes numbers, got '25MB'");
  EXPECT_EQ(usage_error(command, {"--workers", "1,,2"}),
            "--workers takes a comma-separated list, got '1,,2'");
  EXPECT_EQ(usage_error(command, {"--workers", ""}),
            "--workers takes a comma-separated list, got ''");
  EXPECT_EQ(usage_error(command, {"--workers", "1,"}),
            "--workers takes a comma-separated list, got '1,'");
  EXPECT_EQ(usage_error(command, {"--workers"}), "--workers needs a value");
}

TEST(CliCommand, SingleValuesAndTheLastOneWins) {
  Values v;
  Command command = values_command(v);
  parse(command, {"--epochs", "3", "--lr", "0.5", "--epochs", "4", "--json"});
  EXPECT_EQ(v.epochs, 4);
  EXPECT_EQ(v.lr, 0.5);
  EXPECT_TRUE(v.json);
  EXPECT_EQ(usage_error(command, {"--epochs", "32x"}), "--epochs takes an integer, got '32x'");
  EXPECT_EQ(usage_error(command, {"--lr", "inf"}), "--lr takes a number, got 'inf'");
}

TEST(CliCommand, UnknownFlagsAndArguments) {
  Values v;
  Command command = values_command(v);
  command.renamed("--batch", "-b/--batch-size");
  EXPECT_EQ(usage_error(command, {"--bogus-flag", "1"}), "unknown flag --bogus-flag");
  EXPECT_EQ(usage_error(command, {"stray"}), "unexpected argument 'stray'");
  EXPECT_EQ(usage_error(command, {"--batch", "8"}),
            "unknown flag --batch; did you mean -b/--batch-size?");
  EXPECT_EQ(usage_error(command, {"--batch=8"}),
            "unknown flag --batch; did you mean -b/--batch-size?");
  EXPECT_THROW(parse(command, {"--epochs", "2", "-h"}), HelpRequested);
}

TEST(CliCommand, UsageListsEveryFlagWithItsDefault) {
  Values v;
  const std::string usage = values_command(v).usage();
  EXPECT_EQ(usage.rfind("usage: program [flags]\nTakes values.\n", 0), 0u) << usage;
  EXPECT_NE(usage.find("  -j, --workers A,B,...    loader threads (1,2)\n"), std::string::npos)
      << usage;
  EXPECT_NE(usage.find("  --epochs N               epochs (90)\n"), std::string::npos) << usage;
  EXPECT_NE(usage.find("  -h, --help               this text\n"), std::string::npos) << usage;
}

TEST(CommonFlags, BatchSizeArchDeviceAndPrecision) {
  int64_t batch = 32;
  std::vector<int64_t> batches = {1, 8};
  std::string arch = "resnet18", device = "cpu";
  nn::Precision precision;
  Command one("one", "", "");
  add_batch_size(one, batch, "images per step", 2, "BatchNorm needs two values");
  add_arch(one, arch);
  add_device(one, device);
  add_precision(one, precision);
  parse(one, {"-b", "16", "-a", "resnet50", "--device", "cuda:1", "--precision", "bf16"});
  EXPECT_EQ(batch, 16);
  EXPECT_EQ(arch, "resnet50");
  EXPECT_EQ(device, "cuda:1");
  EXPECT_EQ(precision.activations, DType::bf16);
  EXPECT_EQ(usage_error(one, {"--batch-size", "1"}),
            "--batch-size must be >= 2 (BatchNorm needs two values)");
  EXPECT_EQ(usage_error(one, {"--batches", "1"}),
            "unknown flag --batches; did you mean -b/--batch-size?");
  EXPECT_EQ(
      usage_error(one, {"--arch", "resnet19"}).rfind("--arch: unknown architecture 'resnet19'", 0),
      0u);
  EXPECT_EQ(usage_error(one, {"--device", "gpu"}),
            "--device takes auto, cpu, cuda or cuda:N, got 'gpu'");
  EXPECT_EQ(usage_error(one, {"--precision", "fp16"}),
            "--precision takes fp32, tf32 or bf16, got 'fp16'");

  Command sweep("sweep", "", "");
  add_batch_sizes(sweep, batches, "per-rank batches");
  parse(sweep, {"--batch-size", "8,32"});
  EXPECT_EQ(batches, (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(usage_error(sweep, {"-b", "8,0"}), "--batch-size must be >= 1");
}

TEST(CommonFlags, Tf32NeedsCuda) {
  const nn::Precision tf32 = *nn::precision_from_name("tf32");
  EXPECT_THROW(check_precision_device(tf32, Device::cpu()), UsageError);
  EXPECT_NO_THROW(check_precision_device(tf32, Device::cuda(0)));
  EXPECT_NO_THROW(check_precision_device(nn::Precision{}, Device::cpu()));
}

TEST(CliSplit, KeepsEmptyParts) {
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string>{""}));
}

}  // namespace
}  // namespace engine::cli
