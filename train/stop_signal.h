// SIGINT and SIGTERM end a run cleanly: the first one only sets a flag, which the training
// loop reads at every step (and the ranks agree on, so all stop at the same step, whichever
// rank got the signal); a second signal ends the process at once, as a user pressing Ctrl-C
// twice expects.
#pragma once

#include <string>

namespace engine::train {

void install_stop_handlers();
// The signal that asked this process to stop, 0 while none has.
int stop_signal();
// "SIGTERM", "SIGINT", or "signal N".
std::string signal_name(int signal_number);

}  // namespace engine::train
