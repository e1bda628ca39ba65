// nn_data_parallel_test's main: every case on every rank (tests/collectives/mpi_main.h), on the
// communicator named by --comm=NAME (default ring-shm; the TCP-only case passes ring-mpi).
#include <cstring>
#include <string>

#include "ddp_cases.h"

namespace {
class ReleaseCommunicator : public ::testing::Environment {
 public:
  void TearDown() override { engine::testing::ddp_comm_slot().reset(); }
};
}  // namespace

int main(int argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--comm=", 7) == 0) {
      engine::testing::ddp_comm_name() = argv[i] + 7;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  ::testing::AddGlobalTestEnvironment(new ReleaseCommunicator);
  return engine::testing::run_all_tests_on_every_rank(argc, argv);
}
