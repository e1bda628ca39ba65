#include "collectives/communicator.h"

#include <utility>

#include "collectives/execution/stream_work.h"
#include "collectives/execution/watchdog.h"
#include "kernels/error.h"

namespace engine {

Communicator::Communicator(CommInfo info, CommOptions options)
    : info_(std::move(info)), options_(std::move(options)) {}

Work Communicator::start(CollectiveRequest request, Stream& stream, bool blocking) {
  validate_request(request, rank(), size());
  if (request.kind != CollectiveKind::barrier) {
    const Device device = request.reference().device();
    if (!supports(device)) {
      fail(std::string(collective_name(request.kind)) + " on rank " + std::to_string(rank()) +
           ": " + name() + " does not take tensors on " + device.str() +
           (device.is_cuda() ? " (use ring-nccl or nccl for CUDA tensors)"
                             : " (use ring-shm, ring-mpi or mpi for CPU tensors)"));
    }
    if (device.is_cuda() && stream.device() != device) {
      fail(std::string(collective_name(request.kind)) + " on rank " + std::to_string(rank()) +
           ": tensors on " + device.str() + " need a stream of that device, not " +
           stream.device().str());
    }
  }
  OpContext context = op_context(collective_name(request.kind));
  context.sequence = ++sequence_;
  context.bytes = request.bytes();
  return execute(request, context, stream, blocking);
}

OpContext Communicator::op_context(std::string_view op) const {
  OpContext context;
  context.op = op;
  context.impl = name();
  context.rank = rank();
  context.timeout = options_.timeout;
  context.on_timeout = options_.on_timeout;
  return context;
}

void Communicator::watch_queued(Stream& stream, const char* what) {
  Watchdog* watchdog = device_watchdog();
  if (watchdog == nullptr || !stream.device().is_cuda()) return;
  const OpContext context = op_context(what);
  const StreamWorkState queued(stream, context);
  watchdog->watch(context, [event = queued.event()] { return event->done(); });
}

namespace {
CollectiveRequest in_place(CollectiveKind kind, Tensor& tensor, ReduceOp op, int root) {
  return {kind, op, root, tensor, tensor};
}
CollectiveRequest out_of_place(CollectiveKind kind, const Tensor& input, Tensor& output,
                               ReduceOp op, int root) {
  return {kind, op, root, input, output};
}
Stream& cpu_stream() {
  static Stream stream;  // a CPU Stream has no state: sharing one is harmless
  return stream;
}
}  // namespace

void Communicator::all_reduce(Tensor& tensor, ReduceOp op, Stream& stream) {
  start(in_place(CollectiveKind::all_reduce, tensor, op, 0), stream, true);
}
Work Communicator::all_reduce_async(Tensor& tensor, ReduceOp op, Stream& stream) {
  return start(in_place(CollectiveKind::all_reduce, tensor, op, 0), stream, false);
}
void Communicator::broadcast(Tensor& tensor, int root, Stream& stream) {
  start(in_place(CollectiveKind::broadcast, tensor, ReduceOp::sum, root), stream, true);
}
Work Communicator::broadcast_async(Tensor& tensor, int root, Stream& stream) {
  return start(in_place(CollectiveKind::broadcast, tensor, ReduceOp::sum, root), stream, false);
}
void Communicator::reduce(Tensor& tensor, int root, ReduceOp op, Stream& stream) {
  start(in_place(CollectiveKind::reduce, tensor, op, root), stream, true);
}
Work Communicator::reduce_async(Tensor& tensor, int root, ReduceOp op, Stream& stream) {
  return start(in_place(CollectiveKind::reduce, tensor, op, root), stream, false);
}
void Communicator::all_gather(const Tensor& input, Tensor& output, Stream& stream) {
  start(out_of_place(CollectiveKind::all_gather, input, output, ReduceOp::sum, 0), stream, true);
}
Work Communicator::all_gather_async(const Tensor& input, Tensor& output, Stream& stream) {
  return start(out_of_place(CollectiveKind::all_gather, input, output, ReduceOp::sum, 0), stream,
               false);
}
void Communicator::reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op,
                                  Stream& stream) {
  start(out_of_place(CollectiveKind::reduce_scatter, input, output, op, 0), stream, true);
}
Work Communicator::reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op,
                                        Stream& stream) {
  return start(out_of_place(CollectiveKind::reduce_scatter, input, output, op, 0), stream, false);
}
void Communicator::gather(const Tensor& input, Tensor& output, int root, Stream& stream) {
  start(out_of_place(CollectiveKind::gather, input, output, ReduceOp::sum, root), stream, true);
}
Work Communicator::gather_async(const Tensor& input, Tensor& output, int root, Stream& stream) {
  return start(out_of_place(CollectiveKind::gather, input, output, ReduceOp::sum, root), stream,
               false);
}
void Communicator::scatter(const Tensor& input, Tensor& output, int root, Stream& stream) {
  start(out_of_place(CollectiveKind::scatter, input, output, ReduceOp::sum, root), stream, true);
}
Work Communicator::scatter_async(const Tensor& input, Tensor& output, int root, Stream& stream) {
  return start(out_of_place(CollectiveKind::scatter, input, output, ReduceOp::sum, root), stream,
               false);
}
void Communicator::barrier() {
  start({}, cpu_stream(), true);
}
Work Communicator::barrier_async() {
  return start({}, cpu_stream(), false);
}

}  // namespace engine
