// SPDX-License-Identifier: MIT
#include "bridgehost.h"

#include "runsession.h"

namespace rankscope::gui {

BridgeHost::BridgeHost(RunSession* session, remote::EngineOptions engineOptions, QObject* parent)
    : QObject(parent), m_session(session), m_engineOptions(std::move(engineOptions)) {
    // The session's engine is published for each run it starts following (queued: an attach is under way when
    // runStarting comes, and the engine has the new run once it returns); a run already followed when the
    // bridge starts is published by start().
    connect(
        m_session, &RunSession::runStarting, this,
        [this](const RunRecord&) {
            if (m_server && m_session->isActive())
                m_server->followEngine(m_session->engine());
        },
        Qt::QueuedConnection);
}

BridgeHost::~BridgeHost() {
    stop();
}

bool BridgeHost::start(QString* error) {
    if (m_server)
        return true;
    bridge::BridgeOptions options;
    options.server = QStringLiteral("rankscope");
    options.runtimeDir = m_runtimeDir;
    options.engine = m_engineOptions;
    auto server = std::make_unique<bridge::BridgeServer>(m_session->store(), options);
    if (!server->listen(error))
        return false;
    m_server = std::move(server);
    connect(m_server.get(), &bridge::BridgeServer::clientCountChanged, this,
            [this] { emit statusChanged(statusText()); });
    if (m_session->isActive())
        m_server->followEngine(m_session->engine());
    emit statusChanged(statusText());
    return true;
}

void BridgeHost::stop() {
    if (!m_server)
        return;
    m_server.reset(); // closes the clients, removes the connection file; runs it launched go on on their nodes
    emit statusChanged(statusText());
}

QString BridgeHost::statusText() const {
    if (!m_server)
        return {};
    return QStringLiteral("IDE bridge on %1, %2 client(s)").arg(m_server->url()).arg(m_server->clientCount());
}

} // namespace rankscope::gui
