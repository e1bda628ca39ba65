// How many kernels this process has launched through engine::cuda::launch (every kernel of
// ours, on a GPU or on the sim device; not the libraries' own: NCCL's, cuDNN's, cuBLAS's).
// bench_step prints the launches of one training step, and ctest holds them to a budget on the
// sim device: launches cost microseconds of GPU idle each, and a fused pass that quietly splits
// again shows here first.
//
// A census counts them kernel by kernel (bench_step --launch-census): which kernels a step's
// launches go to, the list any launch budget is cut from. Off unless started: a launch then
// pays one relaxed load for it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace engine {

uint64_t kernel_launches();
// Called by engine::cuda::launch (kernels/cuda/launch.h) once per launch of `kernel` (the
// kernel's host-side address, as cudaLaunchKernel takes it).
void count_kernel_launch(const void* kernel);

// Starts counting launches per kernel, from zero; launches on every thread count.
void start_launch_census();
// Stops the census: each kernel launched since the start with its launches, the most launched
// first (ties by address). Empty when no census ran.
std::vector<std::pair<const void*, uint64_t>> stop_launch_census();

}  // namespace engine
