// SPDX-License-Identifier: MIT
#pragma once

#include "remote/transport.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

namespace rankscope::remote {

// The way to a gdbserver: a listener on this machine's 127.0.0.1 whose connection is piped to gdbserver's port
// on its node, through an SSH direct-tcpip channel (what `ssh -L` does) or, for this machine, a plain TCP
// connection.
//
// gdbserver ignores the host part of HOST:PORT and listens on every interface, and with --once it takes one
// connection and then closes its listener. So the forwarder connects to it the moment its port is known,
// before anyone else can, holds that connection idle (gdbserver says nothing until spoken to), and reports
// ready() only then; the first debugger to connect to the local listener gets it. Should the claim fail, someone
// else connected first and failed() says so.
//
// For an SSH node it has a session of its own, on a thread of its own, made by the same transport factory as the
// node worker's (the same known_hosts check and authentication): a libssh session is not thread-safe, and the node
// worker's is busy with blocking reads. The thread's owner calls requestStop(), then quits and waits for the
// thread; the connections, the listener and the session are closed before run() returns.
class PortForwarder final : public QObject {
    Q_OBJECT

public:
    explicit PortForwarder(std::unique_ptr<Transport> transport); // SSH or local, not connected yet
    ~PortForwarder() override;

    // Thread-safe: gdbserver's port on the node, once it listens; the forwarder claims it at once.
    void setTargetPort(int port);
    // Thread-safe. Ends run() within moments, whatever it is doing (a connect waits for its own timeout).
    void requestStop();

    // Copies a file of the node to this machine by SFTP, in chunks, giving up when `stop` is set; the local
    // file appears whole or not at all. Throws TransportError.
    static void fetchFile(Transport& transport, const QString& remotePath, const QString& localPath,
                          const std::atomic<bool>& stop);

public slots:
    // Connects; copies the node's `fetchRemote` to `fetchLocal` when it is not empty (a trainer built on the node,
    // for its symbols); listens on 127.0.0.1:0; claims gdbserver's connection once setTargetPort() gave its port
    // and emits ready(); then pipes the one debugger session until requestStop(). Returns only then or on failure.
    void run(const QString& fetchRemote, const QString& fetchLocal);

signals:
    void progress(const QString& message);
    void ready(int localPort);
    void failed(const QString& message);

private:
    struct Upstream;
    void serve(int& listener, int localPort); // closes the listener once the one session is over
    void claim(Upstream& upstream, int port);

    std::unique_ptr<Transport> m_transport;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_targetPort{0};
    int m_wake = -1; // eventfd: setTargetPort() and requestStop() wake the poll at once
};

} // namespace rankscope::remote
