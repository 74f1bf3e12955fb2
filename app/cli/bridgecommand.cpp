// SPDX-License-Identifier: MIT
#include "bridgecommand.h"

#include "cli.h"

#include "plugins/bridge/bridgeserver.h"

#include <QCoreApplication>

#include <cstdio>

namespace rankscope::cli {

int runBridgeCommand(quint16 port, const ConnectionFlags& flags) {
    RunStore store;
    bridge::BridgeOptions options;
    options.port = port;
    options.server = QStringLiteral("rankscope-cli");
    options.engine.knownHostsPath = flags.knownHosts;
    options.engine.sshConfigPath = flags.sshConfig;
    options.engine.acceptNewHostKeys = flags.acceptNewHostKeys;
    // No terminal to ask on: a key needs ssh-agent or no passphrase, and a host must be known (or accepted by
    // --accept-new-host-keys). A launch that needs more fails with the host named.
    bridge::BridgeServer server(&store, options);
    QString error;
    if (!server.listen(&error)) {
        std::fprintf(stderr, "rankscope-cli bridge: %s\n", qPrintable(error));
        return kExitUsage;
    }
    std::printf("bridge listening on %s (connection file %s)\n", qPrintable(server.url()),
                qPrintable(server.connectionFile()));
    std::fflush(stdout);
    QObject::connect(&server, &bridge::BridgeServer::clientCountChanged, [](int clients) {
        std::fprintf(stderr, "bridge: %d client(s)\n", clients);
    });
    installInterruptHandler([](int) { QCoreApplication::quit(); });
    QCoreApplication::exec();
    server.close();
    std::printf("bridge stopped\n");
    return kExitOk;
}

} // namespace rankscope::cli
