#include "collectives/peer_names.h"

#include <algorithm>

#include "collectives/core/check_mpi.h"
#include "kernels/error.h"

namespace engine {
namespace {

// This process's host name, as MPI reports it.
std::string this_host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  CHECK_MPI(MPI_Get_processor_name(name, &length));
  return std::string(name, static_cast<size_t>(std::max(0, length)));
}

}  // namespace

PeerNames PeerNames::of(MPI_Comm comm) {
  int size = 1, world_rank = 0;
  CHECK_MPI(MPI_Comm_size(comm, &size));
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  const std::string mine = this_host_name();
  mine.copy(host, sizeof(host) - 1);
  std::vector<char> hosts(static_cast<size_t>(size) * sizeof(host));
  PeerNames names;
  names.world_rank_.resize(size);
  CHECK_MPI(MPI_Allgather(&world_rank, 1, MPI_INT, names.world_rank_.data(), 1, MPI_INT, comm));
  CHECK_MPI(
      MPI_Allgather(host, sizeof(host), MPI_CHAR, hosts.data(), sizeof(host), MPI_CHAR, comm));
  for (int peer = 0; peer < size; ++peer)
    names.host_.emplace_back(hosts.data() + static_cast<size_t>(peer) * sizeof(host));
  names.spans_hosts_ = std::any_of(names.host_.begin(), names.host_.end(),
                                   [&](const std::string& h) { return h != names.host_[0]; });
  return names;
}

int PeerNames::world_rank(int peer) const {
  ENGINE_REQUIRE(peer >= 0 && peer < static_cast<int>(world_rank_.size()),
                 "PeerNames: no peer " + std::to_string(peer));
  return world_rank_[peer];
}

const std::string& PeerNames::host(int peer) const {
  ENGINE_REQUIRE(peer >= 0 && peer < static_cast<int>(host_.size()),
                 "PeerNames: no peer " + std::to_string(peer));
  return host_[peer];
}

std::string PeerNames::where(int peer) const {
  return spans_hosts_ ? "it runs on host " + host(peer) : std::string();
}

std::string PeerNames::placement() const {
  std::vector<std::string> hosts;
  std::vector<std::vector<int>> ranks;
  for (size_t peer = 0; peer < host_.size(); ++peer) {
    const auto index =
        static_cast<size_t>(std::find(hosts.begin(), hosts.end(), host_[peer]) - hosts.begin());
    if (index == hosts.size()) {
      hosts.push_back(host_[peer]);
      ranks.emplace_back();
    }
    ranks[index].push_back(world_rank_[peer]);
  }
  std::string text;
  for (size_t h = 0; h < hosts.size(); ++h) {
    std::vector<int> list = ranks[h];
    std::sort(list.begin(), list.end());
    text.append(h ? ", " : "").append(hosts[h]).append(list.size() > 1 ? " (ranks " : " (rank ");
    // Runs of consecutive ranks as "a-b".
    for (size_t i = 0; i < list.size();) {
      size_t end = i;
      while (end + 1 < list.size() && list[end + 1] == list[end] + 1)
        ++end;
      text.append(i ? ", " : "").append(std::to_string(list[i]));
      if (end > i) text.append(end == i + 1 ? ", " : "-").append(std::to_string(list[end]));
      i = end + 1;
    }
    text.append(")");
  }
  return text;
}

}  // namespace engine
