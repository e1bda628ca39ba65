#include "collectives/core/launcher_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace engine {
namespace {

// Open MPI's launchers and daemons (4.x names, and PRRTE's of 5.x).
bool is_open_mpi_launcher(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/comm";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char name[32] = {};
  const ssize_t length = read(fd, name, sizeof(name) - 1);
  close(fd);
  if (length <= 0) return false;
  std::string_view comm(name, static_cast<size_t>(length));
  if (comm.back() == '\n') comm.remove_suffix(1);
  constexpr std::array<std::string_view, 6> kLaunchers = {"mpirun", "mpiexec", "orterun",
                                                          "orted",  "prted",   "prterun"};
  for (std::string_view launcher : kLaunchers)
    if (comm == launcher) return true;
  return false;
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
  if (!is_open_mpi_launcher(launcher)) return;
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
    pidfd_send_signal(pidfd, SIGTERM);
    if (!exits_within(pidfd, 2000)) pidfd_send_signal(pidfd, SIGKILL);
  }
  _exit(0);
}

}  // namespace engine
