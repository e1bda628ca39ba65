// bench_data: images/s of the training input pipeline (read + decode + RandomResizedCrop +
// flip + ToTensor/Normalize into NHWC batches) by worker count, beside torchvision's
// ImageFolder + DataLoader with the same transforms, batch size and workers, timed by
// tools/bench_torchvision_loader.py in the same run. Also a single-thread full-size decode
// figure, to compare with libjpeg-turbo's published ~700-850 ImageNet images/s per core.
//
// With --shards (WebDataset tar shards of the same images, tools/make_webdataset_shards.py) the
// loader also reads the shards, in the ShardSampler's order, against the folder as baseline;
// and both are read without decoding, once from the page cache and once cold (each file's
// pages evicted first with POSIX_FADV_DONTNEED: the storage's own speed, no root needed):
// where per-file opens and random reads cost, the shards' sequential reads show it.
//
//   /usr/bin/python3 tools/make_synthetic_jpegs.py --out /tmp/synthetic-jpegs
//   build/bench/bench_data --data /tmp/synthetic-jpegs [-j 1,2] [--json]
//       [--shards '/tmp/shards/train-{000000..000003}.tar']
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "data/bad_file_log.h"
#include "data/decode.h"
#include "data/file_io.h"
#include "data/image_folder.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "data/shard_dataset.h"
#include "data/shard_reader.h"
#include "data/shard_sampler.h"
#include "kernels/error.h"
#include "train/common_flags.h"

namespace engine::data {
namespace {

struct Options {
  std::string data;
  std::string shards;  // tar shards of the same images
  std::vector<int> workers = {1, 2};
  int64_t batch_size = 64;
  int batches = 12;  // timed
  int warmup = 2;    // untimed, first
  int64_t image_size = 224;
  int repeat = 3;  // best of, ours and torchvision interleaved: the machine may be shared
  DType dtype = DType::f32;
  bool json = false;
  bool baseline = true;
  std::string python = "/usr/bin/python3";
  std::string script = std::string(ENGINE_SOURCE_DIR) + "/tools/bench_torchvision_loader.py";
};

struct Row {
  std::string impl;
  std::string case_name;
  int workers = 0;
  double images_per_s = 0;
  std::optional<double> baseline_images_per_s;  // torchvision's, or the folder's for shards
  std::string baseline = "torch";
};

cli::Command make_command(Options& o) {
  cli::Command command(
      "bench_data", "--data DIR [flags]",
      "Images/s of the training input pipeline (read + decode + RandomResizedCrop + flip + "
      "normalize into NHWC batches) by worker count, beside torchvision's DataLoader with the "
      "same transforms, batch size and workers. DIR is an ImageFolder root (<class>/<image>), "
      "e.g. from\n  /usr/bin/python3 tools/make_synthetic_jpegs.py --out DIR\nFiles that cannot "
      "be decoded are skipped, as the loader skips them: each is named once on stderr, and the "
      "count is reported at the end.");
  command.text("--data", o.data, "DIR", "the ImageFolder root (required)");
  command.text("--shards", o.shards, "PATTERN",
               "WebDataset tar shards of the same images (tools/make_webdataset_shards.py), "
               "timed against the folder");
  command.option("-j,--workers", "A,B,...", "loader threads, a case each", "1,2",
                 [&o](const std::string& flag, const std::string& text) {
                   o.workers.clear();
                   for (const int64_t workers : cli::integer_list(flag, text)) {
                     if (workers < 1 || workers > 1024) {
                       throw cli::UsageError(flag + " takes counts from 1 to 1024, got " +
                                             std::to_string(workers));
                     }
                     o.workers.push_back(static_cast<int>(workers));
                   }
                 });
  cli::add_batch_size(command, o.batch_size, "images per batch");
  command.integer("--batches", o.batches, "timed batches");
  command.integer("--warmup", o.warmup, "untimed batches first");
  cli::add_image_size(command, o.image_size, "RandomResizedCrop's output side", 1, "");
  command.renamed("--size", "--image-size");
  command.option(
      "--dtype", "T", "f32|bf16", "f32",
      [&o](const std::string&, const std::string& text) { o.dtype = parse_dtype(text); });
  command.integer("--repeat", o.repeat, "runs, ours and torchvision's interleaved; best of");
  command.flag(
      "--no-baseline", [&o] { o.baseline = false; }, "time ours only");
  command.text("--python", o.python, "PATH", "the python with torchvision");
  cli::add_json(command, o.json);
  return command;
}

void check(const Options& options) {
  if (options.data.empty()) throw cli::UsageError("--data is required");
  if (options.batches <= 0 || options.warmup < 0 || options.repeat <= 0) {
    throw cli::UsageError("--batches and --repeat must be positive, --warmup >= 0");
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Our loader: `warmup` batches untimed (thread start, first allocations), then `batches` timed.
double loader_images_per_s(const ImageFolder& folder, const Options& options, int workers,
                           const std::shared_ptr<BadFileLog>& bad_files) {
  LoaderConfig config;
  config.bad_files = bad_files;
  config.batch_size = static_cast<int>(options.batch_size);
  config.workers = workers;
  config.dtype = options.dtype;
  config.transform.output_size = static_cast<int>(options.image_size);
  Loader loader(folder, config);
  if (const ShardIndex* shards = folder.shards()) {
    loader.start_epoch(0, ShardSampler(*shards, 1, 0, /*shuffle=*/true).indices());
  } else {
    DistributedSampler sampler(static_cast<int64_t>(folder.size()), 1, 0, /*shuffle=*/true);
    loader.start_epoch(0, sampler.indices());
  }
  for (int b = 0; b < options.warmup; ++b)
    loader.next();
  const auto start = std::chrono::steady_clock::now();
  int64_t images = 0;
  for (int b = 0; b < options.batches; ++b)
    images += loader.next()->images.size(0);
  return static_cast<double>(images) / seconds_since(start);
}

// One thread, full-size decode only (no transform): the libjpeg-turbo anchor. `count` files,
// of which only the decoded ones count; bad ones are skipped as the loader skips them.
double decode_images_per_s(const ImageFolder& folder, int count, BadFileLog& bad_files) {
  std::vector<uint8_t> bytes;
  RgbImage image;
  int decoded = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    const std::string path = folder.path(static_cast<size_t>(i) % folder.size());
    if (bad_files.use_or_skip(path, [&] { decode_image_file(path, bytes, image); })) ++decoded;
  }
  const double seconds = seconds_since(start);
  if (decoded == 0) fail("none of the files of " + folder.root() + " could be decoded");
  return decoded / seconds;
}

// Drops the file's pages from the page cache (clean pages only: ours were just read), so the
// next read comes from the storage.
void evict_from_page_cache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

// One thread reading every image's bytes, no decode: the folder file by file in the sampler's
// shuffled order, the shards through a ShardReader in the ShardSampler's order with a shuffle
// buffer of `shuffle_buffer` samples (whose bytes the reader holds until they are taken).
double read_images_per_s(const ImageFolder& dataset, bool cold,
                         int64_t shuffle_buffer = kDefaultShuffleBuffer) {
  const auto count = static_cast<int64_t>(dataset.size());
  if (cold) {
    if (const ShardIndex* shards = dataset.shards()) {
      for (const std::string& path : shards->shard_paths)
        evict_from_page_cache(path);
    } else {
      for (int64_t i = 0; i < count; ++i)
        evict_from_page_cache(dataset.path(static_cast<size_t>(i)));
    }
  }
  std::vector<uint8_t> bytes;
  const auto start = std::chrono::steady_clock::now();
  if (const ShardIndex* shards = dataset.shards()) {
    const std::vector<int64_t> order =
        ShardSampler(*shards, 1, 0, true, 0, shuffle_buffer).indices();
    ShardReader reader(dataset);
    reader.begin_epoch(order);
    for (const int64_t index : order)
      reader.read(index, bytes);
  } else {
    for (const int64_t index : torch_randperm(count, 0))
      read_file(dataset.path(static_cast<size_t>(index)), bytes);
  }
  return static_cast<double>(count) / seconds_since(start);
}

std::optional<double> torchvision_images_per_s(const Options& options, int workers) {
  const std::string command =
      options.python + " " + options.script + " --data '" + options.data + "' --workers " +
      std::to_string(workers) + " --batch-size " + std::to_string(options.batch_size) +
      " --batches " + std::to_string(options.batches) + " --warmup " +
      std::to_string(options.warmup) + " --size " + std::to_string(options.image_size);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr)
    output += buffer;
  const int status = pclose(pipe);
  const size_t key = output.find("\"images_per_s\": ");
  if (status != 0 || key == std::string::npos) {
    std::fprintf(stderr, "bench_data: torchvision baseline failed (%s)\n", command.c_str());
    return std::nullopt;
  }
  return std::strtod(output.c_str() + key + 16, nullptr);
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

int cores_used(int workers) {
  return std::min(workers, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

void print_json(const Row& row) {
  const double time_us = 1e6 / row.images_per_s;  // per image
  std::printf(
      "{\"bench\": \"data\", \"impl\": \"%s\", \"case\": \"%s\", \"workers\": %d, "
      "\"time_us\": %.2f, \"images_per_s\": %.2f, \"images_per_s_per_core\": %.2f",
      row.impl.c_str(), row.case_name.c_str(), row.workers, time_us, row.images_per_s,
      row.images_per_s / cores_used(row.workers));
  if (row.baseline_images_per_s) {
    std::printf(", \"baseline\": \"%s\", \"baseline_images_per_s\": %.2f, \"ratio\": %.3f",
                row.baseline.c_str(), *row.baseline_images_per_s,
                row.images_per_s / *row.baseline_images_per_s);
  }
  std::printf("}\n");
}

void print_table(const std::vector<Row>& rows) {
  std::printf("%-8s %-36s %7s %12s %14s %14s %7s\n", "impl", "case", "workers", "images/s",
              "images/s/core", "baseline/s", "ratio");
  for (const Row& row : rows) {
    std::printf("%-8s %-36s %7d %12.1f %14.1f", row.impl.c_str(), row.case_name.c_str(),
                row.workers, row.images_per_s, row.images_per_s / cores_used(row.workers));
    if (row.baseline_images_per_s) {
      std::printf(" %14.1f %6.2fx vs %s\n", *row.baseline_images_per_s,
                  row.images_per_s / *row.baseline_images_per_s, row.baseline.c_str());
    } else {
      std::printf(" %14s %7s\n", "-", "-");
    }
  }
}

int run(const Options& options) {
  const auto folder_scan_start = std::chrono::steady_clock::now();
  const ImageFolder folder = ImageFolder::scan(options.data);
  const double folder_scan_s = seconds_since(folder_scan_start);
  const size_t needed = static_cast<size_t>(options.batches + options.warmup) * options.batch_size;
  if (folder.size() < needed) {
    fail(options.data + " has " + std::to_string(folder.size()) +
         " images; --batches + --warmup need " + std::to_string(needed));
  }
  std::optional<ImageFolder> shards;
  double shard_scan_s = 0;
  if (!options.shards.empty()) {
    const auto shard_scan_start = std::chrono::steady_clock::now();
    shards.emplace(scan_shards(options.shards, {.flag = "--shards"}));
    shard_scan_s = seconds_since(shard_scan_start);
    if (shards->size() != folder.size()) {
      fail("--shards " + options.shards + " holds " + std::to_string(shards->size()) +
           " images, --data " + options.data + " " + std::to_string(folder.size()) +
           ": not the same images");
    }
  }
  if (!options.json) {
    std::printf("bench_data on %s (%u hardware threads); %zu images in %zu classes under %s\n",
                cpu_model().c_str(), std::thread::hardware_concurrency(), folder.size(),
                folder.classes().size(), options.data.c_str());
    if (shards) {
      std::printf(
          "startup: the folder listed in %.1f ms, the %lld shards' headers and .cls read "
          "in %.1f ms (as they were: page cache or not)\n",
          folder_scan_s * 1e3, static_cast<long long>(shards->shards()->shard_count()),
          shard_scan_s * 1e3);
    }
    std::printf(
        "pipeline: read + decode + RandomResizedCrop(%d) + flip + normalize -> NHWC %s, "
        "batch %d, %d timed batches after %d warm-up, best of %d runs (torchvision's too)\n\n",
        static_cast<int>(options.image_size), std::string(dtype_name(options.dtype)).c_str(),
        static_cast<int>(options.batch_size), options.batches, options.warmup, options.repeat);
  }
  std::vector<Row> rows;
  const std::string case_name = "rrc" + std::to_string(options.image_size) + "+flip+normalize " +
                                std::string(dtype_name(options.dtype));
  // One log for every pass over the folder: each bad file is named once, and counted once.
  const auto bad_files = std::make_shared<BadFileLog>();
  const int warm_count = std::min<int>(64, static_cast<int>(folder.size()));
  decode_images_per_s(folder, warm_count, *bad_files);  // page cache
  const int decode_count = static_cast<int>(std::min<size_t>(folder.size(), 400));
  double decode_best = 0;
  for (int attempt = 0; attempt < options.repeat; ++attempt) {
    decode_best = std::max(decode_best, decode_images_per_s(folder, decode_count, *bad_files));
  }
  rows.push_back({"native", "decode full size (anchor)", 1, decode_best, std::nullopt});
  for (const int workers : options.workers) {
    Row row{"native", case_name, workers, 0.0, {}};
    for (int attempt = 0; attempt < options.repeat; ++attempt) {
      row.images_per_s =
          std::max(row.images_per_s, loader_images_per_s(folder, options, workers, bad_files));
      if (!options.baseline) continue;
      const std::optional<double> torch = torchvision_images_per_s(options, workers);
      if (torch && (!row.baseline_images_per_s || *torch > *row.baseline_images_per_s)) {
        row.baseline_images_per_s = torch;
      }
    }
    rows.push_back(row);
    if (row.baseline_images_per_s) {
      rows.push_back({"torch", case_name, workers, *row.baseline_images_per_s, std::nullopt});
    }
    if (shards) {
      Row shard_row{"shards", case_name, workers, 0.0, row.images_per_s, "folder"};
      for (int attempt = 0; attempt < options.repeat; ++attempt) {
        shard_row.images_per_s = std::max(
            shard_row.images_per_s, loader_images_per_s(*shards, options, workers, bad_files));
      }
      rows.push_back(shard_row);
    }
  }
  if (shards) {
    for (const bool cold : {false, true}) {
      const std::string name = cold ? "read only, cold cache" : "read only, page cache";
      Row folder_row{"native", name, 1, 0.0, std::nullopt};
      Row shard_row{"shards", name, 1, 0.0, 0.0, "folder"};
      Row unbuffered_row{"shards", name + ", no buffer", 1, 0.0, 0.0, "folder"};
      for (int attempt = 0; attempt < options.repeat; ++attempt) {
        folder_row.images_per_s =
            std::max(folder_row.images_per_s, read_images_per_s(folder, cold));
        shard_row.images_per_s = std::max(shard_row.images_per_s, read_images_per_s(*shards, cold));
        unbuffered_row.images_per_s =
            std::max(unbuffered_row.images_per_s, read_images_per_s(*shards, cold, 0));
      }
      shard_row.baseline_images_per_s = folder_row.images_per_s;
      unbuffered_row.baseline_images_per_s = folder_row.images_per_s;
      rows.push_back(folder_row);
      rows.push_back(shard_row);
      rows.push_back(unbuffered_row);
    }
  }
  if (options.json) {
    for (const Row& row : rows)
      print_json(row);
  } else {
    print_table(rows);
  }
  if (bad_files->files() > 0) {
    // On stderr, below the warnings that named them: --json keeps stdout to its rows.
    std::fprintf(stderr,
                 "bench_data: skipped %zu of %zu files that could not be decoded (named above); "
                 "the figures count decoded images only\n",
                 bad_files->files(), folder.size());
  }
  return 0;
}

}  // namespace
}  // namespace engine::data

int main(int argc, char** argv) {
  using namespace engine::data;
  return engine::cli::run_program<Options>(argc, argv, make_command, check, run);
}
