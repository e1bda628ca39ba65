// The sim device's ncclGetUniqueId, ncclCommInitRank, ncclCommDestroy, ncclCommAbort,
// ncclCommGetAsyncError, ncclGetLastError and ncclGroupStart/End, as nccl.h declares them.
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sim/cuda/devices.h"
#include "sim/nccl/comm_state.h"
#include "sim/nccl/group.h"
#include "sim/nccl/last_error.h"
#include "sim/nccl/registry.h"

namespace engine::sim_nccl {
namespace {

// What a unique id holds: a mark that the shim made it, the name of a POSIX shared memory
// segment no other communicator uses (pid, a per-process counter and the time), and the host
// it was made on: the shim joins the ranks of one host only (real NCCL crosses hosts).
constexpr char kIdMark[] = "sim-nccl";
constexpr char kSegmentPrefix[] = "/engine-nccl-";
constexpr size_t kHostBytes = 64;
struct IdContent {
  char mark[sizeof(kIdMark)];
  char segment[NCCL_UNIQUE_ID_BYTES - sizeof(kIdMark) - kHostBytes];
  char host[kHostBytes];
};
static_assert(sizeof(IdContent) == NCCL_UNIQUE_ID_BYTES);

std::string this_host() {
  char name[kHostBytes] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return {};
  return name;
}

bool read_id(const ncclUniqueId& id, std::string& segment, std::string& host) {
  IdContent content;
  std::memcpy(&content, id.internal, sizeof(content));
  if (std::memcmp(content.mark, kIdMark, sizeof(kIdMark)) != 0) return false;
  if (std::memchr(content.segment, '\0', sizeof(content.segment)) == nullptr) return false;
  if (std::memchr(content.host, '\0', sizeof(content.host)) == nullptr) return false;
  segment = content.segment;
  host = content.host;
  return segment.rfind(kSegmentPrefix, 0) == 0;
}

// How long ncclCommInitRank waits for every rank (NCCL's bootstrap gives up eventually too).
double join_timeout_seconds() {
  const char* text = std::getenv("ENGINE_SIM_NCCL_INIT_TIMEOUT_S");
  const double seconds = text != nullptr ? std::atof(text) : 0.0;
  return seconds > 0 ? seconds : 120.0;
}

}  // namespace
}  // namespace engine::sim_nccl

using namespace engine::sim_nccl;

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  static std::atomic<unsigned> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  const std::string segment =
      std::string(kSegmentPrefix) + std::to_string(getpid()) + "-" +
      std::to_string(counter.fetch_add(1)) + "-" +
      std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
  IdContent content{};
  std::memcpy(content.mark, kIdMark, sizeof(kIdMark));
  std::memcpy(content.segment, segment.c_str(), segment.size() + 1);
  const std::string host = this_host();
  std::memcpy(content.host, host.c_str(), host.size() + 1);
  std::memcpy(uniqueId->internal, &content, sizeof(content));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  const std::string where =
      "ncclCommInitRank on rank " + std::to_string(rank) + " of " + std::to_string(nranks);
  if (comm == nullptr) return fail(ncclInvalidArgument, where + ": comm is NULL");
  if (nranks < 1) return fail(ncclInvalidArgument, where + ": nranks must be at least 1");
  if (rank < 0 || rank >= nranks) {
    return fail(ncclInvalidArgument,
                where + ": rank is out of range (0.." + std::to_string(nranks - 1) + ")");
  }
  std::string segment, host;
  if (!read_id(commId, segment, host)) {
    return fail(ncclInvalidArgument,
                where + ": the unique id was not made by ncclGetUniqueId (of the sim device)");
  }
  if (const std::string here = this_host(); here != host) {
    return fail(ncclInvalidUsage,
                where +
                    ": the sim device's NCCL joins the ranks of one host, but the unique id "
                    "was made on host " +
                    host + " and this rank runs on host " + here +
                    " (NCCL itself crosses hosts; the sim device emulates one machine)");
  }
  ncclResult_t status = ncclSuccess;
  std::string why;
  auto state = CommState::join(segment, nranks, rank, engine::sim::current_device(),
                               join_timeout_seconds(), status, why);
  if (!state) return fail(status, why);
  *comm = register_comm(std::move(state));
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  const auto state = find_comm(comm);
  if (!state) {
    return fail(ncclInvalidArgument, "ncclCommDestroy: comm is not a live communicator");
  }
  // Like NCCL, queued operations complete first (their tasks also keep the state alive).
  if (!state->aborted()) state->drain();
  unregister_comm(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  const auto state = find_comm(comm);
  if (!state) return fail(ncclInvalidArgument, "ncclCommAbort: comm is not a live communicator");
  state->abort();
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm is NULL");
  if (asyncError == nullptr) {
    return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  }
  const auto state = find_comm(comm);
  if (!state) {
    return fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm is not a live communicator");
  }
  *asyncError = state->async_error();
  return ncclSuccess;
}

// A communicator's asynchronous error once it has one (it says what broke it); else this
// thread's last failed call, as NCCL keeps it.
const char* ncclGetLastError(ncclComm_t comm) {
  thread_local std::string text;
  const auto state = comm != nullptr ? find_comm(comm) : nullptr;
  text = state && state->async_error() != ncclSuccess ? state->async_message() : last_error();
  return text.c_str();
}

ncclResult_t ncclGroupStart() {
  return group_start();
}

ncclResult_t ncclGroupEnd() {
  return group_end();
}
