// nn_data_parallel_test's main: every case on every rank (tests/collectives/mpi_main.h), on the
// communicator named by --comm=NAME (default ring-shm; the TCP-only case passes ring-mpi).
#include "ddp_cases.h"

namespace {
class ReleaseCommunicator : public ::testing::Environment {
 public:
  void TearDown() override { engine::testing::ddp_comm_slot().reset(); }
};
}  // namespace

int main(int argc, char** argv) {
  engine::testing::take_comm_flag(argc, argv, engine::testing::ddp_comm_name());
  ::testing::AddGlobalTestEnvironment(new ReleaseCommunicator);
  return engine::testing::run_all_tests_on_every_rank(argc, argv);
}
