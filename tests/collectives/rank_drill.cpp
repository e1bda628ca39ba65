// The failure drill as a test: runs rank_kill.cpp under mpirun, each rank inside
// rank_drill_wrapper.cpp, and then checks rank by rank what happened:
//   - the victim left (was SIGKILLed, or went silent) at a recorded moment;
//   - every survivor ended with a non-zero status within --timeout-s + 10 s of that moment,
//     as this program measures it (mpirun's own exit status says nothing under recovery);
//   - every survivor printed the library's timeout message (collectives/core/timeout.cpp), word
//     for word, naming the collective, the communicator, the bytes, itself as the rank that
//     waited for at least --timeout-s, and the peer that never answered (rank_drill_expect.h).
// ctest's TIMEOUT is only a backstop: a job still running at --timeout-s + 30 s is killed
// here and reported as a hang.
//
//   collectives_rank_drill --impl ring-shm --mode kill --victim 1 --timeout-s 3
//       [--ranks 3] [--elements N] [--silent-peer victim|chain]
//       --wrapper <rank_drill_wrapper> --drill <rank_kill> -- <mpirun> [mpirun flags...]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rank_drill_expect.h"
#include "rank_drill_records.h"
#include "train/cli_command.h"

extern char** environ;

namespace engine::drill {
namespace {

struct Args {
  DrillSetup setup;
  std::string wrapper, drill;
  std::vector<std::string> mpiexec;  // the launcher and its flags
};

cli::Command drill_command(Args& args) {
  DrillSetup& setup = args.setup;
  cli::Command command(
      "collectives_rank_drill", "--wrapper PATH --drill PATH [flags] -- MPIRUN [FLAGS]",
      "Runs the failure drill under MPIRUN with every rank wrapped (--wrapper), then checks that "
      "every survivor printed the library's timeout message naming itself and the victim (or a "
      "peer leading to it) and left non-zero within the timeout + 10 s.");
  command.text("--wrapper", args.wrapper, "PATH", "wraps every rank (required)");
  command.text("--drill", args.drill, "PATH", "the drill program (required)");
  command.text("--impl", setup.impl, "IMPL", "ring-shm|ring-mpi|mpi");
  command.text("--mode", setup.mode, "MODE", "kill|silent");
  command.integer("--ranks", setup.ranks, "ranks");
  command.integer("--victim", setup.victim, "the rank that dies or falls silent");
  command.number("--timeout-s", setup.timeout_s, "the communicator's timeout in seconds");
  command.integer("--elements", setup.elements, "elements per all-reduce");
  command.option("--silent-peer", "RULE", "victim|chain", "chain",
                 [&setup](const std::string&, const std::string& text) {
                   setup.silent_peer = parse_silent_peer_rule(text);
                 });
  command.positionals("MPIRUN", args.mpiexec, "the launcher and its flags, after --");
  return command;
}

void check(const Args& args) {
  const DrillSetup& setup = args.setup;
  if (args.mpiexec.empty() || args.wrapper.empty() || args.drill.empty())
    throw cli::UsageError("--wrapper, --drill and -- <mpirun ...> are required");
  if (setup.mode != "kill" && setup.mode != "silent")
    throw cli::UsageError("--mode must be kill or silent, not " + setup.mode);
  if (setup.victim < 0 || setup.victim >= setup.ranks)
    throw cli::UsageError("--victim must be one of the --ranks");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs the job with its output in <dir>/mpirun.log. False when it had to be killed.
bool run_job(const Args& args, const std::string& dir, double backstop_s) {
  const DrillSetup& setup = args.setup;
  std::vector<std::string> command = args.mpiexec;
  for (const std::string& arg :
       {std::string("-np"), std::to_string(setup.ranks), args.wrapper, dir, args.drill, setup.impl,
        setup.mode, std::string("--victim"), std::to_string(setup.victim),
        std::string("--timeout-s"), std::to_string(setup.timeout_s), std::string("--elements"),
        std::to_string(setup.elements), std::string("--report-dir"), dir}) {
    command.push_back(arg);
  }
  std::vector<char*> argv;
  for (std::string& arg : command)
    argv.push_back(arg.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string log = dir + "/mpirun.log";
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw std::runtime_error("cannot start " + command[0] + ": " + std::strerror(spawned));

  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(backstop_s);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > give_up) {
      kill(pid, SIGTERM);  // mpirun passes it on to the ranks
      std::this_thread::sleep_for(std::chrono::seconds(2));
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

int run(const Args& args) {
  const DrillSetup& setup = args.setup;
  std::string dir = (std::filesystem::temp_directory_path() / "rank_drill.XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + dir);

  const double backstop_s = setup.timeout_s + 30;
  const bool finished = run_job(args, dir, backstop_s);
  DrillOutcome outcome;
  outcome.victim = read_victim_record(dir);
  for (int rank = 0; rank < setup.ranks; ++rank)
    outcome.ranks.push_back({read_exit_record(dir, rank), read_file(rank_log_path(dir, rank))});

  std::vector<std::string> failures = check_drill(setup, outcome);
  if (!finished) {
    char hang[128];
    std::snprintf(hang, sizeof(hang),
                  "the job was still running %.0f s after it started: killed it", backstop_s);
    failures.insert(failures.begin(), hang);
  }
  std::printf("%s", describe_outcome(setup, outcome).c_str());
  if (failures.empty()) {
    std::filesystem::remove_all(dir);
    std::printf("PASS: every survivor named the failure and left in time\n");
    return 0;
  }
  for (int rank = 0; rank < setup.ranks; ++rank) {
    std::printf("---- rank %d output:\n%s", rank, outcome.ranks[rank].log.c_str());
  }
  std::printf("---- mpirun output:\n%s", read_file(dir + "/mpirun.log").c_str());
  for (const std::string& failure : failures)
    std::printf("FAIL: %s\n", failure.c_str());
  std::printf("(records kept in %s)\n", dir.c_str());
  return 1;
}

}  // namespace
}  // namespace engine::drill

int main(int argc, char** argv) {
  using namespace engine::drill;
  Args args;
  engine::cli::Command command = drill_command(args);
  return engine::cli::run_cli(command, [&] {
    command.parse(argc, argv);
    check(args);
    return run(args);
  });
}
