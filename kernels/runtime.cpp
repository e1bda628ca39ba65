#include "kernels/runtime.h"

#include <cstdio>
#include <mutex>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/error.h"

namespace engine {

namespace {
const cuda_runtime::DeviceQuery& device_query() {
  static const cuda_runtime::DeviceQuery query = [] {
    cuda_runtime::DeviceQuery result = cuda_runtime::query_devices();
    // Said once per job, by rank 0 (or a world of one): every rank of a host would say the same.
    if (result.device_count == 0 && process_rank() <= 0) {
      std::fprintf(stderr, "no usable CUDA device (%s): using the CPU backend\n",
                   result.why_none.c_str());
    }
    return result;
  }();
  return query;
}
}  // namespace

int cuda_device_count() {
  return device_query().device_count;
}
std::string cuda_unavailable_reason() {
  return device_query().why_none;
}
std::string cuda_device_uuid(int index) {
  return cuda_runtime::device_uuid(index);
}
std::string cuda_device_name(int index) {
  return cuda_runtime::device_name(index);
}
std::string cuda_versions() {
  return cuda_runtime::versions();
}
bool cuda_is_sim_device() {
#ifdef ENGINE_SIM_DEVICE
  return true;
#else
  return false;
#endif
}

Device resolve_device(std::string_view request, int local_rank) {
  const int count = cuda_device_count();
  if (request == "auto") return count > 0 ? Device::cuda(local_rank % count) : Device::cpu();
  Device device = request == "cuda" ? Device::cuda(local_rank) : parse_device(request);
  if (device.is_cpu()) return device;
  if (count == 0) {
    fail("--device " + std::string(request) + " asks for CUDA, but " + cuda_unavailable_reason() +
         "; use --device cpu or auto");
  }
  if (device.index >= count) {
    fail("--device " + std::string(request) + " resolves to " + device.str() + ", but only " +
         std::to_string(count) + " CUDA device(s) are visible" +
         (request == "cuda" ? " (more ranks on this host than GPUs?)" : ""));
  }
  return device;
}

}  // namespace engine
