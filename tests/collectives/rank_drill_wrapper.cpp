// One rank of the failure drill as mpirun starts it: runs the rank's program as a child and
// records how and when it ended (rank_drill_records.h). mpirun cannot tell: it reports the
// first failed rank only, and under --enable-recovery it exits 0 whatever the ranks did.
//
//   collectives_rank_drill_wrapper <report dir> <program> [args...]
//
// The child's stdout and stderr go to <dir>/rank-<R>.log. SIGTERM, which Open MPI sends
// when another rank aborts the job, is passed on to the child instead of ending the
// wrapper, so the wrapper lives to record the child's end (SIGKILL follows a second later).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rank_drill_records.h"

namespace {

volatile sig_atomic_t child_pid = 0;

void forward_to_child(int signal) {
  if (child_pid > 0) kill(child_pid, signal);
}

// The rank mpirun gave this process (Open MPI, or any PMIx launcher).
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace engine::drill;
  const char* const usage =
      "usage: collectives_rank_drill_wrapper REPORT_DIR PROGRAM [ARGS...]\n"
      "Under mpirun: runs PROGRAM as a child, its output to REPORT_DIR/rank-R.log, and records\n"
      "its exit status and time for collectives_rank_drill (SIGTERM is passed on).\n";
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(usage, stdout);
    return 0;
  }
  if (argc < 3 || argv[1][0] == '-') {
    if (argc >= 2 && argv[1][0] == '-')
      std::fprintf(stderr, "collectives_rank_drill_wrapper: unknown flag %s\n", argv[1]);
    std::fputs(usage, stderr);
    return 2;
  }
  const std::string dir = argv[1];
  const int rank = launcher_rank();
  if (rank < 0) {
    std::fprintf(stderr,
                 "%s: neither OMPI_COMM_WORLD_RANK nor PMIX_RANK is set: run it under "
                 "mpirun\n",
                 argv[0]);
    return 2;
  }
  const std::string log_path = rank_log_path(dir, rank);
  const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (log < 0) {
    std::perror(log_path.c_str());
    return 2;
  }
  struct sigaction forward {};
  forward.sa_handler = forward_to_child;
  sigaction(SIGTERM, &forward, nullptr);

  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGTERM, SIG_DFL);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    execv(argv[2], argv + 2);
    std::perror(argv[2]);
    _exit(127);
  }
  if (pid < 0) {
    std::perror("fork");
    return 2;
  }
  child_pid = pid;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int64_t ended_at_ns = monotonic_ns();
  if (!write_exit_record(dir, rank, {pid, status, ended_at_ns})) {
    std::fprintf(stderr, "rank %d: cannot write %s\n", rank, exit_record_path(dir, rank).c_str());
    return 2;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
