#include "collectives/ring/ring_communicator.h"

#include "collectives/execution/stream_work.h"
#include "kernels/error.h"

namespace engine {

RingCommunicator::RingCommunicator(std::unique_ptr<Transport> transport, CommInfo info,
                                   CommOptions options)
    : Communicator(std::move(info), std::move(options)),
      transport_(std::move(transport)),
      algorithms_(*transport_, transport_device()),
      executor_(name()) {
  ENGINE_REQUIRE(transport_->rank() == rank() && transport_->world() == size(),
                 "RingCommunicator: transport rank/world differ from the communicator's");
  if (transport_->stream() != nullptr) {
    watchdog_ = std::make_unique<Watchdog>([this] { transport_->abort(); },
                                           [this] { return transport_->async_error(); });
  }
}

RingCommunicator::~RingCommunicator() = default;

Device RingCommunicator::transport_device() const {
  Stream* stream = transport_->stream();
  return stream != nullptr ? stream->device() : Device::cpu();
}

bool RingCommunicator::supports(Device device) const {
  return device.kind == transport_->memory() && (device.is_cpu() || device == transport_device());
}

Work RingCommunicator::execute(const CollectiveRequest& request, const OpContext& context,
                               Stream& stream, bool blocking) {
  if (transport_->stream() == nullptr) {
    return executor_.execute(blocking, [this, request, context] { run(request, context); });
  }
  // Device transport: the transfers queue on its communication stream.
  return queue_on_comm_stream(*transport_->stream(), stream, context, *watchdog_, blocking,
                              request.kind == CollectiveKind::barrier,
                              [&] { executor_.run([&] { run(request, context); }); });
}

void RingCommunicator::run(const CollectiveRequest& request, const OpContext& context) {
  run_ring_collective(algorithms_, *transport_, request, context);
}

void run_ring_collective(RingAlgorithms& algorithms, Transport& transport,
                         const CollectiveRequest& request, const OpContext& context) {
  transport.begin(context);
  const Tensor& reference = request.reference();
  const DType dtype = reference.dtype();
  // The request's tensors are handles; the collective writes through the output's.
  void* output = request.output_data();
  const void* input = request.input_data();
  switch (request.kind) {
    case CollectiveKind::all_reduce:
      algorithms.all_reduce(output, reference.numel(), dtype, request.op);
      break;
    case CollectiveKind::broadcast:
      algorithms.broadcast(output, reference.numel(), dtype, request.root);
      break;
    case CollectiveKind::reduce:
      algorithms.reduce(output, reference.numel(), dtype, request.op, request.root);
      break;
    case CollectiveKind::all_gather:
      algorithms.all_gather(input, output, request.input.numel(), dtype);
      break;
    case CollectiveKind::reduce_scatter:
      algorithms.reduce_scatter(input, output, request.output.numel(), dtype, request.op);
      break;
    case CollectiveKind::gather:
      algorithms.gather(input, output, request.input.numel(), dtype, request.root);
      break;
    case CollectiveKind::scatter:
      algorithms.scatter(input, output, request.output.numel(), dtype, request.root);
      break;
    case CollectiveKind::barrier:
      algorithms.barrier();
      break;
  }
  transport.finish();
}

}  // namespace engine
