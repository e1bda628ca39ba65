#include "kernels/cpu/copy.h"

#include "kernels/cuda/copy.h"
#include "kernels/error.h"
#include "kernels/memory.h"
#include "kernels/ops/checks.h"
#include "kernels/ops/copy.h"
#include "kernels/ops/dispatch.h"

namespace engine {

void fill(Tensor& dst, float value, Stream& stream) {
  constexpr ops::OpName op{"fill"};
  if (dst.defined() && dst.dtype() != DType::f64) ops::require_float(op, "dst", dst);
  ops::require_defined(op, "dst", dst);
  ops::require_on_stream(op, "dst", dst, stream);
  const FillArgs args{
      .dtype = dst.dtype(), .dst = dst.raw_data(), .n = dst.numel(), .value = value};
  ops::on_device(
      op, stream, [&] { cpu::fill(args); },
      [&](auto cuda_stream) { cuda::fill(args, cuda_stream); });
}

void copy(const Tensor& src, Tensor& dst, Stream& stream) {
  constexpr ops::OpName op{"copy"};
  ops::require_defined(op, "src", src);
  ops::require_defined(op, "dst", dst);
  if (src.dtype() != dst.dtype() || src.numel() != dst.numel()) {
    fail("copy: dst is " + dst.describe() + ", expected the dtype and size of src (" +
         src.describe() + "); use cast to change the dtype");
  }
  const Device cuda_side = src.device().is_cuda() ? src.device() : dst.device();
  if (cuda_side.is_cuda() && stream.device() != cuda_side) {
    fail("copy from " + src.describe() + " to " + dst.describe() + " needs a stream on " +
         cuda_side.str() + ", got one on " + stream.device().str());
  }
  copy_bytes("copy", dst.raw_data(), dst.device(), src.raw_data(), src.device(), src.nbytes(),
             stream);
}

void cast(const Tensor& src, Tensor& dst, Stream& stream) {
  constexpr ops::OpName op{"cast"};
  ops::require_float(op, "src", src);
  ops::require_float(op, "dst", dst);
  if (src.device() != dst.device() || src.numel() != dst.numel()) {
    fail("cast: dst is " + dst.describe() + ", expected the device and size of src (" +
         src.describe() + ")");
  }
  ops::require_on_stream(op, "src", src, stream);
  const CastArgs args{.src_dtype = src.dtype(),
                      .src = src.raw_data(),
                      .dst_dtype = dst.dtype(),
                      .dst = dst.raw_data(),
                      .n = src.numel()};
  ops::on_device(
      op, stream, [&] { cpu::cast(args); },
      [&](auto cuda_stream) { cuda::cast(args, cuda_stream); });
}

}  // namespace engine
