// bench_allreduce: all-reduce time and bandwidth, nccl-tests style, for our ring on every
// transport this machine has and for the libraries' own all-reduce, in the same run, with
// the ratio ours/library and a memcpy line as the physical reference.
//
//   mpirun --allow-run-as-root --oversubscribe -np 2 build/bench/bench_allreduce
//   ... bench_allreduce --min-bytes 4 --max-bytes 64M --impls ring-shm,mpi --json
//
// Columns: size (bytes), count (elements), time_us (per all-reduce, the slowest rank, best
// of --trials), algbw = size/time, busbw = algbw * 2(n-1)/n (GB/s), #wrong (elements that
// differ from the locally computed expectation after one checked all-reduce, all ranks).
// ratio = library time / our time (higher is better): vs MPI_Allreduce for CPU tensors,
// vs ncclAllReduce for CUDA tensors.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/mpi_bench_main.h"
#include "bench/timing.h"
#include "collectives/bootstrap.h"
#include "collectives/comm_factory.h"
#include "collectives/communicators/mpi_communicator.h"
#include "collectives/cpu/reduce.h"
#include "kernels/runtime.h"
#include "kernels/tensor.h"
#include "train/common_flags.h"

namespace engine {
namespace {

struct Options {
  size_t min_bytes = 4;
  size_t max_bytes = 64 << 20;
  int factor = 2;
  std::vector<std::string> impls = {"ring-shm", "ring-mpi",  "ring-hier",
                                    "mpi",      "ring-nccl", "nccl"};
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  double seconds_per_point = 0.03;  // timed per trial
  int trials = 7;
  bool json = false;
  CommOptions comm;
};

// "4", "64K", "1M", "1.5G": bytes, with binary suffixes.
size_t parse_bytes(const std::string& flag, const std::string& text) {
  size_t digits = 0;
  double value = -1;
  try {
    value = std::stod(text, &digits);
  } catch (const std::logic_error&) {  // invalid_argument, out_of_range
  }
  const std::string suffix = digits > 0 ? text.substr(digits) : text;
  const double scale = suffix == "K"   ? 1024.0
                       : suffix == "M" ? 1048576.0
                       : suffix == "G" ? 1073741824.0
                       : suffix == ""  ? 1.0
                                       : -1.0;
  if (value < 0 || scale < 0) {
    throw cli::UsageError(flag + " takes a size such as 4, 64K or 1M, got '" + text + "'");
  }
  return static_cast<size_t>(value * scale);
}

// A size flag (parse_bytes) into `value`, its default shown as given.
void add_bytes(cli::Command& command, std::string_view names, size_t& value, std::string_view help,
               std::string shown) {
  command.option(names, "B", help, std::move(shown),
                 [&value](const std::string& flag, const std::string& text) {
                   value = parse_bytes(flag, text);
                 });
}

cli::Command make_command(Options& o) {
  cli::Command command(
      "bench_allreduce", "[flags]        (under mpirun)",
      "All-reduce time and bandwidth of our ring and of the libraries' all-reduce, per size from "
      "--min-bytes to --max-bytes in steps of --factor. Sizes take K, M or G (binary). Run it "
      "under MPI: mpirun --allow-run-as-root --oversubscribe -np 2 bench_allreduce, or "
      "tools/bench_allreduce.sh, which also saves the table to bench/results/.");
  add_bytes(command, "--min-bytes", o.min_bytes, "the smallest size", "4");
  add_bytes(command, "--max-bytes", o.max_bytes, "the largest size", "64M");
  command.integer("--factor", o.factor, "each size over the last");
  command.list("--impls", o.impls, "A,B,...", "ring-shm|ring-mpi|ring-hier|mpi|ring-nccl|nccl");
  command.option(
      "--dtype", "T", "f32|bf16", "f32",
      [&o](const std::string&, const std::string& text) { o.dtype = parse_dtype(text); });
  command.option(
      "--op", "OP", "sum|avg|min|max", "sum",
      [&o](const std::string&, const std::string& text) { o.op = parse_reduce_op(text); });
  command.number("--seconds", o.seconds_per_point, "timed per size and trial");
  command.integer("--trials", o.trials, "trials per size; each implementation keeps its best");
  cli::add_json(command, o.json);
  add_bytes(command, "--shm-slot-bytes", o.comm.shm.slot_bytes, "ring-shm's slot size",
            std::to_string(o.comm.shm.slot_bytes));
  command.integer("--shm-slots", o.comm.shm.slots, "ring-shm's slots per rank");
  add_bytes(command, "--shm-small-bytes", o.comm.shm.small_message_bytes,
            "ring-shm's direct path: up to this / (ranks - 1) bytes",
            std::to_string(o.comm.shm.small_message_bytes));
  command.integer("--shm-spin", o.comm.shm.spin_iterations,
                  "ring-shm's spins before it sleeps; -1: from the ranks on the host");
  add_bytes(command, "--mpi-message-bytes", o.comm.mpi_transport.message_bytes,
            "ring-mpi's message size", std::to_string(o.comm.mpi_transport.message_bytes));
  return command;
}

void check(const Options& o) {
  if (o.factor < 2) throw cli::UsageError("--factor must be at least 2");
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One all-reduce implementation under test: ours through a Communicator, or the library.
struct Candidate {
  std::string impl;
  std::unique_ptr<Communicator> comm;  // null: raw MPI_Allreduce
  Device device = Device::cpu();
};

float input_value(int rank, int64_t index) {
  return static_cast<float>(static_cast<int>((index * 7 + rank * 3) % 13) - 6);
}

class Bench {
 public:
  Bench(const MpiSession& session, Options options)
      : session_(session), options_(std::move(options)) {}

  void run();

 private:
  void all_reduce(Candidate& candidate, Tensor& tensor, Stream& stream) {
    if (candidate.comm) {
      candidate.comm->all_reduce(tensor, options_.op, stream);
    } else {
      MPI_Allreduce(MPI_IN_PLACE, tensor.raw_data(), static_cast<int>(tensor.numel()),
                    mpi_datatype(tensor.dtype()), mpi_reduce_op(tensor.dtype(), options_.op),
                    session_.comm());
      if (options_.op == ReduceOp::avg)
        cpu::divide(tensor.dtype(), tensor.raw_data(), tensor.numel(), session_.size());
    }
  }
  int iterations_for(Candidate& candidate, Tensor& tensor, Stream& stream);
  double time_per_call(Candidate& candidate, Tensor& tensor, Stream& stream, int iterations);
  int64_t count_wrong(Candidate& candidate, int64_t count, Stream& stream);
  double memcpy_gbps(size_t bytes);
  void print_row(size_t bytes, int64_t count, const std::string& impl, double seconds,
                 int64_t wrong, const std::string& baseline, double baseline_seconds);

  const MpiSession& session_;
  Options options_;
  double memcpy_gbps_ = 0;
};

int Bench::iterations_for(Candidate& candidate, Tensor& tensor, Stream& stream) {
  // Warm up, then size the loop from a probe so each trial lasts about --seconds; rank 0
  // decides so every rank runs the same number of calls.
  for (int i = 0; i < 3; ++i)
    all_reduce(candidate, tensor, stream);
  stream.synchronize();
  MPI_Barrier(session_.comm());
  double probe = now_seconds();
  for (int i = 0; i < 5; ++i)
    all_reduce(candidate, tensor, stream);
  stream.synchronize();
  probe = (now_seconds() - probe) / 5;
  MPI_Bcast(&probe, 1, MPI_DOUBLE, 0, session_.comm());
  return static_cast<int>(std::clamp(options_.seconds_per_point / probe, 5.0, 20000.0));
}

double Bench::time_per_call(Candidate& candidate, Tensor& tensor, Stream& stream, int iterations) {
  MPI_Barrier(session_.comm());
  const double start = now_seconds();
  for (int i = 0; i < iterations; ++i)
    all_reduce(candidate, tensor, stream);
  stream.synchronize();
  double elapsed = (now_seconds() - start) / iterations, slowest = 0;
  MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, session_.comm());
  return slowest;
}

int64_t Bench::count_wrong(Candidate& candidate, int64_t count, Stream& stream) {
  const int n = session_.size(), rank = session_.rank();
  std::vector<float> values(count), expected(count);
  for (int64_t i = 0; i < count; ++i) {
    values[i] = input_value(rank, i);
    float result = input_value(0, i);
    for (int r = 1; r < n; ++r) {
      const float v = input_value(r, i);
      result = options_.op == ReduceOp::max   ? std::max(result, v)
               : options_.op == ReduceOp::min ? std::min(result, v)
                                              : result + v;
    }
    if (options_.op == ReduceOp::avg) result /= static_cast<float>(n);
    expected[i] = options_.dtype == DType::bf16 ? static_cast<float>(bf16(result)) : result;
  }
  Tensor tensor = Tensor::from_floats({count}, values, options_.dtype).to(candidate.device, stream);
  all_reduce(candidate, tensor, stream);
  const std::vector<float> actual = tensor.to_floats(stream);
  int64_t wrong = 0, total = 0;
  for (int64_t i = 0; i < count; ++i)
    wrong += actual[i] != expected[i];
  MPI_Allreduce(&wrong, &total, 1, MPI_INT64_T, MPI_SUM, session_.comm());
  return total;
}

double Bench::memcpy_gbps(size_t bytes) {
  // Rank 0 alone first (the others wait): one core's copy bandwidth, the reference of the
  // %memcpy column. Then every rank at once: how much each gets while all copy, which bounds
  // an in-place all-reduce of buffers larger than the caches (each rank must at least read
  // and write its whole buffer).
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  auto best_copy_seconds = [&](bool participate) {
    double best = 1e30;
    for (int trial = 0; trial < 5; ++trial) {
      MPI_Barrier(session_.comm());
      const double start = now_seconds();
      if (participate) std::memcpy(dst.data(), src.data(), bytes);
      double elapsed = now_seconds() - start, slowest = 0;
      src[trial] = dst[bytes - 1 - trial];  // keeps the copies observable
      MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, session_.comm());
      best = std::min(best, slowest);
    }
    return best;
  };
  const double alone = best_copy_seconds(session_.rank() == 0);
  const double together = best_copy_seconds(true);
  const double gbps = static_cast<double>(bytes) / alone / 1e9;
  const double shared_gbps = static_cast<double>(bytes) / together / 1e9;
  if (session_.rank() == 0) {
    if (!options_.json) {
      std::printf("# memcpy: %zu bytes in %.1f us = %.2f GB/s (rank 0 alone; best of 5)\n", bytes,
                  alone * 1e6, gbps);
      std::printf(
          "# memcpy, all %d ranks at once: %.2f GB/s per rank (bounds busbw once buffers "
          "outgrow the caches)\n",
          session_.size(), shared_gbps);
    } else {
      std::printf(
          "{\"bench\":\"allreduce\",\"impl\":\"memcpy\",\"case\":\"memcpy %zu bytes, one "
          "rank\",\"bytes\":%zu,\"time_us\":%.3f,\"gbps\":%.3f}\n",
          bytes, bytes, alone * 1e6, gbps);
      std::printf(
          "{\"bench\":\"allreduce\",\"impl\":\"memcpy-all-ranks\",\"case\":\"memcpy %zu bytes, "
          "%d ranks at once\",\"bytes\":%zu,\"time_us\":%.3f,\"gbps\":%.3f}\n",
          bytes, session_.size(), bytes, together * 1e6, shared_gbps);
    }
  }
  return gbps;
}

void Bench::print_row(size_t bytes, int64_t count, const std::string& impl, double seconds,
                      int64_t wrong, const std::string& baseline, double baseline_seconds) {
  if (session_.rank() != 0) return;
  const int n = session_.size();
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  const double busbw = algbw * 2.0 * (n - 1) / n;
  const double ratio = baseline.empty() || baseline_seconds <= 0 ? 0 : baseline_seconds / seconds;
  const char* type = options_.dtype == DType::f32 ? "f32" : "bf16";
  if (options_.json) {
    std::printf(
        "{\"bench\":\"allreduce\",\"impl\":\"%s\",\"case\":\"%s %s %zu bytes\",\"bytes\":%zu,"
        "\"count\":%lld,\"dtype\":\"%s\",\"op\":\"%s\",\"ranks\":%d,\"time_us\":%.3f,"
        "\"algbw\":%.4f,\"busbw\":%.4f,\"memcpy_fraction\":%.4f,\"wrong\":%lld",
        impl.c_str(), type, std::string(reduce_op_name(options_.op)).c_str(), bytes, bytes,
        static_cast<long long>(count), type, std::string(reduce_op_name(options_.op)).c_str(), n,
        seconds * 1e6, algbw, busbw, busbw / memcpy_gbps_, static_cast<long long>(wrong));
    if (!baseline.empty())
      std::printf(",\"baseline\":\"%s\",\"ratio\":%.3f", baseline.c_str(), ratio);
    std::printf("}\n");
  } else {
    char ratio_text[32] = "";
    if (!baseline.empty())
      std::snprintf(ratio_text, sizeof(ratio_text), "%7.2fx %s", ratio, baseline.c_str());
    std::printf("%12zu %11lld %5s  %-10s %11.2f %8.3f %8.3f %7.1f%% %7lld  %s\n", bytes,
                static_cast<long long>(count), type, impl.c_str(), seconds * 1e6, algbw, busbw,
                100.0 * busbw / memcpy_gbps_, static_cast<long long>(wrong), ratio_text);
  }
  std::fflush(stdout);
}

void Bench::run() {
  std::vector<Candidate> candidates;
  for (const std::string& impl : options_.impls) {
    const std::string why = impl == "mpi" ? "" : communicator_unavailable_reason(impl, session_);
    if (!why.empty()) {
      if (session_.rank() == 0 && !options_.json)
        std::printf("# %s: not run (%s)\n", impl.c_str(), why.c_str());
      continue;
    }
    Candidate candidate{impl,
                        impl == "mpi" ? nullptr : make_communicator(impl, session_, options_.comm)};
    if (impl == "ring-nccl" || impl == "nccl") candidate.device = session_.device("cuda");
    candidates.push_back(std::move(candidate));
  }
  memcpy_gbps_ = memcpy_gbps(options_.max_bytes);
  if (session_.rank() == 0 && !options_.json) {
    std::printf(
        "# bench_allreduce: %d ranks, %d per host, op %s, in place; time = slowest rank, best of "
        "%d "
        "trials; busbw = algbw * 2(n-1)/n; ratio = library time / ours\n",
        session_.size(), session_.world().local_size,
        std::string(reduce_op_name(options_.op)).c_str(), options_.trials);
    std::printf("#%11s %11s %5s  %-10s %11s %8s %8s %8s %7s  %s\n", "size", "count", "type", "impl",
                "time_us", "algbw", "busbw", "%memcpy", "#wrong", "ratio");
  }
  const size_t element = dtype_size(options_.dtype);
  for (size_t bytes = options_.min_bytes; bytes <= options_.max_bytes; bytes *= options_.factor) {
    const int64_t count = std::max<int64_t>(1, static_cast<int64_t>(bytes / element));
    const size_t size = static_cast<size_t>(count) * element;
    struct Result {
      double seconds;
      int64_t wrong;
    };
    std::map<std::string, Result> results;
    // Trials interleave the implementations, so a noisy neighbour slows all of them alike;
    // each keeps its best trial.
    std::vector<Stream> streams;
    std::vector<Tensor> tensors;
    std::vector<int> iterations;
    for (Candidate& candidate : candidates) {
      streams.emplace_back(candidate.device);
      tensors.push_back(
          Tensor::from_floats({count}, std::vector<float>(count, 0.5f), options_.dtype)
              .to(candidate.device, streams.back()));
      iterations.push_back(iterations_for(candidate, tensors.back(), streams.back()));
      results[candidate.impl] = {1e30, 0};
    }
    for (int trial = 0; trial < options_.trials; ++trial) {
      for (size_t c = 0; c < candidates.size(); ++c) {
        Result& result = results[candidates[c].impl];
        result.seconds = std::min(
            result.seconds, time_per_call(candidates[c], tensors[c], streams[c], iterations[c]));
      }
    }
    for (size_t c = 0; c < candidates.size(); ++c) {
      results[candidates[c].impl].wrong = count_wrong(candidates[c], count, streams[c]);
    }
    // Our rings are compared with the library of the same memory: MPI on the host, NCCL on GPUs.
    for (const Candidate& candidate : candidates) {
      const Result& result = results[candidate.impl];
      const bool ours = candidate.impl.rfind("ring-", 0) == 0;
      const std::string baseline = !ours ? "" : candidate.device.is_cuda() ? "nccl" : "mpi";
      const auto found = results.find(baseline);
      print_row(size, count, candidate.impl, result.seconds, result.wrong,
                found == results.end() ? "" : baseline,
                found == results.end() ? 0 : found->second.seconds);
    }
  }
}

}  // namespace
}  // namespace engine

int main(int argc, char** argv) {
  return engine::bench::run_mpi_bench<engine::Options>(
      argc, argv, engine::make_command, engine::check,
      [](engine::MpiSession& session, const engine::Options& options) {
        engine::bench::wait_for_startup_threads_to_sleep();
        engine::Bench(session, options).run();
      });
}
