#include "kernels/nvtx.h"

#if ENGINE_HAVE_CUDA && __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define ENGINE_HAVE_NVTX 1
#else
#define ENGINE_HAVE_NVTX 0
#endif

namespace engine {

void nvtx_push(const std::string& name) {
#if ENGINE_HAVE_NVTX
  nvtxRangePushA(name.c_str());
#else
  (void)name;
#endif
}

void nvtx_pop() {
#if ENGINE_HAVE_NVTX
  nvtxRangePop();
#endif
}

bool nvtx_available() {
  return ENGINE_HAVE_NVTX != 0;
}

}  // namespace engine
