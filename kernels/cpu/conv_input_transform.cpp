#include "kernels/cpu/conv_input_transform.h"

#include "kernels/bfloat16.h"
#include "kernels/conv_input_value.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/parallel.h"

namespace engine::cpu {

namespace {

template <typename T>
void transform_rows(const T* x, int64_t rows, int64_t channels, const ConvInputTransform& t,
                    T* out) {
  parallel_for(rows, [&](int64_t row) {
    const T* in = x + row * channels;
    T* to = out + row * channels;
    for (int64_t c = 0; c < channels; ++c)
      to[c] = from_float<T>(conv_input_value(to_float(in[c]), t.scale[c], t.shift[c], t.relu));
  });
}

}  // namespace

TransformedConvInput::TransformedConvInput(DType dtype, const void* x, int64_t rows,
                                           int64_t channels, const ConvInputTransform& transform)
    : scratch_((rows * channels * static_cast<int64_t>(dtype_size(dtype)) + 3) / 4) {
  if (dtype == DType::bf16) {
    transform_rows(static_cast<const bf16*>(x), rows, channels, transform,
                   reinterpret_cast<bf16*>(scratch_.data()));
  } else {
    transform_rows(static_cast<const float*>(x), rows, channels, transform, scratch_.data());
  }
}

void conv_input_from_batchnorm(const ConvInputFromBatchNormArgs& args) {
  for (int64_t c = 0; c < args.channels; ++c) {
    const ConvInputCoefficients k = conv_input_coefficients_at(args, c);
    args.scale[c] = k.scale;
    args.shift[c] = k.shift;
  }
}

}  // namespace engine::cpu
