// What the sim device's ThreadSanitizer tests share: a kernel that writes a buffer, one that
// reads it, and a gate that fixes the order in which two streams run without ordering them for
// TSan. Include first: it brings the sim device's kernel prelude (the SIMT emulator, and
// launch() queuing on the stream), as the CUDA backend's .cu files have it. Like a .cuh, it
// defines the kernels: one translation unit per binary includes it.
#pragma once

#include "sim/cuda/kernel_prelude.h"
// After the prelude: launch() is engine::sim::launch here.
#include "kernels/cuda/launch.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sim/cuda/streams.h"

namespace sim_tsan {

// values[i] = base + i: "the backward writes a gradient".
__global__ void write_ramp_kernel(float* values, float base, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) values[i] = base + static_cast<float>(i);
}

// out[i] = 2 * in[i]: a kernel that reads what another wrote.
__global__ void read_double_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = 2.f * in[i];
}

constexpr int kThreads = 64;
inline dim3 blocks_for(int n) {
  return dim3(static_cast<unsigned>((n + kThreads - 1) / kThreads));
}

// Holds a stream until another stream has reached a point, in real time only: the flag is a
// relaxed atomic, which orders nothing for TSan. A test uses it to make the reading stream run
// after the writing one (the interleaving in which the values even come out right), so a race
// is reported the same way every run, with the reader's access first. It must outlive the
// streams' work (synchronize them before it goes).
class Gate {
 public:
  // Queues on `stream` a task that waits until open_after's task has run.
  void hold(cudaStream_t stream) {
    engine::sim::enqueue(stream, [this] {
      while (!open_.load(std::memory_order_relaxed))
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
  }
  // Queues on `stream` the task that opens the gate once what is queued before it has run.
  void open_after(cudaStream_t stream) {
    engine::sim::enqueue(stream, [this] { open_.store(true, std::memory_order_relaxed); });
  }

 private:
  std::atomic<bool> open_{false};
};

}  // namespace sim_tsan
