// The main of the distributed suites: MPI bootstrap, then GoogleTest on every rank. Rank 0
// prints the usual report; the other ranks print only their failures, prefixed by rank, so
// a mismatch on any rank is visible. Every rank exits with the worst status of all ranks.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "collectives/bootstrap.h"

namespace engine::testing {

// The session of this process; valid while the tests run.
inline MpiSession*& session() {
  static MpiSession* current = nullptr;
  return current;
}

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
    }
  }

 private:
  int rank_;
};

// Takes --comm=NAME out of the arguments (GoogleTest would reject it) into `name`: the suites
// that run on a communicator of the command line's choosing.
inline void take_comm_flag(int& argc, char** argv, std::string& name) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--comm=", 7) == 0) {
      name = argv[i] + 7;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
}

inline int run_all_tests_on_every_rank(int argc, char** argv) {
  MpiSession mpi(&argc, &argv);
  session() = &mpi;
  ::testing::InitGoogleTest(&argc, argv);
  if (mpi.rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(mpi.rank()));
  }
  int status = RUN_ALL_TESTS();
  int worst = status;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, mpi.comm());
  session() = nullptr;
  return worst;
}

}  // namespace engine::testing
