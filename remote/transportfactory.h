// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"
#include "remote/transport.h"

#include <QString>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

namespace rankscope::remote {

// What every node's session of one job shares: where host keys are trusted, the ssh config, and how secrets
// are asked for. The run engine and the pre-flight check reach nodes the same way through it.
struct ConnectionOptions {
    QString knownHostsPath; // empty: ~/.ssh/known_hosts
    QString sshConfigPath;  // empty: ~/.ssh/config; "none" reads no config
    bool acceptNewHostKeys = false;
    std::function<bool(const QString& host, const QString& fingerprint)> confirmUnknownHost;
    std::function<std::optional<QString>(const QString& prompt)> passphrase;
    std::function<std::optional<QString>(const QString& prompt)> password;
    std::chrono::seconds connectTimeout{10};
};

// The transport for one node of a job: LocalTransport for the local debug node, else SSH with the node's
// host, port, user and identity file over the shared options. Nothing connects yet.
[[nodiscard]] std::unique_ptr<Transport> makeTransport(const NodeSpec& node, bool local,
                                                       const ConnectionOptions& options);

} // namespace rankscope::remote
