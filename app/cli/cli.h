// SPDX-License-Identifier: MIT
#pragma once

#include <QStringList>

namespace rankscope::cli {

// Exit codes of rankscope-cli.
enum ExitCode : int {
    kExitOk = 0,
    kExitDecodeErrors = 1, // the command ran, but some event lines could not be decoded
    kExitUsage = 2,        // bad arguments, or a file that cannot be read
    kExitRunFailed = 1,    // run/attach: a rank failed (the first failing rank, host and status are named), or
                           // the run was stopped
    kExitInvalidJob = 3,   // the job file has mistakes; each is printed with its JSON path
    kExitLaunchFailed = 4, // a node could not be reached or prepared; the host and the cause are printed
};

// Parses the command line (arguments[0] is the program) and runs the command; returns the exit code.
[[nodiscard]] int run(const QStringList& arguments);

} // namespace rankscope::cli
