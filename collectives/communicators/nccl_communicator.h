// NcclCommunicator: NCCL's own collectives on CUDA tensors (SyncBN's all-reduce, and the
// baseline for our ring on GPUs). Work is queued on the communicator's stream after the
// caller's stream; gather and scatter, which NCCL lacks, are grouped send/recv. A watchdog
// aborts the NCCL communicator and the job when queued work overruns the timeout.
#pragma once

#include <memory>

#include "collectives/communicator.h"
#include "collectives/communicators/nccl_comm.h"
#include "collectives/execution/watchdog.h"
#include "kernels/stream.h"

namespace engine {

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<NcclComm> comm, CommInfo info, CommOptions options);
  ~NcclCommunicator() override;

  bool supports(Device device) const override { return device == comm_->device(); }
  bool capturable() const override { return true; }

 protected:
  Work execute(const CollectiveRequest& request, const OpContext& context, Stream& stream,
               bool blocking) override;
  Watchdog* device_watchdog() override { return &watchdog_; }

 private:
  void enqueue(const CollectiveRequest& request);

  std::shared_ptr<NcclComm> comm_;
  Stream stream_;
  std::shared_ptr<std::byte> barrier_word_;
  Watchdog watchdog_;
};

}  // namespace engine
