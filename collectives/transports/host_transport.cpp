#include "collectives/transports/host_transport.h"

#include <cstring>

#include "collectives/cpu/reduce.h"

namespace engine {

void HostTransport::copy(void* dst, const void* src, size_t bytes) {
  std::memmove(dst, src, bytes);
}

void HostTransport::reduce(const Reduction& reduction, void* dst, const void* a, const void* b,
                           int64_t count) {
  cpu::reduce(reduction, dst, a, b, count);
}

}  // namespace engine
