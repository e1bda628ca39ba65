// An NCCL call of the sim device's shim, lowered to what this rank moves and computes: the
// bytes it sends to and receives from each peer, then a host-side step (a reduction in a
// fixed rank order, a local copy) once everything has arrived. ncclSend/ncclRecv are one
// transfer each; the collectives are built from the same transfers (collective_plans.h).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace engine::sim_nccl {

struct Transfer {
  int peer = 0;
  std::byte* data = nullptr;  // the source of a send (read only), the landing of a receive
  size_t bytes = 0;
};

struct Operation {
  const char* call = "";  // "ncclAllReduce": what messages name
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  // Runs on the stream after every transfer of the task has completed; may be empty.
  std::function<void()> finish;
  // Landing buffers of peers' data that `finish` combines; kept alive with the operation.
  std::vector<std::shared_ptr<std::byte[]>> scratch;
};

}  // namespace engine::sim_nccl
