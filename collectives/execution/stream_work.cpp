#include "collectives/execution/stream_work.h"

namespace engine {

StreamWorkState::StreamWorkState(const Stream& comm_stream, const OpContext& context)
    : event_(std::make_shared<Event>(comm_stream.device())), context_(context) {
  event_->record(comm_stream);
}

bool StreamWorkState::test() {
  return event_->done();
}

void StreamWorkState::wait() {
  if (event_->done()) return;
  const Deadline deadline(context_.timeout);
  Backoff backoff(0);
  while (!event_->done()) {
    if (deadline.expired()) {
      handle_timeout(context_, -1, "its queued GPU work", deadline.waited_seconds());
    }
    backoff.pause();
  }
}

void StreamWorkState::wait(Stream& stream) {
  stream.wait(*event_);
}

void order_after(const Stream& later, const Stream& earlier) {
  if (later.device().is_cpu() || &later == &earlier) return;
  Event ready(earlier.device());
  ready.record(earlier);
  // The planted bug of tests/sim_tsan (a copy of this file compiled with the definition): the
  // handshake without its cudaStreamWaitEvent, which ThreadSanitizer must report as a race on
  // the sim device. Never defined in a product build.
#if !defined(ENGINE_PLANTED_MISSING_STREAM_WAIT)
  later.wait(ready);
#endif
}

}  // namespace engine
