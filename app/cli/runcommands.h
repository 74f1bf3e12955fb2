// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"

#include <QString>

#include <functional>
#include <optional>

namespace rankscope::cli {

// How to reach nodes, from the command line.
struct ConnectionFlags {
    QString knownHosts;
    QString sshConfig;
    bool acceptNewHostKeys = false;
};

// JOB as a command runs it: loaded and validated (every issue printed with its JSON path), in the mode that
// --mode names or else the job's own. Nothing, with *exitCode set, when it cannot run.
struct CommandJob {
    JobSpec job;
    RunMode mode = RunMode::Submit;
};
[[nodiscard]] std::optional<CommandJob> loadCommandJob(const QString& command, const QString& jobPath,
                                                       const QString& mode, int* exitCode);

// Asks on the terminal (/dev/tty) with echo off: a key's passphrase or a password, never read from the
// environment or a file, never stored. Nothing when there is no terminal.
[[nodiscard]] std::optional<QString> askSecret(const QString& prompt);
// Ctrl-C and SIGTERM reach the event loop as a queued call (a self-pipe): nothing else is safe in a handler.
// `onInterrupt` is given the signal (SIGINT or SIGTERM).
void installInterruptHandler(const std::function<void(int)>& onInterrupt);

// `debugRank`: start that rank under gdbserver and print its address and a gdb command line once it waits.
[[nodiscard]] int runRunCommand(const QString& jobPath, const QString& mode, bool detach, const ConnectionFlags& flags,
                                std::optional<int> debugRank = std::nullopt);
[[nodiscard]] int runAttachCommand(const QString& run, const ConnectionFlags& flags);
[[nodiscard]] int runStopCommand(const QString& run, const ConnectionFlags& flags);
[[nodiscard]] int runRunsCommand(bool json);
// `diagnose RUN [--json]`: the diagnosis of a stored run (root cause, hangs, stragglers, divergence).
[[nodiscard]] int runDiagnoseCommand(const QString& run, bool json);
// `stacks RUN [--json]`: attaches to a running run only to take every rank's native stacks, prints the
// merged tree (also saved in the run store) and detaches; the run goes on.
[[nodiscard]] int runStacksCommand(const QString& run, bool json, const ConnectionFlags& flags);
[[nodiscard]] int runLogsCommand(const QString& run, std::optional<int> rank, const QString& stream, bool follow,
                                 const ConnectionFlags& flags);

} // namespace rankscope::cli
