#include "sim/nccl/progress.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <string>

#include "collectives/core/timeout.h"

namespace engine::sim_nccl {
namespace {

using Clock = std::chrono::steady_clock;

// Each transfer goes over the ring as its byte count, then its bytes.
constexpr size_t kFrameBytes = sizeof(uint64_t);
// How long a task waits without progress before it looks for peers that have exited.
constexpr auto kDeadPeerCheck = std::chrono::milliseconds(500);

struct Pending {
  const char* call;
  Transfer transfer;
  uint64_t frame = 0;  // a send's byte count; the byte count a receive has read
  size_t moved = 0;    // of the frame and the payload together
  size_t total() const { return kFrameBytes + transfer.bytes; }
};

// Whether process `pid` has exited: gone, or a zombie its parent has not reaped yet (mpirun's
// daemon may take its time).
bool has_exited(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t name_end = line.rfind(')');  // the state follows "pid (name)"
  return name_end != std::string::npos && name_end + 2 < line.size() &&
         (line[name_end + 2] == 'Z' || line[name_end + 2] == 'X');
}

std::string describe(const CommState& comm, const char* call) {
  return std::string(call) + " on rank " + std::to_string(comm.rank()) + " of " +
         std::to_string(comm.nranks());
}

// Moves as much of the head transfer as the ring allows, its frame first; a payload moves only
// once frame_ok accepts the frame. True when any byte moved.
template <typename Move, typename FrameOk>
bool advance(Pending& head, Move&& move, FrameOk&& frame_ok) {
  bool moved = false;
  if (head.moved < kFrameBytes) {
    const size_t n =
        move(reinterpret_cast<std::byte*>(&head.frame) + head.moved, kFrameBytes - head.moved);
    head.moved += n;
    moved = n != 0;
    if (head.moved < kFrameBytes || !frame_ok(head)) return moved;
  }
  const size_t offset = head.moved - kFrameBytes;
  const size_t n = move(head.transfer.data + offset, head.transfer.bytes - offset);
  head.moved += n;
  return moved || n != 0;
}

class Progress {
 public:
  Progress(CommState& comm, std::vector<Operation>& operations)
      : comm_(comm), sends_(comm.nranks()), recvs_(comm.nranks()) {
    for (Operation& op : operations) {
      for (const Transfer& t : op.sends)
        sends_[t.peer].push_back({op.call, t, t.bytes});
      for (const Transfer& t : op.recvs)
        recvs_[t.peer].push_back({op.call, t, 0});
      remaining_ += op.sends.size() + op.recvs.size();
    }
  }

  bool complete() const { return remaining_ == 0; }
  // A receive met a send of another size: the pair's byte stream can no longer be trusted.
  bool broken() const { return broken_; }

  // One pass over every peer's head send and head receive; true when any byte moved.
  bool step() {
    bool moved = false;
    for (int peer = 0; peer < comm_.nranks(); ++peer) {
      moved |= step_send(peer);
      moved |= step_recv(peer);
    }
    return moved;
  }

  // What is still waited for, for messages: the first unfinished transfer.
  std::string waiting_for() const {
    for (int peer = 0; peer < comm_.nranks(); ++peer) {
      if (!recvs_[peer].empty()) return describe_pending(recvs_[peer].front(), "receiving", "from");
      if (!sends_[peer].empty()) return describe_pending(sends_[peer].front(), "sending", "to");
    }
    return "nothing";
  }

  // Peers this task still waits for whose process has exited (threads as ranks share a pid).
  void report_exited_peers() {
    for (int peer = 0; peer < comm_.nranks(); ++peer) {
      if (sends_[peer].empty() && recvs_[peer].empty()) continue;
      const pid_t pid = comm_.pid_of(peer);
      if (pid <= 0 || pid == getpid() || !has_exited(pid)) continue;
      const char* call =
          !recvs_[peer].empty() ? recvs_[peer].front().call : sends_[peer].front().call;
      const std::string why = describe(comm_, call) + ": peer rank " + std::to_string(peer) +
                              " (process " + std::to_string(pid) +
                              ") has exited; waiting until ncclCommAbort";
      if (comm_.async_error() == ncclSuccess) std::fprintf(stderr, "sim NCCL: %s\n", why.c_str());
      comm_.set_async_error(ncclRemoteError, why);
    }
  }

 private:
  std::string describe_pending(const Pending& p, const char* verb, const char* preposition) const {
    const size_t payload = p.moved > kFrameBytes ? p.moved - kFrameBytes : 0;
    return describe(comm_, p.call) + " was " + verb + " " + std::to_string(p.transfer.bytes) +
           " bytes " + preposition + " rank " + std::to_string(p.transfer.peer) + " (" +
           std::to_string(payload) + " moved)";
  }

  bool step_send(int peer) {
    std::deque<Pending>& queue = sends_[peer];
    if (queue.empty()) return false;
    ByteRing ring = comm_.ring(comm_.rank(), peer);
    const bool moved = advance(
        queue.front(), [&](std::byte* data, size_t n) { return ring.write_some(data, n); },
        [](const Pending&) { return true; });
    pop_if_done(queue);
    return moved;
  }

  bool step_recv(int peer) {
    std::deque<Pending>& queue = recvs_[peer];
    if (queue.empty() || broken_) return false;
    ByteRing ring = comm_.ring(peer, comm_.rank());
    const bool moved = advance(
        queue.front(), [&](std::byte* data, size_t n) { return ring.read_some(data, n); },
        [&](const Pending& head) { return check_frame(head); });
    if (!broken_) pop_if_done(queue);
    return moved;
  }

  // A receive and its matching send must agree on the size.
  bool check_frame(const Pending& head) {
    if (head.frame == head.transfer.bytes) return true;
    broken_ = true;
    const std::string why = describe(comm_, head.call) + ": expected " +
                            std::to_string(head.transfer.bytes) + " bytes from rank " +
                            std::to_string(head.transfer.peer) + ", whose matching send has " +
                            std::to_string(head.frame) + "; waiting until ncclCommAbort";
    std::fprintf(stderr, "sim NCCL: %s\n", why.c_str());
    comm_.set_async_error(ncclInvalidUsage, why);
    return false;
  }

  void pop_if_done(std::deque<Pending>& queue) {
    if (queue.front().moved != queue.front().total()) return;
    queue.pop_front();
    --remaining_;
  }

  CommState& comm_;
  std::vector<std::deque<Pending>> sends_;
  std::vector<std::deque<Pending>> recvs_;
  size_t remaining_ = 0;
  bool broken_ = false;
};

}  // namespace

void run_operations(const std::shared_ptr<CommState>& comm, uint64_t ticket,
                    std::vector<Operation>& operations) {
  const char* call = operations.empty() ? "ncclGroupEnd" : operations.front().call;
  if (!comm->wait_for_turn(ticket)) {
    comm->set_async_error(ncclSystemError, describe(*comm, call) +
                                               ": not run, the communicator was aborted "
                                               "(ncclCommAbort) before its turn");
    return;
  }
  comm->enter_task();
  Progress progress(*comm, operations);
  Backoff backoff(0);
  Clock::time_point idle_since = Clock::now();
  bool aborted = comm->aborted();
  while (!aborted && !progress.complete()) {
    if (progress.step() && !progress.broken()) {
      backoff = Backoff(0);
      idle_since = Clock::now();
    } else {
      if (Clock::now() - idle_since > kDeadPeerCheck) {
        progress.report_exited_peers();
        idle_since = Clock::now();
      }
      backoff.pause();
    }
    aborted = comm->aborted();
  }
  if (aborted) {
    comm->set_async_error(ncclSystemError, progress.waiting_for() +
                                               " when ncclCommAbort stopped it; the results "
                                               "of this call are undefined");
    comm->leave_task();
    return;  // the turn stays taken: every later task of the aborted communicator does nothing
  }
  for (Operation& op : operations) {
    if (op.finish) op.finish();
  }
  comm->leave_task();
  comm->end_turn(ticket);
}

}  // namespace engine::sim_nccl
