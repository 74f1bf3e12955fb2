// SPDX-License-Identifier: MIT
#include "checkcommand.h"

#include "cli.h"

#include <QTextStream>

namespace rankscope::cli {

int runCheckCommand(const QString& /*jobPath*/, bool /*json*/, const ConnectionFlags& /*flags*/) {
    QTextStream(stderr) << "rankscope-cli check: not available yet\n";
    return kExitUsage;
}

} // namespace rankscope::cli
