// What the launcher told this process through its environment, read before MPI_Init.
//
// srun starts Open MPI programs directly only through a PMIx server of its own (`srun
// --mpi=pmix`, or MpiDefault=pmix in slurm.conf). Started with PMI-2 (`--mpi=pmi2`) or none
// (Debian's MpiDefault=none), Open MPI 4.1 aborts inside MPI_Init with a page about
// rebuilding it; srun_without_pmix() turns that case into one line first.
#pragma once

#include <optional>
#include <string>

namespace engine {

// This process's rank as its launcher numbered it (Open MPI's, PMIx's, then SLURM's
// SLURM_PROCID), or none outside a launcher. Usable before MPI_Init. (Local ranks need no
// such reading: MpiSession takes them from MPI over the ranks of each host, which under srun
// is SLURM's SLURM_LOCALID.)
std::optional<int> launcher_rank();

// When srun started this process without a PMIx server (SLURM_STEP_ID set, no PMIx rank):
// one line saying so and what to pass instead; empty otherwise. The batch script itself
// (no step) and mpirun's ranks inside an allocation have what they need.
std::string srun_without_pmix();

}  // namespace engine
