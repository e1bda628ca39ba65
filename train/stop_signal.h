// SIGINT, SIGTERM and SIGUSR1 end a run cleanly: the first one only sets a flag, which the
// training loop reads at every step (and the ranks agree on, so all stop at the same step,
// whichever rank got the signal), then last is saved; a second signal from the same sender
// ends the process at once, as a user pressing Ctrl-C twice expects (the same request
// relayed by another process, as launchers do, is not a second one). SIGUSR1 is the preemption
// notice a scheduler sends ahead of the end (SLURM's `sbatch --signal=USR1@120`); SIGTERM is what
// it sends at the end (scancel, preemption, the time limit), KillWait seconds before SIGKILL.
#pragma once

#include <string>

namespace engine::train {

void install_stop_handlers();
// The signal that asked this process to stop, 0 while none has.
int stop_signal();
// "SIGTERM", "SIGINT", "SIGUSR1", or "signal N".
std::string signal_name(int signal_number);

}  // namespace engine::train
