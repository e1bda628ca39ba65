// How many kernels this process has launched through engine::cuda::launch (every kernel of
// ours, on a GPU or on the sim device; not the libraries' own: NCCL's, cuDNN's, cuBLAS's).
// bench_step prints the launches of one training step, and ctest holds them to a budget on the
// sim device: launches cost microseconds of GPU idle each, and a fused pass that quietly splits
// again shows here first.
#pragma once

#include <cstdint>

namespace engine {

uint64_t kernel_launches();
// Called by engine::cuda::launch (kernels/cuda/launch.h) once per launch.
void count_kernel_launch();

}  // namespace engine
