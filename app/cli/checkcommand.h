// SPDX-License-Identifier: MIT
#pragma once

#include "runcommands.h"

namespace rankscope::cli {

// The pre-flight of every node of a job in the job's own mode.
[[nodiscard]] int runCheckCommand(const QString& jobPath, bool json, const ConnectionFlags& flags);
// mode: "debug", "submit", or empty for the job's own. Exit 0 when no node fails (warnings allowed), 1 when one
// does, 2 for a bad --mode, 3 for an invalid job.
[[nodiscard]] int runCheckCommand(const QString& jobPath, const QString& mode, bool json, const ConnectionFlags& flags);

} // namespace rankscope::cli
