// CPU twins of the CUDA fill and cast entry points (kernels/cuda/copy.h): the same argument
// structs (kernels/args/copy.h) with host pointers, no stream.
#pragma once

#include "kernels/args/copy.h"

namespace engine::cpu {

void fill(const FillArgs& args);
void cast(const CastArgs& args);

}  // namespace engine::cpu
