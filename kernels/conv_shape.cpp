#include "kernels/conv_shape.h"

#include <sstream>

#include "kernels/error.h"

namespace engine {

std::string Conv2dShape::str() const {
  // ostringstream rather than string concatenation: GCC 12 -O3 warns falsely (-Wrestrict)
  // on long chains of std::string operator+.
  std::ostringstream text;
  text << "n" << batch << " " << in_h << "x" << in_w << "x" << in_channels << " -> " << out_channels
       << " " << kernel_h << "x" << kernel_w << " s" << stride_h << " p" << pad_h;
  if (stride_w != stride_h || pad_w != pad_h) text << " (w: s" << stride_w << " p" << pad_w << ")";
  if (dilation_h != 1 || dilation_w != 1) text << " d" << dilation_h << "x" << dilation_w;
  return text.str();
}

void Conv2dShape::validate() const {
  const bool positive = batch > 0 && in_h > 0 && in_w > 0 && in_channels > 0 && out_channels > 0 &&
                        kernel_h > 0 && kernel_w > 0 && stride_h > 0 && stride_w > 0 &&
                        dilation_h > 0 && dilation_w > 0;
  if (!positive || pad_h < 0 || pad_w < 0) fail("conv2d: invalid shape " + str());
  if (out_h() <= 0 || out_w() <= 0) fail("conv2d: empty output for shape " + str());
}

Conv2dShape make_conv2d_shape(int64_t batch, int64_t size, int64_t in_channels,
                              int64_t out_channels, int64_t kernel, int64_t stride, int64_t pad) {
  Conv2dShape shape;
  shape.batch = batch;
  shape.in_h = shape.in_w = size;
  shape.in_channels = in_channels;
  shape.out_channels = out_channels;
  shape.kernel_h = shape.kernel_w = kernel;
  shape.stride_h = shape.stride_w = stride;
  shape.pad_h = shape.pad_w = pad;
  return shape;
}

}  // namespace engine
