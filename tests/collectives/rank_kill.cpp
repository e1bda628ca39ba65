// The failure drill's rank program: under mpirun, the victim rank dies (SIGKILL from a
// thread, so its main thread is in the middle of an all-reduce) or stays alive but stops
// calling collectives. The other ranks must not hang: within the communicator's timeout each
// prints which collective timed out, its own rank and the peer that never answered, and the
// job ends. rank_drill.cpp runs it and checks all of that rank by rank.
//
//   mpirun --enable-recovery -np 3 collectives_rank_kill <impl> kill|silent
//          [--victim R] [--timeout-s S] [--elements N] [--report-dir DIR]
//
// --enable-recovery keeps mpirun from killing the survivors the moment the victim dies, so
// they reach their own timeout. With --report-dir the victim records when it left
// (rank_drill_records.h).
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/comm_factory.h"
#include "rank_drill_records.h"
#include "train/cli_command.h"

namespace {

struct DrillOptions {
  std::string impl = "ring-shm";
  std::string mode = "kill";
  int victim = 1;
  double timeout_s = 3;
  int64_t elements = 4 << 20;  // 16 MiB of f32: the ring path, as gradient buckets take
  std::string report_dir;
};

engine::cli::Command kill_command(DrillOptions& options, std::vector<std::string>& positional) {
  engine::cli::Command command(
      "collectives_rank_kill", "[IMPL] [kill|silent] [flags]",
      "Under mpirun: every rank all-reduces over IMPL (ring-shm, ring-mpi or mpi) until the "
      "victim dies (kill) or stops calling collectives (silent); the survivors must time out. "
      "Run by collectives_rank_drill, which checks what each rank printed and when it left.");
  command.integer("--victim", options.victim, "the rank that dies or falls silent");
  command.number("--timeout-s", options.timeout_s, "the communicator's timeout in seconds");
  command.integer("--elements", options.elements, "elements per all-reduce");
  command.text("--report-dir", options.report_dir, "DIR", "where the victim records its leaving");
  command.positionals("ARGS", positional, "IMPL (ring-shm), then kill|silent (kill)");
  return command;
}

void check(DrillOptions& options, const std::vector<std::string>& positional) {
  if (positional.size() > 2)
    throw engine::cli::UsageError("unexpected argument '" + positional[2] + "'");
  if (positional.size() > 0) options.impl = positional[0];
  if (positional.size() > 1) options.mode = positional[1];
  if (options.mode != "kill" && options.mode != "silent")
    throw engine::cli::UsageError("mode must be kill or silent, not " + options.mode);
}

// Tells the check when the victim left; a drill without a report directory records nothing.
void record_leaving(const DrillOptions& options) {
  if (options.report_dir.empty()) return;
  const engine::drill::VictimRecord record{options.victim, getpid(), engine::drill::monotonic_ns()};
  if (!engine::drill::write_victim_record(options.report_dir, record)) {
    std::fprintf(stderr, "[rank %d] cannot write %s\n", options.victim,
                 engine::drill::victim_record_path(options.report_dir).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace engine;
  MpiSession session(&argc, &argv);
  DrillOptions drill;
  std::vector<std::string> positional;
  cli::Command command = kill_command(drill, positional);
  return cli::run_cli(command, [&]() -> int {
    command.parse(argc, argv);
    check(drill, positional);
    if (session.size() < 2 || drill.victim < 0 || drill.victim >= session.size()) {
      std::fprintf(stderr, "rank_kill needs at least 2 ranks and a victim among them (%d of %d)\n",
                   drill.victim, session.size());
      return 2;
    }
    CommOptions options;
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(drill.timeout_s * 1000));
    // Longer than any survivor may wait: past it, the collectives went on without the victim.
    const auto give_up = std::chrono::duration<double>(drill.timeout_s + 20);
    auto comm = make_communicator(drill.impl, session, options);
    // The NCCL communicators work on this rank's GPU (on the sim device: its emulated one).
    const Device device =
        drill.impl.find("nccl") != std::string::npos ? session.device("cuda") : Device::cpu();
    Stream stream(device);
    Tensor data = Tensor::from_floats({drill.elements}, std::vector<float>(drill.elements, 1.f))
                      .to(device, stream);
    comm->all_reduce(data, ReduceOp::sum, stream);  // everyone is alive and connected
    if (session.rank() == drill.victim) {
      if (drill.mode == "silent") {
        record_leaving(drill);
        std::this_thread::sleep_for(give_up);  // alive, but never answers
        return 0;
      }
      std::thread([drill] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        record_leaving(drill);
        std::raise(SIGKILL);
      }).detach();
    }
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < give_up)
      comm->all_reduce(data, ReduceOp::sum, stream);
    std::fprintf(stderr, "[rank %d] the collectives went on although rank %d %s\n", session.rank(),
                 drill.victim, drill.mode == "kill" ? "died" : "stopped calling them");
    return 1;
  });
}
