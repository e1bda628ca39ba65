#include "collectives/transports/nccl_transport.h"

#include "collectives/core/check_nccl.h"
#include "collectives/cuda/reduce.h"
#include "kernels/cuda/cuda_runtime.h"
#include "kernels/error.h"
#include "kernels/memory.h"

namespace engine {

NcclTransport::NcclTransport(std::shared_ptr<NcclComm> comm, const NcclTransportOptions& options)
    : comm_(std::move(comm)), options_(options), stream_(comm_->device()) {
  const Device device = comm_->device();
  in_staging_ = allocate_storage(options_.message_bytes, device);
  out_staging_[0] = allocate_storage(options_.message_bytes, device);
  out_staging_[1] = allocate_storage(options_.message_bytes, device);
}

void* NcclTransport::next_out_staging() {
  void* staging = out_staging_[next_out_].get();
  next_out_ = 1 - next_out_;
  return staging;
}

void NcclTransport::flush_send() {
  if (held_.to < 0) return;
  CHECK_NCCL(
      ncclSend(held_.data, held_.bytes, ncclUint8, held_.to, comm_->get(), stream_.native()));
  held_ = {};
}

void NcclTransport::transfer(const Transfer& t) {
  const size_t bytes = t.bytes();
  ENGINE_REQUIRE(bytes <= options_.message_bytes,
                 "NcclTransport: message larger than message_bytes");
  if (t.from < 0) {
    flush_send();
    held_ = {t.src, bytes, t.to};
    return;
  }
  // Copies land in place (or in a staging buffer when only forwarded); reductions receive
  // beside the local operand and combine with our kernel.
  void* landing = t.reduction ? in_staging_.get() : (t.dst != nullptr ? t.dst : next_out_staging());
  CHECK_NCCL(ncclGroupStart());
  flush_send();  // grouped with the receive, so that the ring cannot deadlock
  CHECK_NCCL(ncclRecv(landing, bytes, ncclUint8, t.from, comm_->get(), stream_.native()));
  CHECK_NCCL(ncclGroupEnd());
  const void* result = landing;
  if (t.reduction) {
    void* out = t.dst != nullptr ? t.dst : next_out_staging();
    cuda::reduce(*t.reduction, out, t.src, landing, t.count, stream_.native());
    result = out;
  }
  if (t.to >= 0) held_ = {result, bytes, t.to};
}

void NcclTransport::copy(void* dst, const void* src, size_t bytes) {
  flush_send();
  cuda_runtime::memcpy_async(dst, src, bytes, stream_.native());
}

void NcclTransport::reduce(const Reduction& reduction, void* dst, const void* a, const void* b,
                           int64_t count) {
  flush_send();
  cuda::reduce(reduction, dst, a, b, count, stream_.native());
}

}  // namespace engine
