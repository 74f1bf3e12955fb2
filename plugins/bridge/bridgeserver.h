// SPDX-License-Identifier: MIT
#pragma once

#include "plugins/bridge/connectionfile.h"
#include "core/streamlines.h"
#include "remote/runengine.h"

#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QPointer>
#include <QString>

#include <memory>

class QTimer;
class QWebSocket;
class QWebSocketServer;

namespace rankscope::bridge {

struct BridgeOptions {
    quint16 port = 0; // 0: any free port
    QString server = QStringLiteral("rankscope-cli");
    QString runtimeDir; // where the connection file goes; empty: runtimeDirectory()
    remote::EngineOptions engine; // for the runs this bridge launches or attaches to
    qint64 maxRequestBytes = 4 << 20;   // a larger request is answered with -32600
    qint64 maxIncomingBytes = 64 << 20; // a larger message closes the socket (1009)
    qint64 maxQueuedBytes = 4 << 20;    // unsent bytes per client beyond which notifications are dropped
    int tickMs = 50; // notifications are coalesced per run: at most one flush per tick
};

// The IDE bridge (docs/bridge.md): JSON-RPC 2.0 over WebSocket on loopback, behind a per-start token written
// to a connection file only the user can read. It drives one RunEngine per run it launches or attaches to,
// and follows engines the hosting process drives itself (the desktop app's), so that every client and the
// host see the same runs. Everything runs on the thread that owns it; the engines' node I/O stays on their
// worker threads. A client that reads too slowly loses notifications (and is told so), never stalls the rest.
class BridgeServer final : public QObject {
    Q_OBJECT

public:
    BridgeServer(RunStore* store, BridgeOptions options, QObject* parent = nullptr);
    ~BridgeServer() override; // closes every client, detaches from its runs (they go on), removes the file

    // Listens on 127.0.0.1 and writes the connection file.
    bool listen(QString* error);
    void close();

    [[nodiscard]] quint16 port() const;
    [[nodiscard]] QString url() const;
    [[nodiscard]] QString connectionFile() const { return m_connectionFile; }
    [[nodiscard]] int clientCount() const { return int(m_clients.size()); }

    // Publishes a run that the hosting process's own engine follows (the desktop app's session); the engine
    // stays the host's. Call it right after the engine's launch or attach.
    void followEngine(remote::RunEngine* engine);

signals:
    void clientCountChanged(int clients);

private:
    struct Client;
    struct Run;

    void onNewConnection();
    void onMessage(Client* client, const QString& text);
    void dispatch(Client* client, const QJsonValue& id, const QString& method, const QJsonObject& params);
    void removeClient(Client* client);

    void sendResult(Client* client, const QJsonValue& id, const QJsonValue& result);
    void sendError(Client* client, const QJsonValue& id, int code, const QString& message,
                   const QJsonObject& data = {});
    void sendRaw(Client* client, const QByteArray& text);
    void onBytesWritten(Client* client);

    Run* track(remote::RunEngine* engine, std::unique_ptr<remote::RunEngine> owned);
    // The run id that params' "run" names (a full id, a prefix or "latest"); empty, with the error sent, when none.
    QString resolveRun(Client* client, const QJsonValue& id, const QJsonObject& params);
    Run* runFor(Client* client, const QJsonValue& id, const QJsonObject& params); // sends the error when none
    QJsonObject snapshot(const Run& run) const;
    QJsonObject recordJson(const QString& runId) const;
    void flush();
    void scheduleFlush();

    RunStore* m_store;
    BridgeOptions m_options;
    ConnectionInfo m_info;
    QString m_connectionFile;
    QWebSocketServer* m_server = nullptr;
    QTimer* m_tick = nullptr;
    QElapsedTimer m_sinceFlush;
    QHash<QWebSocket*, Client*> m_clients;
    QHash<QString, Run*> m_runs; // by run id
    QHash<QString, std::shared_ptr<StreamLineReader>> m_readers; // run.logs, by stream file
};

} // namespace rankscope::bridge
