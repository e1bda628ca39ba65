#include "kernels/cpu/copy.h"

#include <cstring>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/error.h"
#include "kernels/ops/checks.h"
#include "kernels/ops/copy.h"
#if ENGINE_HAVE_CUDA
#include "kernels/cuda/copy.h"
#endif

namespace engine {

void fill(Tensor& dst, float value, Stream& stream) {
  ops::require_defined("fill", "dst", dst);
  ops::require_on_stream("fill", "dst", dst, stream);
  if (dst.device().is_cpu()) {
    cpu::fill(dst.dtype(), dst.raw_data(), dst.numel(), value);
  } else {
#if ENGINE_HAVE_CUDA
    cuda::fill(dst.dtype(), dst.raw_data(), dst.numel(), value, stream.native());
#endif
  }
}

void copy(const Tensor& src, Tensor& dst, Stream& stream) {
  ops::require_defined("copy", "src", src);
  ops::require_defined("copy", "dst", dst);
  if (src.dtype() != dst.dtype() || src.numel() != dst.numel()) {
    fail("copy: dst is " + dst.describe() + ", expected the dtype and size of src (" +
         src.describe() + "); use cast to change the dtype");
  }
  if (src.device().is_cpu() && dst.device().is_cpu()) {
    if (src.nbytes() > 0) std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
    return;
  }
  const Device cuda_side = src.device().is_cuda() ? src.device() : dst.device();
  if (stream.device() != cuda_side) {
    fail("copy from " + src.describe() + " to " + dst.describe() + " needs a stream on " +
         cuda_side.str() + ", got one on " + stream.device().str());
  }
  if (src.nbytes() > 0) {
    cuda_runtime::memcpy_async(dst.raw_data(), src.raw_data(), src.nbytes(), stream.native());
  }
}

void cast(const Tensor& src, Tensor& dst, Stream& stream) {
  ops::require_defined("cast", "src", src);
  ops::require_defined("cast", "dst", dst);
  if (src.device() != dst.device() || src.numel() != dst.numel()) {
    fail("cast: dst is " + dst.describe() + ", expected the device and size of src (" +
         src.describe() + ")");
  }
  ops::require_on_stream("cast", "src", src, stream);
  if (src.device().is_cpu()) {
    cpu::cast(src.dtype(), src.raw_data(), dst.dtype(), dst.raw_data(), src.numel());
  } else {
#if ENGINE_HAVE_CUDA
    cuda::cast(src.dtype(), src.raw_data(), dst.dtype(), dst.raw_data(), src.numel(),
               stream.native());
#endif
  }
}

}  // namespace engine
