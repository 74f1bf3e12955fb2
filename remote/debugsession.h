// SPDX-License-Identifier: MIT
#pragma once

#include "remote/debugserver.h"
#include "remote/transport.h"

#include <QByteArray>
#include <QObject>
#include <QPointer>

#include <functional>
#include <memory>
#include <optional>

class QThread;

namespace rankscope::remote {

class PortForwarder;

struct DebugSessionSetup {
    int rank = -1;
    int node = -1;               // the node index of the run
    QString host;                // as the run names the node
    bool local = false;          // this machine, no SSH
    QString localTrainer;        // this machine's trainer: the program wherever a node runs a copy of it
    QString localBuildSourceDir; // where this machine's trainer was built from
    QString sourceDir;           // the trainer's sources on this machine
    QString fetchTo;             // where a trainer built on the node is copied to, for its symbols
    std::function<std::unique_ptr<Transport>()> makeTransport; // a fresh transport to the node (SSH or local)
};

// The engine's side of one rank under gdbserver. It learns where the node's trainer is (from the node worker)
// and the port gdbserver listens on (from the rank's stderr), and runs a PortForwarder on a thread of its own
// that copies a trainer built on an SSH node to this machine, claims gdbserver's one connection and offers it on
// a loopback port of this machine (through SSH, or directly on this machine). Once all is in place it emits
// ready() once. Destroying it ends the forward and waits for its thread. Lives on the engine's thread; only
// queued signals come from the forwarder.
class DebugSession final : public QObject {
    Q_OBJECT

public:
    explicit DebugSession(DebugSessionSetup setup, QObject* parent = nullptr);
    ~DebugSession() override;

    [[nodiscard]] int rank() const { return m_setup.rank; }
    [[nodiscard]] int node() const { return m_setup.node; }
    [[nodiscard]] bool isReady() const { return m_emitted; }

    // The node's trainer: its path there, whether it is a copy of this machine's, and the source folder it
    // was built from on the node (for one it built itself).
    void trainerDeployed(const QString& path, bool thisMachines, const QString& builtFrom);
    // Bytes of the rank's stderr as the line splitter cut them; `endsLine` when the piece ends a line.
    void stderrPiece(QByteArrayView bytes, bool endsLine);
    void rankExited(int status);

    // The trainer's sources as a folder on this machine: `configured` when it is one, else the folder this
    // program was built from, else the embedded copy written out under `extractTo`.
    [[nodiscard]] static QString localSources(const QString& configured, const QString& extractTo);
    // The folder this program's own trainer was built from (its debug info names files there).
    [[nodiscard]] static QString builtSourceDir();

signals:
    void ready(const rankscope::remote::DebugServer& server);
    void progress(const QString& message);
    void failed(const QString& message);

private:
    void startForward(const QString& fetchRemote);
    void emitIfReady();

    DebugSessionSetup m_setup;
    QString m_program;
    QString m_buildSourceDir;
    QString m_sysroot;
    bool m_programKnown = false;
    std::optional<int> m_nodePort; // gdbserver's, on the node's loopback
    int m_localPort = 0;           // where this machine reaches it: the forwarder's listener
    QByteArray m_partialLine;
    bool m_emitted = false;
    bool m_failed = false;
    QThread* m_thread = nullptr;
    QPointer<PortForwarder> m_forwarder;
};

} // namespace rankscope::remote
