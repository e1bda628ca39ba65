// Making sure the launcher ends a job that a rank aborts. MPI_Abort asks the launcher to kill
// every rank, but across hosts it can hang doing so: a daemon behind a cut link or on a
// stalled host never confirms, and Open MPI 4.1's mpirun then waits on (seen: still there
// 150 s later, the other host's daemon left behind). So an aborting rank first leaves a guard
// process behind: if the rank's own launcher daemon (its parent: mpirun on the first host,
// orted on the others) is still there `grace` later, the guard ends it with SIGKILL (a
// SIGTERM would make Open MPI 4.1.4's aborting mpirun crash in PMIx_Finalize and print the
// trace) and removes mpirun's session folder, which only mpirun's own exit would have.
// Every host's ranks time out when a peer is lost, so each host's daemon is guarded by its
// own ranks, whichever side failed.
#pragma once

#include <chrono>

namespace engine {

// Forks the guard, when this process was started by an Open MPI launcher (a no-op otherwise:
// a plain process, srun, which ends a step on its own, or any other parent). The guard keeps
// no descriptor of this process (so it delays no end of output or connection) and lives at
// most grace + 2 s.
void guard_launcher_exit(std::chrono::milliseconds grace);

// How long a healthy launcher takes at most to end a job after MPI_Abort, for the guard.
constexpr std::chrono::milliseconds kLauncherExitGrace{5000};

}  // namespace engine
