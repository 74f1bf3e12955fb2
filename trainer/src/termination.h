// SPDX-License-Identifier: MIT
#pragma once

#include <functional>

namespace rankscope::trainer {

// SIGTERM and SIGINT are blocked in every thread and taken by one thread with sigwait, so that a rank
// told to stop (by its launcher, by RankScope's teardown, by Ctrl-C) reports it even while the training
// thread is blocked inside a collective. `onSignal(signal)` runs on that thread; the process then exits
// with 128 + signal, as a shell reports a signal death. SIGPIPE is ignored: a write to a peer that died is an error
// the rank reports, not a silent death. Call before any other thread starts.
void handleTerminationSignals(std::function<void(int)> onSignal);

} // namespace rankscope::trainer
