// The engine's compute/communication handshake under ThreadSanitizer on the sim device: a
// kernel on the compute stream writes a gradient, then queue_on_comm_stream (collectives/
// stream_work.h, as RingCommunicator and NcclCommunicator use it) orders the communication
// stream after the compute stream (order_after: cudaEventRecord + cudaStreamWaitEvent) and
// queues the reduction kernel NcclTransport runs there (cuda::reduce), which reads the
// gradient. Built three ways (tests/sim_tsan/CMakeLists.txt):
//   sim_comm_handshake_tsan               the real order_after: TSan silent, the sums right;
//   sim_planted_missing_stream_wait_tsan  stream_work.cpp compiled with
//                                         ENGINE_PLANTED_MISSING_STREAM_WAIT (no wait): TSan
//                                         must report the race in the reduction kernel;
//   sim_planted_missing_stream_wait_blind the same without TSan: the check must reject it.
// A gate makes the communication stream start after the gradient is written, in real time
// only (stream_kernels.h), so the planted race is reported the same way every run and the
// sums come out right either way: the exit status says whether they did.
#include "tests/sim_tsan/stream_kernels.h"
// After the prelude, and in this one translation unit: the reduction kernels.
#include "collectives/cuda/reduce.cuh"

#include <cstdio>

#include "collectives/execution/stream_work.h"
#include "collectives/execution/watchdog.h"
#include "kernels/device.h"
#include "kernels/stream.h"
#include "tests/simt/planted_bug_cli.h"

int main(int argc, char** argv) {
  if (const int code = simt::planted_bug_cli(
          argc, argv, "a gradient reduced on the communication stream after queue_on_comm_stream");
      code >= 0)
    return code;
  constexpr int n = 1000;
  const engine::Device device = engine::Device::cuda(0);
  engine::Stream compute(device), comm(device);
  float *gradient = nullptr, *peer = nullptr, *sum = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&gradient), n * sizeof(float)) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&peer), n * sizeof(float)) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&sum), n * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "sim device allocation failed\n");
    return 1;
  }
  for (int i = 0; i < n; ++i)
    peer[i] = 1000.f;  // "the other rank's gradient", written by the host before any launch
  int wrong = 0;
  {
    sim_tsan::Gate gate;
    gate.hold(comm.native());
    engine::cuda::launch(sim_tsan::write_ramp_kernel, sim_tsan::blocks_for(n),
                         dim3(sim_tsan::kThreads), 0, compute.native(), gradient, 0.f, n);
    gate.open_after(compute.native());
    engine::Watchdog watchdog;
    engine::OpContext context;
    context.op = "all_reduce";
    context.impl = "sim-tsan";
    context.bytes = n * sizeof(float);
    engine::Work work = engine::queue_on_comm_stream(
        comm, compute, context, watchdog, /*blocking=*/false, /*host_wait=*/false,
        [&] { engine::cuda::reduce(engine::Reduction{}, sum, gradient, peer, n, comm.native()); });
    work.wait();  // polls the completion event on the host
    compute.synchronize();
    for (int i = 0; i < n; ++i)
      wrong += sum[i] != 1000.f + static_cast<float>(i);
  }
  std::printf("%d of %d sums wrong\n", wrong, n);
  cudaFree(gradient);
  cudaFree(peer);
  cudaFree(sum);
  return wrong == 0 ? 0 : 1;
}
