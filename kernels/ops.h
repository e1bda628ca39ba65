// The op API: free functions on Tensors, dispatched on the tensors' device to the CPU
// implementation (kernels/cpu/) or the CUDA entry points (kernels/cuda/) through one helper,
// ops::on_device (kernels/ops/dispatch.h). Every op checks its arguments and names the
// offending tensor in the error (kernels/ops/checks.h). The conventions, for every family:
// - outputs are preallocated by the caller; optional tensors are undefined when absent;
// - ops never allocate and never synchronize: an op that needs scratch says how much with a
//   *_workspace_numel function and takes the caller's workspace (allocate once per shape);
// - CPU ops run immediately on the calling thread; CUDA ops are queued on the stream;
// - an op of one input and one output tensor takes them positionally, relu_forward(x, y,
//   stream); every other op takes one <OpName>Operands struct by value, declared above it:
//   its tensors (inputs, then outputs, then workspace; optional ones default to undefined) and
//   its scalars as named fields, so that a call names each one with designated initializers,
//   add({.a = a, .b = b, .y = y}, stream). Option structs (SgdOptions, Conv2dShape, ConvAlgo,
//   the fusions and epilogues) stay separate parameters; no two adjacent parameters share a
//   type and none is a bare bool.
// One header per op family, all included here.
#pragma once

#include "kernels/ops/activation.h"
#include "kernels/ops/batchnorm.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/copy.h"
#include "kernels/ops/loss.h"
#include "kernels/ops/optim.h"
#include "kernels/ops/pool.h"
