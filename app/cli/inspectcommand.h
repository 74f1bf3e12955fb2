// SPDX-License-Identifier: MIT
#pragma once

#include <QString>
#include <QStringList>

namespace rankscope {
struct LogInspection;
}

namespace rankscope::cli {

// The readable report of `rankscope-cli inspect`: sections NCCL, timeouts, failures, GPUs, errors.
[[nodiscard]] QString formatInspectionText(const LogInspection& inspection);

// `rankscope-cli inspect FILE... [--json]`; returns the exit code (2 when a file cannot be read).
[[nodiscard]] int runInspectCommand(const QStringList& paths, bool json);

} // namespace rankscope::cli
