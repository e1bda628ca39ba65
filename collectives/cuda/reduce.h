// CUDA entry point of the collectives' combining step (defined in reduce.cuh, compiled by
// reduce.cu); the CPU twin is collectives/cpu/reduce.h. Pointers are device pointers.
#pragma once

#include <cstdint>

#include "collectives/core/reduce_op.h"
#include "kernels/cuda/cuda_runtime.h"

namespace engine::cuda {

// dst[i] = op(a[i], b[i]) in fp32 (f64: in fp64), divided by reduction.divisor when it is not
// 1, rounded once to reduction.dtype; dst may alias a or b. Queued on stream.
void reduce(const Reduction& reduction, void* dst, const void* a, const void* b, int64_t n,
            cudaStream_t stream);

}  // namespace engine::cuda
