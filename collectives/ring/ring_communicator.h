// RingCommunicator: our collectives (ring_algorithms.h) over a Transport. Host transports
// (shm, mpi) run each collective on the caller's thread, or on the communicator's worker
// thread for *_async calls, one at a time in issue order. Device transports (nccl) queue
// everything on the transport's stream, ordered after the caller's stream.
#pragma once

#include <memory>

#include "collectives/communicator.h"
#include "collectives/execution/host_executor.h"
#include "collectives/execution/watchdog.h"
#include "collectives/ring/ring_algorithms.h"
#include "collectives/transports/transport.h"

namespace engine {

// Runs one collective of `request` with `algorithms` over `transport`, bracketed by the
// transport's begin(context) and finish().
void run_ring_collective(RingAlgorithms& algorithms, Transport& transport,
                         const CollectiveRequest& request, const OpContext& context);

class RingCommunicator : public Communicator {
 public:
  // info.rank/size must match the transport's.
  RingCommunicator(std::unique_ptr<Transport> transport, CommInfo info, CommOptions options);
  ~RingCommunicator() override;

  bool supports(Device device) const override;
  // Over a device transport (NCCL), where every transfer is queued on a stream.
  bool capturable() const override { return watchdog_ != nullptr; }
  Transport& transport() { return *transport_; }

 protected:
  Work execute(const CollectiveRequest& request, const OpContext& context, Stream& stream,
               bool blocking) override;
  Watchdog* device_watchdog() override { return watchdog_.get(); }

 private:
  void run(const CollectiveRequest& request, const OpContext& context);
  Device transport_device() const;

  // Declared in this order so the executor (whose jobs use the rest) goes first.
  std::unique_ptr<Transport> transport_;
  RingAlgorithms algorithms_;
  std::unique_ptr<Watchdog> watchdog_;  // device transports only
  HostExecutor executor_;
};

}  // namespace engine
