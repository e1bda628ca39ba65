// The op API: free functions on Tensors, dispatched on the tensors' device to the CPU
// implementation (kernels/cpu/) or the CUDA launchers (kernels/cuda/). Every op checks its
// arguments and names the offending tensor in the error. Outputs are preallocated by the
// caller; ops never allocate or synchronize. CPU ops run immediately on the calling thread.
#pragma once

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

// --- fill / copy / cast (kernels/ops/copy.cpp) ---------------------------------------------
// Every element of dst = value (converted to dst's dtype).
void fill(Tensor& dst, float value, Stream& stream);
// dst = src; same dtype and element count, any pair of devices (host<->device copies are
// ordered on stream, whose device must be the CUDA side).
void copy(const Tensor& src, Tensor& dst, Stream& stream);
// dst = src converted between f32 and bf16 (round to nearest even); same device and count.
void cast(const Tensor& src, Tensor& dst, Stream& stream);

// --- activation (kernels/ops/activation.cpp) -----------------------------------------------
// y = max(x, 0); NaN stays NaN. y may alias x (in place).
void relu_forward(const Tensor& x, Tensor& y, Stream& stream);
// dx = dy where y > 0, else 0; y is the forward output. dx may alias dy.
void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx, Stream& stream);
// The residual join: y = max(a + b, 0), computed in fp32 and rounded once. y may alias a or b.
void add_relu_forward(const Tensor& a, const Tensor& b, Tensor& y, Stream& stream);
// The gradient reaching both a and b of add_relu: dsum = dy where y > 0, else 0.
void add_relu_backward(const Tensor& y, const Tensor& dy, Tensor& dsum, Stream& stream);

}  // namespace engine
