// Work queued on a CUDA communication stream (NCCL transports and communicators): done when
// an event recorded after it completes. Waiting on the host polls the event against the
// collective's deadline; waiting on a stream does not block the host.
#pragma once

#include <memory>

#include "collectives/core/timeout.h"
#include "collectives/execution/watchdog.h"
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

// A collective on a communication stream, for the caller's `stream`: orders comm_stream after
// it, runs `enqueue` (which queues the collective on comm_stream), and has `watchdog` watch the
// completion event. Blocking: a barrier (host_wait) is about the host and returns once every
// rank has entered it; other collectives order the caller's stream after them, like any CUDA
// op.
template <typename Enqueue>
Work queue_on_comm_stream(Stream& comm_stream, Stream& stream, const OpContext& context,
                          Watchdog& watchdog, bool blocking, bool host_wait, Enqueue&& enqueue) {
  order_after(comm_stream, stream);
  enqueue();
  auto state = std::make_shared<StreamWorkState>(comm_stream, context);
  // Captured into a CUDA graph, nothing ran: the graph's launches are watched instead
  // (Communicator::watch_queued).
  if (!comm_stream.capturing()) {
    watchdog.watch(context, [event = state->event()] { return event->done(); });
  }
  if (blocking) {
    if (host_wait) {
      state->wait();
    } else {
      state->wait(stream);
    }
  }
  return Work(state);
}

}  // namespace engine
