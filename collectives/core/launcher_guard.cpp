#include "collectives/core/launcher_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace engine {
namespace {

// The command name of a process ("" when it cannot be read).
std::string command_name(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/comm";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char name[32] = {};
  const ssize_t length = read(fd, name, sizeof(name) - 1);
  close(fd);
  if (length <= 0) return "";
  std::string_view comm(name, static_cast<size_t>(length));
  if (comm.back() == '\n') comm.remove_suffix(1);
  return std::string(comm);
}

// Open MPI's launchers and daemons (4.x names, and PRRTE's of 5.x).
bool is_open_mpi_launcher(std::string_view comm) {
  constexpr std::array<std::string_view, 6> kLaunchers = {"mpirun", "mpiexec", "orterun",
                                                          "orted",  "prted",   "prterun"};
  for (std::string_view launcher : kLaunchers)
    if (comm == launcher) return true;
  return false;
}

// Open MPI 4.x's mpirun keeps its session folder, <tmp>/ompi.<host>.<uid>/pid.<its pid>,
// which it removes as it exits; a SIGKILLed one leaves it (megabytes of PMIx's shared
// memory). The folder when it is there, else "".
std::string mpirun_session_dir(pid_t launcher, std::string_view comm) {
  if (comm != "mpirun" && comm != "mpiexec" && comm != "orterun") return "";
  const char* tmp = nullptr;
  for (const char* name : {"TMPDIR", "TEMP", "TMP"})
    if (tmp == nullptr || *tmp == '\0') tmp = std::getenv(name);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "";
  std::string node(host);
  node = node.substr(0, node.find('.'));
  const std::string dir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/ompi." +
                          node + "." + std::to_string(getuid()) + "/pid." +
                          std::to_string(launcher);
  struct stat info {};
  return stat(dir.c_str(), &info) == 0 && S_ISDIR(info.st_mode) ? dir : "";
}

int pidfd_open(pid_t pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

void pidfd_send_signal(int pidfd, int signal) {
  syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0);
}

// Whether the process of `pidfd` exits within `milliseconds` (a pidfd polls readable then).
bool exits_within(int pidfd, int milliseconds) {
  pollfd exit_event{pidfd, POLLIN, 0};
  int ready = 0;
  do {
    ready = poll(&exit_event, 1, milliseconds);
  } while (ready < 0 && errno == EINTR);
  return ready > 0;
}

}  // namespace

void guard_launcher_exit(std::chrono::milliseconds grace) {
  if (std::getenv("OMPI_COMM_WORLD_RANK") == nullptr) return;
  const pid_t launcher = getppid();
  const std::string comm = command_name(launcher);
  if (!is_open_mpi_launcher(comm)) return;
  // Built here: the guard, a child of a multithreaded process, may not allocate.
  const std::string session_dir = mpirun_session_dir(launcher, comm);
  const char* const remove_session[] = {"rm", "-rf", "--", session_dir.c_str(), nullptr};
  char* const no_environment[] = {nullptr};
  // A pidfd names this very process, even after its pid is reused.
  const int pidfd = pidfd_open(launcher);
  if (pidfd < 0) return;
  if (getppid() != launcher) {  // the launcher exited in between
    close(pidfd);
    return;
  }
  // The guard says when it has left this rank's process group (which the daemon kills).
  int left_group[2] = {-1, -1};
  if (pipe2(left_group, O_CLOEXEC) != 0) {
    close(pidfd);
    return;
  }
  const pid_t guard = fork();
  if (guard != 0) {  // this rank (or fork failed: nothing to do)
    close(left_group[1]);
    if (guard > 0) {
      pollfd said{left_group[0], POLLIN, 0};
      poll(&said, 1, 1000);
    }
    close(left_group[0]);
    close(pidfd);
    return;
  }
  // The guard: a process of a multithreaded one, so only async-signal-safe calls. It closes
  // everything it inherited but the pidfd: held sockets or output pipes would delay what the
  // launcher waits for.
  setsid();
  close(left_group[1]);
  const int null = open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; ++fd) {
    if (null < 0 || dup2(null, fd) < 0) close(fd);
  }
  if (pidfd > 3) syscall(SYS_close_range, 3, pidfd - 1, 0);
  syscall(SYS_close_range, pidfd + 1, ~0U, 0);
  const int grace_ms = static_cast<int>(grace.count());
  if (!exits_within(pidfd, grace_ms)) {
    // Not SIGTERM: Open MPI 4.1.4's mpirun, already aborting, answers it by printing "abort
    // is already in progress...hit ctrl-c again to forcibly terminate" and then, at once,
    // takes that path, whose PMIx_Finalize crashes: a segmentation fault's trace printed
    // after our line naming the lost host (seen with a cut link, one SIGTERM, one guard).
    pidfd_send_signal(pidfd, SIGKILL);
    if (exits_within(pidfd, 2000) && !session_dir.empty())
      execve("/bin/rm", const_cast<char* const*>(remove_session), no_environment);
  }
  _exit(0);
}

}  // namespace engine
