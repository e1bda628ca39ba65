// The sim device's devices: how many (ENGINE_SIM_DEVICE_COUNT, default 1), how much memory
// each has (ENGINE_SIM_DEVICE_MEMORY_MIB, default 16384), and the calling thread's current one.
#pragma once

#include <cstddef>

namespace engine::sim {

// The devices this process sees: the machine's ENGINE_SIM_DEVICE_COUNT, or those that
// CUDA_VISIBLE_DEVICES lists; -1 when ENGINE_SIM_DEVICE_COUNT is not a count (said on stderr).
int device_count();
// The machine's number of visible device `device` (what its UUID tells apart).
int machine_device(int device);
// Bytes each device can hold at once: cudaMalloc beyond it fails with cudaErrorMemoryAllocation.
std::size_t device_memory_bytes();
// cudaSetDevice's choice for this host thread (0 until it is called).
int current_device();

}  // namespace engine::sim
