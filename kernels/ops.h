// The op API: free functions on Tensors, dispatched on the tensors' device to the CPU
// implementation (kernels/cpu/) or the CUDA entry points (kernels/cuda/). Every op checks
// its arguments and names the offending tensor in the error. Outputs are preallocated by the
// caller; ops never allocate device memory in the step loop and never synchronize. CPU ops
// run immediately on the calling thread. One header per op family, all included here.
#pragma once

#include "kernels/ops/activation.h"
#include "kernels/ops/batchnorm.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/copy.h"
#include "kernels/ops/loss.h"
#include "kernels/ops/optim.h"
#include "kernels/ops/pool.h"
