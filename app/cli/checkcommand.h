// SPDX-License-Identifier: MIT
#pragma once

#include "runcommands.h"

namespace rankscope::cli {

[[nodiscard]] int runCheckCommand(const QString& jobPath, bool json, const ConnectionFlags& flags);

} // namespace rankscope::cli
