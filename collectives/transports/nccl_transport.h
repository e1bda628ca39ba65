// NcclTransport: the ring's messages as ncclSend/ncclRecv between device buffers, with our
// reduction kernels (collectives/cuda/reduce.cuh) on the same communication stream.
//
// NCCL's point-to-point calls block the stream until the peer posts the matching call, so a
// send issued alone while the peer also sends would deadlock the ring. Every send is
// therefore held back and issued in one ncclGroup with the next receive: around the ring,
// rank r's group {send k to r+1, receive k from r-1} matches its neighbours' groups.
// Forwarded results live in two alternating staging buffers, so a held-back send never
// reads a buffer that the grouped receive is writing.
#pragma once

#include <cstddef>
#include <memory>

#include "collectives/comm_options.h"
#include "collectives/communicators/nccl_comm.h"
#include "collectives/transports/transport.h"
#include "kernels/stream.h"

namespace engine {

class NcclTransport : public Transport {
 public:
  NcclTransport(std::shared_ptr<NcclComm> comm, const NcclTransportOptions& options);

  std::string_view name() const override { return "nccl"; }
  DeviceKind memory() const override { return DeviceKind::cuda; }
  int rank() const override { return comm_->rank(); }
  int world() const override { return comm_->size(); }
  size_t max_message_bytes() const override { return options_.message_bytes; }
  size_t small_message_bytes() const override { return options_.small_message_bytes; }

  void begin(const OpContext&) override {}
  void transfer(const Transfer& transfer) override;
  void finish() override { flush_send(); }
  Stream* stream() override { return &stream_; }
  void abort() override { comm_->abort(); }
  std::string async_error() override { return comm_->async_error(); }
  void copy(void* dst, const void* src, size_t bytes) override;
  void reduce(const Reduction& reduction, void* dst, const void* a, const void* b,
              int64_t count) override;

 private:
  struct HeldSend {
    const void* data = nullptr;
    size_t bytes = 0;
    int to = -1;
  };
  void flush_send();
  void* next_out_staging();

  std::shared_ptr<NcclComm> comm_;
  NcclTransportOptions options_;
  Stream stream_;
  std::shared_ptr<std::byte> in_staging_;
  std::shared_ptr<std::byte> out_staging_[2];
  int next_out_ = 0;
  HeldSend held_;
};

}  // namespace engine
