// Which backends this process can use. Without a usable CUDA driver (cudaGetDeviceCount
// returns 34, 35 or 100) the process says so once on stderr and runs on the CPU backend;
// asking for a CUDA device then is a clear error.
#pragma once

#include <string>
#include <string_view>

#include "kernels/device.h"

namespace engine {

// Usable CUDA devices (0 in a build without CUDA or without a driver). Queried once.
int cuda_device_count();
// Why cuda_device_count() is 0 ("" when it is not).
std::string cuda_unavailable_reason();
// The UUID of visible CUDA device `index`, in hex (the same in every process seeing that GPU).
std::string cuda_device_uuid(int index);
// The name of visible CUDA device `index`, e.g. "NVIDIA H200".
std::string cuda_device_name(int index);
// The CUDA runtime's and driver's versions: "runtime 13000 driver 13000".
std::string cuda_versions();
// Whether this build's CUDA devices are the sim device (ENGINE_CUDA=SIM: the CUDA backend on
// the CPU, for correctness, not speed), so benchmarks compare it with the CPU backend and skip
// the GPU libraries it does not emulate.
bool cuda_is_sim_device();

// Turns a --device value into a device of this process:
//   "auto"   -> cuda:<local_rank> when CUDA devices exist, else cpu
//   "cpu"    -> cpu
//   "cuda"   -> cuda:<local_rank>
//   "cuda:N" -> cuda:N
// Throws engine::Error naming the request when CUDA is asked for and not usable, or when
// the index is out of range.
Device resolve_device(std::string_view request, int local_rank = 0);

}  // namespace engine
