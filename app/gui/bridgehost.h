// SPDX-License-Identifier: MIT
#pragma once

#include "plugins/bridge/bridgeserver.h"

#include <QObject>

#include <memory>

namespace rankscope::gui {

class RunSession;

// The desktop app hosting the IDE bridge (docs/bridge.md): editors and notebooks connect to the app instead of
// a `rankscope-cli bridge`, and see the run the app follows live (every run the app launches or attaches to is
// published to them) besides the runs they launch themselves, which the app lists in its history.
class BridgeHost final : public QObject {
    Q_OBJECT

public:
    BridgeHost(RunSession* session, remote::EngineOptions engineOptions, QObject* parent = nullptr);
    ~BridgeHost() override;

    bool start(QString* error);
    void stop();
    [[nodiscard]] bool isRunning() const { return m_server != nullptr; }
    [[nodiscard]] bridge::BridgeServer* server() const { return m_server.get(); }
    // "IDE bridge on ws://127.0.0.1:P, N client(s)", or empty when not running. Never the token.
    [[nodiscard]] QString statusText() const;

    // Where the connection file goes; empty: bridge::runtimeDirectory() (tests point it elsewhere).
    void setRuntimeDirectory(const QString& directory) { m_runtimeDir = directory; }

signals:
    void statusChanged(const QString& text);

private:
    RunSession* m_session;
    remote::EngineOptions m_engineOptions;
    QString m_runtimeDir;
    std::unique_ptr<bridge::BridgeServer> m_server;
};

} // namespace rankscope::gui
