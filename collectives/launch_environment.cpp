#include "collectives/launch_environment.h"

#include <cstdlib>
#include <initializer_list>
#include <string_view>

namespace engine {
namespace {

// The first of `names` that is set to a whole non-negative number.
std::optional<int> first_number(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') continue;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end == '\0' && value >= 0 && value <= 1 << 30) return static_cast<int>(value);
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> launcher_rank() {
  return first_number({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"});
}

std::string srun_without_pmix() {
  if (std::getenv("SLURM_STEP_ID") == nullptr) return "";
  // Open MPI's own launcher (mpirun inside an allocation) and srun's PMIx plugin both set
  // PMIX_RANK; srun's PMI-2 sets PMI_RANK instead.
  if (std::getenv("PMIX_RANK") != nullptr || std::getenv("OMPI_COMM_WORLD_RANK") != nullptr)
    return "";
  const char* type = std::getenv("SLURM_MPI_TYPE");
  const std::string given =
      type != nullptr && std::string_view(type) != "none"
          ? std::string("with --mpi=") + type
          : std::string("with no PMI (srun's --mpi, or slurm.conf's MpiDefault, is none)");
  return "srun started this process " + given +
         ", but Open MPI needs PMIx to start: pass --mpi=pmix to srun, or set MpiDefault=pmix "
         "in slurm.conf (srun --mpi=list shows what this SLURM has)";
}

}  // namespace engine
