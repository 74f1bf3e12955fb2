// SPDX-License-Identifier: MIT
#pragma once

#include <functional>

namespace rankscope::trainer {

// SIGTERM and SIGINT are blocked in every thread and taken by one thread with sigwait, so that a rank
// told to stop (by its launcher, by RankScope's teardown, by Ctrl-C) reports it even while the training
// thread is blocked inside a collective. `onSignal(signal)` runs on that thread and returns the status the process
// then exits with (128 + signal, as a shell reports a signal death, unless the rank had already said its end).
// SIGPIPE is ignored: a write to a peer that died is an error the rank reports, not a silent death. Call before any
// other thread starts.
void handleTerminationSignals(std::function<int(int)> onSignal);

} // namespace rankscope::trainer
