// SPDX-License-Identifier: MIT
#pragma once

#include "remote/transport.h"

#include <QHash>
#include <QString>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

struct ssh_session_struct; // libssh's session: ssh_session is a pointer to it

namespace rankscope::remote {

// How to reach one node. Empty fields come from ~/.ssh/config (Host aliases work), then libssh's defaults.
struct SshOptions {
    QString host;
    int port = 0;
    QString user;
    QString identityFile;
    QString knownHostsPath; // empty: ~/.ssh/known_hosts
    QString sshConfigPath;  // empty: ~/.ssh/config; "none" reads no config
    // Trust on first use: an unknown host is refused unless one of these accepts it; the key is then
    // added to knownHostsPath. A changed key is always refused.
    bool acceptUnknownHost = false;
    std::function<bool(const QString& host, const QString& fingerprint)> confirmUnknownHost;
    // Secrets are asked for when needed and never stored: the returned text is wiped after use.
    std::function<std::optional<QString>(const QString& prompt)> passphrase;
    std::function<std::optional<QString>(const QString& prompt)> password;
    std::chrono::seconds connectTimeout{10};
    // A silent peer is declared dead after about this long (TCP keepalive plus TCP_USER_TIMEOUT;
    // libssh's own keepalive only sends, it never notices a missing answer).
    std::chrono::seconds deadLinkAfter{8};
};

// A Transport over one libssh session: commands on exec channels, files over SFTP.
class SshTransport final : public Transport {
public:
    explicit SshTransport(SshOptions options);
    ~SshTransport() override;
    SshTransport(const SshTransport&) = delete;
    SshTransport& operator=(const SshTransport&) = delete;

    [[nodiscard]] QString host() const override { return m_options.host; }
    [[nodiscard]] bool isLocal() const override { return false; }
    void connect() override;
    void disconnect() override;
    [[nodiscard]] bool isConnected() const override;

    ExecResult exec(const QString& command, const QByteArray& input = {},
                    std::chrono::milliseconds timeout = std::chrono::seconds(60),
                    CommandEffect effect = CommandEffect::Changes) override;
    void writeFile(const QString& path, const QByteArray& data, int mode = 0644) override;
    void uploadFile(const QString& localPath, const QString& remotePath, int mode = 0644) override;
    QByteArray readFrom(const QString& path, qint64 offset, qint64 maxBytes) override;
    std::optional<QByteArray> readWhole(const QString& path) override;
    std::optional<qint64> fileSize(const QString& path) override;
    void makeDirectories(const QString& path) override;
    [[nodiscard]] QString homeDirectory() override;

    // The libssh session, null before connect(): for channels of other kinds (PortForwarder's direct-tcpip),
    // opened on the thread that uses this transport, since a libssh session is not thread-safe.
    [[nodiscard]] ssh_session_struct* session() const;

    // The SHA256 fingerprint of the server's key, as `ssh-keygen -l` prints it; empty before connect().
    [[nodiscard]] QString serverFingerprint() const { return m_serverFingerprint; }

    // What the host of `options` names after ~/.ssh/config: an alias's HostName, else the host itself.
    // Other nodes rendezvous with this name, and they cannot read this machine's ssh config.
    [[nodiscard]] static QString resolveHostName(const SshOptions& options);

    // SFTP writes never exceed this: OpenSSH's sftp-server rejects larger requests.
    static constexpr qint64 kSftpChunkBytes = 128 * 1024;

private:
    struct Impl;
    void verifyHostKey();
    void authenticate();
    void tuneSocket();
    [[noreturn]] void fail(TransportErrorKind kind, const QString& what) const;
    [[noreturn]] void failFromSession(const QString& what) const;
    void* sftp();
    void writeChunks(const QString& path, int mode, const std::function<qint64(char*, qint64)>& source);

    SshOptions m_options;
    std::unique_ptr<Impl> m_impl;
    QString m_serverFingerprint;
};

} // namespace rankscope::remote
