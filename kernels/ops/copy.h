// fill / copy / cast (implemented in kernels/ops/copy.cpp). copy moves any dtype; fill takes
// the float dtypes (f32, bf16) and f64; cast takes the float dtypes only.
#pragma once

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

// Every element of dst = value (converted to dst's dtype).
void fill(Tensor& dst, float value, Stream& stream);
// dst = src; same dtype and element count, any pair of devices (host<->device copies are
// ordered on stream, whose device must be the CUDA side).
void copy(const Tensor& src, Tensor& dst, Stream& stream);
// dst = src converted between f32 and bf16 (round to nearest even); same device and count.
void cast(const Tensor& src, Tensor& dst, Stream& stream);

}  // namespace engine
