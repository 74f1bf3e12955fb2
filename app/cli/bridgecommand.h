// SPDX-License-Identifier: MIT
#pragma once

#include "runcommands.h"

namespace rankscope::cli {

// Serves the engine to editors and notebooks (docs/bridge.md) until Ctrl-C or SIGTERM. port 0: any free port.
// Runs it launched in submit mode go on after it stops; debug runs are stopped with it.
[[nodiscard]] int runBridgeCommand(quint16 port, const ConnectionFlags& flags);

} // namespace rankscope::cli
