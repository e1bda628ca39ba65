// The main of a benchmark that runs under mpirun (bench_allreduce, bench_syncbn, bench_ddp).
//
// The MPI session outlives run_cli: after a usage error every rank waits at a barrier until
// rank 0 has printed the usage, or mpirun could kill rank 0 first when another rank exits
// non-zero. Every rank parses the same argv, so a usage error ends them all alike; a failure
// while running aborts the job, since a peer may be waiting in a collective.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "collectives/bootstrap.h"
#include "collectives/comm_factory.h"
#include "collectives/core/timeout.h"
#include "train/cli_command.h"

namespace engine::bench {

// Host figures shared between ranks through MPI itself, whatever the benchmarked
// communicator is (NCCL's take no host tensors).
inline double max_over_ranks(const MpiSession& session, double value) {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, session.comm());
  return value;
}
inline double broadcast_from_rank0(const MpiSession& session, double value) {
  MPI_Bcast(&value, 1, MPI_DOUBLE, 0, session.comm());
  return value;
}

// The benchmarked communicator `name` (a collective a hung peer ends after 2 minutes), or a
// UsageError naming --comm when it cannot take `device`'s tensors.
inline std::unique_ptr<Communicator> make_bench_communicator(const MpiSession& session,
                                                             const std::string& name,
                                                             Device device) {
  CommOptions options;
  options.timeout = std::chrono::seconds(120);
  std::unique_ptr<Communicator> comm = make_communicator(name, session, options, device.str());
  if (!comm->supports(device)) {
    throw cli::UsageError("--comm " + name + " cannot all-reduce " + device.str() +
                          " tensors (cpu: ring-shm, ring-mpi, mpi; cuda: nccl, ring-nccl)");
  }
  return comm;
}

// make(options) registers the flags; under run_cli and MPI, the parse, check(options)
// (UsageError for values that cannot run) and run(session, options).
template <typename Options, typename Make, typename Check, typename Run>
int run_mpi_bench(int argc, char** argv, Make&& make, Check&& check, Run&& run) {
  Options options;
  cli::Command command = make(options);
  std::optional<MpiSession> session;
  const std::string program = command.program();
  const int exit_code = cli::run_cli(command, [&] {
    session.emplace(&argc, &argv);
    command.parse(argc, argv);
    check(options);
    try {
      run(*session, options);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
      abort_job(program + " failed", 1);
    }
    return 0;
  });
  if (session) MPI_Barrier(session->comm());
  return exit_code;
}

}  // namespace engine::bench
