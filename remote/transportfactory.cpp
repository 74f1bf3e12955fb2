// SPDX-License-Identifier: MIT
#include "remote/transportfactory.h"

#include "remote/localtransport.h"
#include "remote/sshtransport.h"

namespace rankscope::remote {

std::unique_ptr<Transport> makeTransport(const NodeSpec& node, bool local, const ConnectionOptions& options) {
    if (local)
        return std::make_unique<LocalTransport>();
    SshOptions ssh;
    ssh.host = node.host;
    ssh.port = node.port;
    ssh.user = node.user;
    ssh.identityFile = node.identityFile;
    ssh.knownHostsPath = options.knownHostsPath;
    ssh.sshConfigPath = options.sshConfigPath;
    ssh.acceptUnknownHost = options.acceptNewHostKeys;
    ssh.confirmUnknownHost = options.confirmUnknownHost;
    ssh.passphrase = options.passphrase;
    ssh.password = options.password;
    ssh.connectTimeout = options.connectTimeout;
    return std::make_unique<SshTransport>(ssh);
}

} // namespace rankscope::remote
