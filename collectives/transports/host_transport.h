// The base of the transports whose buffers are host memory (ShmTransport, MpiTransport):
// their local operations are the same memmove and CPU reduction.
#pragma once

#include "collectives/transports/transport.h"

namespace engine {

class HostTransport : public Transport {
 public:
  DeviceKind memory() const final { return DeviceKind::cpu; }
  void copy(void* dst, const void* src, size_t bytes) final;
  void reduce(const Reduction& reduction, void* dst, const void* a, const void* b,
              int64_t count) final;
};

}  // namespace engine
