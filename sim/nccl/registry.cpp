#include "sim/nccl/registry.h"

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace engine::sim_nccl {
namespace {

struct Registry {
  std::mutex mutex;
  uintptr_t next = 1;
  std::unordered_map<uintptr_t, std::shared_ptr<CommState>> comms;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

ncclComm_t register_comm(std::shared_ptr<CommState> state) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  const uintptr_t id = r.next++;
  r.comms.emplace(id, std::move(state));
  return reinterpret_cast<ncclComm_t>(id);
}

std::shared_ptr<CommState> find_comm(ncclComm_t handle) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  const auto it = r.comms.find(reinterpret_cast<uintptr_t>(handle));
  return it == r.comms.end() ? nullptr : it->second;
}

void unregister_comm(ncclComm_t handle) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.comms.erase(reinterpret_cast<uintptr_t>(handle));
}

}  // namespace engine::sim_nccl
