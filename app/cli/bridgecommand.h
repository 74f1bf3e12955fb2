// SPDX-License-Identifier: MIT
#pragma once

#include "runcommands.h"

namespace rankscope::cli {

// Serves the engine to editors and notebooks (docs/bridge.md) until Ctrl-C or SIGTERM. port 0: any free port.
// The runs it launched go on after it stops (it detaches from them): `rankscope-cli attach` follows them again.
[[nodiscard]] int runBridgeCommand(quint16 port, const ConnectionFlags& flags);

} // namespace rankscope::cli
