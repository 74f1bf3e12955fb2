// SPDX-License-Identifier: MIT
#pragma once

#include <QStringList>

namespace rankscope::cli {

// Exit codes of rankscope-cli.
enum ExitCode : int {
    kExitOk = 0,
    kExitDecodeErrors = 1, // the command ran, but some event lines could not be decoded
    kExitUsage = 2,        // bad arguments, or a file that cannot be read
};

// Parses the command line (arguments[0] is the program) and runs the command; returns the exit code.
[[nodiscard]] int run(const QStringList& arguments);

} // namespace rankscope::cli
