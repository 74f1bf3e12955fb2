// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QString>

#include <chrono>
#include <optional>
#include <stdexcept>

namespace rankscope::remote {

// Why a node could not be reached or used. The kinds are what a user acts on: a DNS typo is fixed in the
// job file, a changed host key is a security question, a lost link is waited out.
enum class TransportErrorKind {
    Dns,            // the host name does not resolve
    Refused,        // nothing listens on the SSH port
    Unreachable,    // no route, or the connection attempt timed out
    HostKeyUnknown, // not in known_hosts and not accepted
    HostKeyChanged, // known_hosts has a different key: refused, both fingerprints shown
    Auth,           // no method was accepted
    LinkLost,       // an established session died (keepalive, user timeout, EOF)
    Timeout,        // a command or transfer took longer than allowed
    Io,             // a file could not be read or written
    Protocol,       // anything else libssh reports
    Abandoned,      // a command that only reads was given up: the run is being left (see CommandEffect)
};

[[nodiscard]] QString transportErrorKindName(TransportErrorKind kind);

class TransportError final : public std::runtime_error {
public:
    TransportError(TransportErrorKind kind, const QString& host, const QString& message);

    [[nodiscard]] TransportErrorKind kind() const { return m_kind; }
    [[nodiscard]] const QString& host() const { return m_host; }
    [[nodiscard]] const QString& message() const { return m_message; }

private:
    TransportErrorKind m_kind;
    QString m_host;
    QString m_message;
};

// What a command does to the node, which decides whether leaving a run waits for it.
enum class CommandEffect {
    Changes,   // a launch, a stop: runs to its end, or a rank could be left behind
    ReadsOnly, // a stack capture, the kernel log: given up (TransportErrorKind::Abandoned) when its thread is asked
               // to stop (QThread::requestInterruption), so that leaving a run never waits for a debugger
};

struct ExecResult {
    int exitStatus = -1;
    QByteArray out; // stdout of the command alone: anything the login shell printed before it is removed
    QByteArray err;
};

// One node as the engine sees it: run a shell command, move files, read a growing file from an offset.
// Every call blocks, so a Transport lives on a worker thread (see NodeWorker). Failures throw
// TransportError naming the host. Relative paths are relative to the login home directory.
class Transport {
public:
    virtual ~Transport() = default;

    [[nodiscard]] virtual QString host() const = 0;
    [[nodiscard]] virtual bool isLocal() const = 0;
    virtual void connect() = 0;
    virtual void disconnect() = 0;
    [[nodiscard]] virtual bool isConnected() const = 0;

    // Runs `command` with the node's login shell (`$SHELL -c`), stdin fed from `input` then closed.
    virtual ExecResult exec(const QString& command, const QByteArray& input = {},
                            std::chrono::milliseconds timeout = std::chrono::seconds(60),
                            CommandEffect effect = CommandEffect::Changes) = 0;
    // Writes through a temporary name and renames, so a reader never sees half a file.
    virtual void writeFile(const QString& path, const QByteArray& data, int mode = 0644) = 0;
    virtual void uploadFile(const QString& localPath, const QString& remotePath, int mode = 0644) = 0;
    // Up to maxBytes from offset; empty when there is nothing new or the file does not exist yet.
    virtual QByteArray readFrom(const QString& path, qint64 offset, qint64 maxBytes) = 0;
    virtual std::optional<QByteArray> readWhole(const QString& path) = 0;
    // The size of a file, or nothing when it does not exist.
    virtual std::optional<qint64> fileSize(const QString& path) = 0;
    virtual void makeDirectories(const QString& path) = 0;
    [[nodiscard]] virtual QString homeDirectory() = 0;
};

// Whether a command of this effect, running on the calling thread, is to be given up now: it only reads, and the
// run is being left (the thread was asked to stop).
[[nodiscard]] bool leaving(CommandEffect effect);
// What a command given up for that says.
[[nodiscard]] QString abandonedMessage();

// The marker that separates a noisy login shell's output from the command's own.
[[nodiscard]] QString wrapForNoisyShell(const QString& command, const QByteArray& marker);
[[nodiscard]] QByteArray stripBeforeMarker(const QByteArray& output, const QByteArray& marker);

} // namespace rankscope::remote
