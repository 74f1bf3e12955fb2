// SPDX-License-Identifier: MIT
#include "remote/debugsession.h"

#include "core/runstore.h"
#include "remote/portforwarder.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QThread>

namespace rankscope::remote {

DebugSession::DebugSession(DebugSessionSetup setup, QObject* parent) : QObject(parent), m_setup(std::move(setup)) {}

DebugSession::~DebugSession() {
    if (!m_thread)
        return;
    if (m_forwarder)
        m_forwarder->requestStop(); // thread-safe: wakes its poll, or ends its copy between chunks
    m_thread->quit();
    m_thread->wait();
    delete m_thread;
}

QString DebugSession::builtSourceDir() {
#ifdef RANKSCOPE_TRAINER_SOURCE_DIR
    return QStringLiteral(RANKSCOPE_TRAINER_SOURCE_DIR);
#else
    return {};
#endif
}

QString DebugSession::localSources(const QString& configured, const QString& extractTo) {
    if (!configured.startsWith(QLatin1Char(':')) && QFileInfo(configured).isDir())
        return QFileInfo(configured).absoluteFilePath();
    if (const QString built = builtSourceDir(); !built.isEmpty() && QFileInfo(built + "/src/training.cpp").isFile())
        return built;
    // An installed program without its source tree: the sources it deploys are embedded; write them out.
    QDirIterator it(configured, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString from = it.next();
        const QString to = extractTo + from.mid(configured.size());
        QDir().mkpath(QFileInfo(to).absolutePath());
        QFile::remove(to);
        QFile::copy(from, to);
    }
    return extractTo;
}

void DebugSession::trainerDeployed(const QString& path, bool thisMachines, const QString& builtFrom) {
    if (m_setup.local) {
        m_program = path; // this machine's file, wherever it was built
        m_buildSourceDir = thisMachines ? m_setup.localBuildSourceDir : builtFrom;
        m_sysroot = QStringLiteral("/");
        m_programKnown = true;
        startForward(QString());
        return;
    }
    // A copy of this machine's binary runs on a node of the same OS and architecture whose loader found every
    // library (the deploy checked): this machine's libraries then stand for the node's, which saves gdb reading
    // hundreds of MB of LibTorch through the forward. A trainer built on the node has its own, read from there.
    m_program = thisMachines ? m_setup.localTrainer : m_setup.fetchTo;
    m_buildSourceDir = thisMachines ? m_setup.localBuildSourceDir : builtFrom;
    m_sysroot = thisMachines ? QStringLiteral("/") : QString();
    m_programKnown = true;
    startForward(thisMachines ? QString() : path);
}

void DebugSession::startForward(const QString& fetchRemote) {
    if (m_thread || !m_setup.makeTransport)
        return;
    m_thread = new QThread;
    m_thread->setObjectName(QStringLiteral("forward%1").arg(m_setup.node));
    auto* forwarder = new PortForwarder(m_setup.makeTransport());
    forwarder->moveToThread(m_thread);
    m_forwarder = forwarder;
    if (m_nodePort) // gdbserver's line came first
        forwarder->setTargetPort(*m_nodePort);
    connect(m_thread, &QThread::finished, forwarder, &QObject::deleteLater);
    connect(forwarder, &PortForwarder::progress, this, &DebugSession::progress);
    connect(forwarder, &PortForwarder::ready, this, [this](int port) {
        m_localPort = port;
        emitIfReady();
    });
    connect(forwarder, &PortForwarder::failed, this, [this](const QString& message) {
        if (m_failed)
            return;
        m_failed = true;
        emit failed(QStringLiteral("rank %1 on %2: %3").arg(m_setup.rank).arg(m_setup.host, message));
    });
    m_thread->start();
    const QString fetchTo = m_setup.fetchTo;
    QMetaObject::invokeMethod(
        forwarder, [forwarder, fetchRemote, fetchTo] { forwarder->run(fetchRemote, fetchTo); }, Qt::QueuedConnection);
}

void DebugSession::stderrPiece(QByteArrayView bytes, bool endsLine) {
    if (m_nodePort)
        return;
    m_partialLine += bytes;
    if (!endsLine)
        return;
    m_nodePort = gdbserverPort(m_partialLine);
    m_partialLine.clear();
    if (m_nodePort && m_forwarder)
        m_forwarder->setTargetPort(*m_nodePort); // thread-safe: it claims gdbserver's connection, then says ready
}

void DebugSession::rankExited(int status) {
    if (m_emitted || m_failed)
        return;
    m_failed = true;
    emit failed(QStringLiteral("rank %1 on %2 ended (%3) before gdbserver accepted a debugger; its stderr says why")
                    .arg(m_setup.rank)
                    .arg(m_setup.host, describeExitStatus(status)));
}

void DebugSession::emitIfReady() {
    if (m_emitted || m_failed || !m_programKnown || m_localPort == 0)
        return;
    DebugServer server;
    server.rank = m_setup.rank;
    server.host = m_setup.host;
    server.address = QStringLiteral("127.0.0.1:%1").arg(m_localPort);
    server.program = m_program;
    server.sourceDir = m_setup.sourceDir;
    server.buildSourceDir = m_buildSourceDir == m_setup.sourceDir ? QString() : m_buildSourceDir;
    server.sysroot = m_sysroot;
    server.gdbCommand = gdbCommandLine(server);
    m_emitted = true;
    emit ready(server);
}

} // namespace rankscope::remote
