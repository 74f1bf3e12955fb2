// SPDX-License-Identifier: MIT
#include "remote/portforwarder.h"

#include "remote/sshtransport.h"

#include <QDir>
#include <QFileInfo>
#include <QSaveFile>
#include <QScopeGuard>

#include <libssh/libssh.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace rankscope::remote {

namespace {

bool sendAll(int socket, const char* data, qsizetype size) {
    while (size > 0) {
        const ssize_t n = ::send(socket, data, static_cast<size_t>(size), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        data += n;
        size -= n;
    }
    return true;
}

bool writeAll(ssh_channel channel, const char* data, qsizetype size) {
    while (size > 0) {
        const int n = ssh_channel_write(channel, data, static_cast<uint32_t>(std::min<qsizetype>(size, 32768)));
        if (n <= 0)
            return false;
        data += n;
        size -= n;
    }
    return true;
}

// A listening socket on 127.0.0.1 and a port the kernel picked; -1 when there is none.
int listenOnLoopback(int* port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 8) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        ::close(fd);
        return -1;
    }
    *port = ntohs(address.sin_port);
    return fd;
}

} // namespace

PortForwarder::PortForwarder(std::unique_ptr<Transport> transport)
    : m_transport(std::move(transport)), m_wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

PortForwarder::~PortForwarder() {
    if (m_wake >= 0)
        ::close(m_wake);
}

void PortForwarder::setTargetPort(int port) {
    m_targetPort = port;
    const uint64_t one = 1;
    if (m_wake >= 0) {
        [[maybe_unused]] const auto written = ::write(m_wake, &one, sizeof one);
    }
}

void PortForwarder::requestStop() {
    m_stop = true;
    const uint64_t one = 1;
    if (m_wake >= 0) {
        [[maybe_unused]] const auto written = ::write(m_wake, &one, sizeof one);
    }
}

void PortForwarder::fetchFile(Transport& transport, const QString& remotePath, const QString& localPath,
                              const std::atomic<bool>& stop) {
    const std::optional<qint64> size = transport.fileSize(remotePath);
    if (!size)
        throw TransportError(TransportErrorKind::Io, transport.host(), QStringLiteral("no %1").arg(remotePath));
    QDir().mkpath(QFileInfo(localPath).absolutePath());
    QSaveFile out(localPath);
    if (!out.open(QIODevice::WriteOnly))
        throw TransportError(TransportErrorKind::Io, transport.host(),
                             QStringLiteral("cannot write %1: %2").arg(localPath, out.errorString()));
    qint64 offset = 0;
    while (offset < *size && !stop) {
        const QByteArray chunk = transport.readFrom(remotePath, offset, 4 << 20);
        if (chunk.isEmpty())
            break;
        if (out.write(chunk) != chunk.size())
            throw TransportError(TransportErrorKind::Io, transport.host(),
                                 QStringLiteral("cannot write %1: %2").arg(localPath, out.errorString()));
        offset += chunk.size();
    }
    if (stop)
        return; // not committed: nothing half-copied is left behind
    if (offset != *size)
        throw TransportError(TransportErrorKind::Io, transport.host(),
                             QStringLiteral("%1 ended after %2 of %3 bytes").arg(remotePath).arg(offset).arg(*size));
    if (!out.commit())
        throw TransportError(TransportErrorKind::Io, transport.host(),
                             QStringLiteral("cannot write %1: %2").arg(localPath, out.errorString()));
}

// gdbserver's end of the debugger session: a channel of the node's SSH session, or a TCP connection here.
struct PortForwarder::Upstream {
    ssh_session session = nullptr; // SSH: the forwarder's own session
    ssh_channel channel = nullptr;
    int socket = -1;

    [[nodiscard]] bool isOpen() const { return channel || socket >= 0; }
    [[nodiscard]] int pollFd() const { return channel ? ssh_get_fd(session) : socket; }
    // Bytes libssh already holds do not show on the session's socket: the poll must not wait then.
    [[nodiscard]] bool buffered() const { return channel && ssh_channel_poll(channel, 0) > 0; }
    // > 0: bytes; 0: nothing now; -1: the end (gdbserver closed); -2: broken
    qsizetype read(char* buffer, size_t size) const {
        if (channel) {
            const int n = ssh_channel_read_nonblocking(channel, buffer, static_cast<uint32_t>(size), 0);
            if (n == SSH_ERROR)
                return -2;
            return n > 0 ? n : (ssh_channel_is_eof(channel) || ssh_channel_is_closed(channel) ? -1 : 0);
        }
        const ssize_t n = ::recv(socket, buffer, size, MSG_DONTWAIT);
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -2;
        return n > 0 ? n : -1;
    }
    bool write(const char* data, qsizetype size) const {
        return channel ? writeAll(channel, data, size) : sendAll(socket, data, size);
    }
    void sendEof() const {
        if (channel)
            ssh_channel_send_eof(channel);
        else
            ::shutdown(socket, SHUT_WR);
    }
    void close() {
        if (channel) {
            ssh_channel_close(channel);
            ssh_channel_free(channel);
        }
        if (socket >= 0)
            ::close(socket);
        channel = nullptr;
        socket = -1;
    }
};

void PortForwarder::run(const QString& fetchRemote, const QString& fetchLocal) {
    int listener = -1;
    try {
        m_transport->connect();
        if (!fetchRemote.isEmpty() && !m_stop) {
            const qint64 size = m_transport->fileSize(fetchRemote).value_or(0);
            emit progress(QStringLiteral("copying the node's trainer (%1 MB) for its symbols to %2")
                              .arg(static_cast<double>(size) / 1e6, 0, 'f', 1)
                              .arg(fetchLocal));
            fetchFile(*m_transport, fetchRemote, fetchLocal, m_stop);
        }
        int port = 0;
        listener = listenOnLoopback(&port);
        if (listener < 0)
            throw TransportError(TransportErrorKind::Io, m_transport->host(),
                                 QStringLiteral("cannot listen on 127.0.0.1: %1").arg(qt_error_string(errno)));
        serve(listener, port);
    } catch (const TransportError& error) {
        if (!m_stop)
            emit failed(error.message());
    }
    if (listener >= 0)
        ::close(listener);
    m_transport->disconnect();
}

void PortForwarder::claim(Upstream& upstream, int port) {
    const QString where = (m_transport->isLocal() ? QStringLiteral("gdbserver at 127.0.0.1:%1")
                                                  : QStringLiteral("gdbserver at the node's 127.0.0.1:%1"))
                              .arg(port);
    const QString why = QStringLiteral(" (it takes one connection: did something else connect first?)");
    if (m_transport->isLocal()) {
        upstream.socket = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port = htons(static_cast<uint16_t>(port));
        if (upstream.socket < 0 ||
            ::connect(upstream.socket, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
            throw TransportError(TransportErrorKind::Refused, m_transport->host(),
                                 QStringLiteral("cannot connect to %1: %2%3").arg(where, qt_error_string(errno), why));
        return;
    }
    auto* ssh = dynamic_cast<SshTransport*>(m_transport.get());
    upstream.session = ssh ? ssh->session() : nullptr;
    upstream.channel = upstream.session ? ssh_channel_new(upstream.session) : nullptr;
    if (!upstream.channel || ssh_channel_open_forward(upstream.channel, "127.0.0.1", port, "127.0.0.1", 0) != SSH_OK)
        throw TransportError(TransportErrorKind::Refused, m_transport->host(),
                             QStringLiteral("cannot connect to %1: %2%3")
                                 .arg(where,
                                      upstream.session ? QString::fromUtf8(ssh_get_error(upstream.session))
                                                       : QStringLiteral("no SSH session"),
                                      why));
}

void PortForwarder::serve(int& listener, int localPort) {
    Upstream upstream;
    int client = -1;
    bool clientDone = false; // the debugger closed its side: EOF passed on to gdbserver
    bool serverDone = false; // gdbserver closed its side: the client's write side was shut
    bool over = false;       // the one session gdbserver serves has ended (or could not be piped)
    const auto closeAll = qScopeGuard([&] {
        upstream.close();
        if (client >= 0)
            ::close(client);
    });
    char buffer[65536];
    while (!m_stop) {
        if (!upstream.isOpen() && !over && m_targetPort > 0) {
            claim(upstream, m_targetPort);
            emit ready(localPort);
        }
        const bool piping = client >= 0 && !over;
        std::vector<pollfd> fds{{m_wake, POLLIN, 0},
                                {listener, POLLIN, 0},
                                {piping && !clientDone ? client : -1, POLLIN, 0},
                                {piping && !serverDone ? upstream.pollFd() : -1, POLLIN, 0}};
        if (::poll(fds.data(), fds.size(), piping && upstream.buffered() ? 0 : 500) < 0 && errno != EINTR)
            throw TransportError(TransportErrorKind::Io, m_transport->host(), QStringLiteral("poll failed"));
        if (fds[0].revents & POLLIN) {
            uint64_t count = 0;
            [[maybe_unused]] const auto n = ::read(m_wake, &count, sizeof count);
        }
        if (upstream.channel && (fds[3].revents & (POLLHUP | POLLERR)))
            throw TransportError(TransportErrorKind::LinkLost, m_transport->host(),
                                 QStringLiteral("the forwarding session's connection broke"));
        if (listener >= 0 && (fds[1].revents & POLLIN)) {
            const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
            if (accepted >= 0 && client < 0 && upstream.isOpen()) {
                client = accepted;
            } else if (accepted >= 0) {
                ::close(accepted);
                emit progress(client >= 0 ? QStringLiteral("a second debugger was turned away: gdbserver serves one")
                                          : QStringLiteral("a debugger came before gdbserver listened: turned away"));
            }
        }
        if (client < 0 || over)
            continue;
        bool broken = false;
        if (!clientDone && (fds[2].revents & (POLLIN | POLLHUP | POLLERR))) {
            const ssize_t n = ::recv(client, buffer, sizeof buffer, MSG_DONTWAIT);
            if (n > 0) {
                broken = !upstream.write(buffer, n);
            } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                upstream.sendEof();
                clientDone = true;
            }
        }
        while (!broken && !serverDone) {
            const qsizetype n = upstream.read(buffer, sizeof buffer);
            if (n > 0)
                broken = !sendAll(client, buffer, n);
            else if (n == -1) {
                ::shutdown(client, SHUT_WR);
                serverDone = true;
            } else
                broken = n == -2;
            if (n <= 0)
                break;
        }
        if (broken || (clientDone && serverDone)) {
            // gdbserver --once serves one session: later debuggers are refused, as gdbserver would.
            over = true;
            upstream.close();
            ::close(client);
            client = -1;
            ::close(listener);
            listener = -1;
            emit progress(QStringLiteral("the debugger session ended"));
        }
    }
}

} // namespace rankscope::remote
