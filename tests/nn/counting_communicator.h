// A communicator that records every collective a layer starts and forwards blocking
// all-reduces to a real one: what the SyncBN suite uses to show that a training step sends
// exactly one f64[2C+1] and one f32[2C] all-reduce, and that evaluation sends nothing.
#pragma once

#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "kernels/error.h"

namespace engine::testing {

class CountingCommunicator final : public Communicator {
 public:
  struct Call {
    CollectiveKind kind;
    ReduceOp op;
    DType dtype;
    int64_t numel;
  };

  explicit CountingCommunicator(Communicator& inner)
      : Communicator({inner.rank(), inner.size(), inner.local_rank(), "counting " + inner.name()},
                     inner.options()),
        inner_(inner) {}

  bool supports(Device device) const override { return inner_.supports(device); }
  const std::vector<Call>& calls() const { return calls_; }
  void clear() { calls_.clear(); }
  // Bytes the recorded collectives carried per rank.
  size_t bytes() const {
    size_t total = 0;
    for (const Call& call : calls_)
      total += static_cast<size_t>(call.numel) * dtype_size(call.dtype);
    return total;
  }

 protected:
  Work execute(const CollectiveRequest& request, const OpContext&, Stream& stream,
               bool blocking) override {
    const Tensor& tensor = request.reference();
    calls_.push_back({request.kind, request.op, tensor.dtype(), tensor.numel()});
    if (request.kind != CollectiveKind::all_reduce || !blocking) {
      fail("CountingCommunicator forwards blocking all_reduce only, got " +
           std::string(collective_name(request.kind)));
    }
    Tensor shared = request.output;  // the same storage as the caller's tensor
    inner_.all_reduce(shared, request.op, stream);
    return {};
  }

 private:
  Communicator& inner_;
  std::vector<Call> calls_;
};

}  // namespace engine::testing
