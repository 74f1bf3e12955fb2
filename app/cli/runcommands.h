// SPDX-License-Identifier: MIT
#pragma once

#include <QString>

#include <optional>

namespace rankscope::cli {

// How to reach nodes, from the command line.
struct ConnectionFlags {
    QString knownHosts;
    QString sshConfig;
    bool acceptNewHostKeys = false;
};

[[nodiscard]] int runRunCommand(const QString& jobPath, const QString& mode, bool detach, const ConnectionFlags& flags);
[[nodiscard]] int runAttachCommand(const QString& run, const ConnectionFlags& flags);
[[nodiscard]] int runStopCommand(const QString& run, const ConnectionFlags& flags);
[[nodiscard]] int runRunsCommand(bool json);
[[nodiscard]] int runLogsCommand(const QString& run, std::optional<int> rank, const QString& stream, bool follow,
                                 const ConnectionFlags& flags);

} // namespace rankscope::cli
