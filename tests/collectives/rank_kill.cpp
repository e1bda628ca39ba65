// The failure drill: under mpirun, one rank dies (SIGKILL from a thread, so the main thread
// is in the middle of an all-reduce) or stays alive but stops calling collectives. The
// other ranks must not hang: within the communicator's timeout each prints which
// collective timed out, its own rank and the peer that never answered, and the job ends.
// ctest checks that message (PASS_REGULAR_EXPRESSION) and a TIMEOUT far above the
// communicator's.
//
//   mpirun --enable-recovery -np 3 collectives_rank_kill <impl> kill
//   mpirun -np 3 collectives_rank_kill <impl> silent
//
// --enable-recovery keeps mpirun from killing the survivors the moment the victim dies, so
// they reach their own timeout (without it mpirun ends the job itself, which is also no hang).
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/comm_factory.h"

int main(int argc, char** argv) {
  using namespace engine;
  MpiSession session(&argc, &argv);
  const std::string impl = argc > 1 ? argv[1] : "ring-shm";
  const std::string mode = argc > 2 ? argv[2] : "kill";
  constexpr int kVictim = 1;
  try {
    if (session.size() < 2) {
      std::fprintf(stderr, "rank_kill needs at least 2 ranks\n");
      return 2;
    }
    CommOptions options;
    options.timeout = std::chrono::seconds(3);
    auto comm = make_communicator(impl, session, options);
    Stream stream;
    Tensor data = Tensor::from_floats({4 << 20}, std::vector<float>(4 << 20, 1.f));
    comm->all_reduce(data, ReduceOp::sum, stream);  // everyone is alive and connected
    if (session.rank() == kVictim) {
      if (mode == "silent") {
        std::this_thread::sleep_for(std::chrono::seconds(30));  // alive, but never answers
        return 0;
      }
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        std::raise(SIGKILL);
      }).detach();
    }
    for (int i = 0; i < 100000; ++i)
      comm->all_reduce(data, ReduceOp::sum, stream);
    std::fprintf(stderr, "[rank %d] the collectives finished although rank %d died\n",
                 session.rank(), kVictim);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] unexpected error: %s\n", session.rank(), e.what());
    return 1;
  }
}
