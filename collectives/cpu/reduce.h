// The CPU twin of the CUDA reduction kernels (collectives/cuda/reduce.cuh): the combining
// step of every CPU transport. Single-threaded on purpose: each rank already owns a core,
// and an OpenMP team per rank would oversubscribe the machine.
#pragma once

#include <cstdint>

#include "collectives/core/reduce_op.h"

namespace engine::cpu {

// dst[i] = op(a[i], b[i]) in fp32 (f64: in fp64), divided by reduction.divisor when it is
// not 1, rounded once to reduction.dtype. dst may alias a or b.
void reduce(const Reduction& reduction, void* dst, const void* a, const void* b, int64_t n);

// data[i] = data[i] / divisor, in fp32 (f64: in fp64), rounded once (avg for library
// collectives).
void divide(DType dtype, void* data, int64_t n, int divisor);

}  // namespace engine::cpu
