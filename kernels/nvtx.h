// NVTX ranges for Nsight Systems users (the --trace timeline pushes one per span it records):
// NVIDIA's header-only nvtx3 where the CUDA build has it, nothing to link; elsewhere (the CPU
// build, a toolkit without nvtx3) these do nothing. With no Nsight tool attached, nvtx3's
// calls return at once, so a trace run costs the same with or without a profiler.
#pragma once

#include <string>

namespace engine {

// Opens a range named `name` on this host thread; ranges nest and close in reverse order.
void nvtx_push(const std::string& name);
void nvtx_pop();
// Whether nvtx_push reaches NVTX in this build.
bool nvtx_available();

}  // namespace engine
