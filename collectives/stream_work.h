// Work queued on a CUDA communication stream (NCCL transports and communicators): done when
// an event recorded after it completes. Waiting on the host polls the event against the
// collective's deadline; waiting on a stream does not block the host.
#pragma once

#include <memory>

#include "collectives/timeout.h"
#include "collectives/work.h"
#include "kernels/stream.h"

namespace engine {

class StreamWorkState : public WorkState {
 public:
  // Records the completion event on `comm_stream` now.
  StreamWorkState(const Stream& comm_stream, const OpContext& context);

  bool test() override;
  void wait() override;
  void wait(Stream& stream) override;
  std::shared_ptr<Event> event() const { return event_; }

 private:
  std::shared_ptr<Event> event_;
  OpContext context_;
};

// Makes work queued on `later` from now on wait for everything queued so far on `earlier`.
void order_after(const Stream& later, const Stream& earlier);

}  // namespace engine
