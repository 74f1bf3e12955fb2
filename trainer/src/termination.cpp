// SPDX-License-Identifier: MIT
#include "termination.h"

#include <csignal>
#include <cstdio>
#include <pthread.h>
#include <thread>

namespace rankscope::trainer {

void handleTerminationSignals(std::function<int(int)> onSignal) {
    // A write to a peer that died (Gloo's sockets, the rendezvous store) fails with EPIPE, which the collective
    // reports as its error; by default SIGPIPE would end the rank at once, saying nothing. Python, under which
    // PyTorch ranks usually run, ignores it the same way.
    std::signal(SIGPIPE, SIG_IGN);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    // Threads created after this inherit the mask, so only the waiter below ever receives these signals.
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::thread([signals, onSignal = std::move(onSignal)] {
        int signal = 0;
        if (sigwait(&signals, &signal) != 0)
            return;
        const int status = onSignal(signal);
        std::fflush(stdout);
        std::fflush(stderr);
        std::_Exit(status);
    }).detach();
}

} // namespace rankscope::trainer
