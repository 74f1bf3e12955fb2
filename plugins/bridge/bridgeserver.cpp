// SPDX-License-Identifier: MIT
#include "bridgeserver.h"

#include "core/jobspec.h"
#include "core/rankstatus.h"
#include "core/streamlines.h"
#include "remote/clustercheck.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkRequest>
#include <QTimer>
#include <QUrlQuery>
#include <QWebSocket>
#include <QWebSocketServer>

#include <deque>
#include <map>

namespace rankscope::bridge {

namespace {

// JSON-RPC 2.0's codes, and ours in the server range (docs/bridge.md).
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kNoSuchRun = -32001;
constexpr int kRunNotActive = -32002;
constexpr int kLaunchFailed = -32003;
constexpr int kNoSuchRank = -32004;

constexpr auto kUnauthorized = QWebSocketProtocol::CloseCode(4401);
constexpr int kMaxLogLines = 10000;
// A burst (a rank printing a buffered megabyte at once) is spread over ticks so that no single notification
// is bigger than a client's queue allows: 10,000 lines per run per 50 ms tick is 200,000 lines a second.
constexpr size_t kLinesPerTick = 10000;
constexpr qsizetype kMaxReaders = 256; // run.logs readers kept (one per rank stream asked for)

QByteArray notification(const QString& method, const QJsonObject& params) {
    return QJsonDocument(QJsonObject{{"jsonrpc", "2.0"}, {"method", method}, {"params", params}})
        .toJson(QJsonDocument::Compact);
}

QJsonObject rankStateJson(const RankLiveStatus& status) {
    QJsonObject object{{"rank", status.rank},
                       {"host", status.host},
                       {"state", rankLiveStateName(status.state)},
                       {"epoch", status.epoch},
                       {"step", status.step}};
    if (status.loss)
        object.insert(QStringLiteral("loss"), *status.loss);
    if (status.lastHeartbeat)
        object.insert(QStringLiteral("last_heartbeat"), *status.lastHeartbeat);
    if (status.stepsPerSecond)
        object.insert(QStringLiteral("steps_per_second"), *status.stepsPerSecond);
    if (status.exitStatus)
        object.insert(QStringLiteral("exit_status"), *status.exitStatus);
    if (!status.reason.isEmpty())
        object.insert(QStringLiteral("reason"), status.reason);
    if (!status.diagnosisKey.isEmpty())
        object.insert(QStringLiteral("diagnosis"), status.diagnosisKey);
    return object;
}

// The token as the client presented it: "Authorization: Bearer T" (editors, notebooks) or "?token=T" (webviews,
// which cannot set headers).
QByteArray presentedToken(const QWebSocket& socket) {
    const QNetworkRequest request = socket.request();
    const QByteArray authorization = request.rawHeader("Authorization").trimmed();
    if (authorization.startsWith("Bearer "))
        return authorization.mid(7).trimmed();
    return QUrlQuery(request.url()).queryItemValue(QStringLiteral("token"), QUrl::FullyDecoded).toUtf8();
}

} // namespace

struct BridgeServer::Client {
    QWebSocket* socket = nullptr;
    QHash<QString, qint64> dropped; // notifications dropped per run since the client fell behind
};

// One run this bridge follows or has shown: its engine (owned, or the host's), the live rank states and
// findings, the subscribers, and what is waiting for the next tick.
struct BridgeServer::Run {
    QString id;
    QPointer<remote::RunEngine> engine;
    std::unique_ptr<remote::RunEngine> owned;
    RankStatusTracker tracker;
    bool hostsKnown = false;                // the tracker has the record's rank hosts (known once the engine has a run)
    std::map<QString, Diagnosis> diagnoses; // by key, the latest of each
    QSet<Client*> subscribers;
    QJsonArray pendingEvents;
    std::deque<QJsonObject> pendingLines; // sent kLinesPerTick at a time
    QJsonArray pendingDiagnoses;
    QVector<QJsonObject> pendingProgress;
    QVector<QJsonObject> pendingDebug; // run.debugReady
    QSet<int> changedRanks;
    bool finished = false;
    bool finishedSent = false;
};

BridgeServer::BridgeServer(RunStore* store, BridgeOptions options, QObject* parent)
    : QObject(parent), m_store(store), m_options(std::move(options)) {
    // Notifications go out at once when the last went out a tick ago or more, else at the next tick: quiet runs
    // are not delayed, busy ones are coalesced.
    m_tick = new QTimer(this);
    m_tick->setSingleShot(true);
    connect(m_tick, &QTimer::timeout, this, &BridgeServer::flush);
    m_sinceFlush.start();
}

void BridgeServer::scheduleFlush() {
    if (m_tick->isActive() || !m_server || !m_server->isListening())
        return;
    m_tick->start(static_cast<int>(std::max<qint64>(0, m_options.tickMs - m_sinceFlush.elapsed())));
}

BridgeServer::~BridgeServer() {
    close();
    for (Run* run : std::as_const(m_runs)) {
        if (run->owned && run->owned->isActive())
            run->owned->detach(); // the run goes on on its nodes; `rankscope-cli attach` finds it
        delete run;
    }
    m_runs.clear();
}

bool BridgeServer::listen(QString* error) {
    m_server = new QWebSocketServer(QStringLiteral("rankscope-bridge"), QWebSocketServer::NonSecureMode, this);
    if (!m_server->listen(QHostAddress::LocalHost, m_options.port)) {
        if (error)
            *error = QStringLiteral("cannot listen on 127.0.0.1:%1: %2").arg(m_options.port).arg(m_server->errorString());
        return false;
    }
    connect(m_server, &QWebSocketServer::newConnection, this, &BridgeServer::onNewConnection);
    m_info.port = m_server->serverPort();
    m_info.token = newToken();
    m_info.pid = QCoreApplication::applicationPid();
    m_info.server = m_options.server;
    const std::optional<QString> path = writeConnectionFile(
        m_info, error, m_options.runtimeDir.isEmpty() ? runtimeDirectory() : m_options.runtimeDir);
    if (!path) {
        m_server->close();
        return false;
    }
    m_connectionFile = *path;
    return true;
}

void BridgeServer::close() {
    m_tick->stop();
    const auto clients = m_clients.values();
    for (Client* client : clients) {
        client->socket->disconnect(this);
        client->socket->close(QWebSocketProtocol::CloseCodeGoingAway, QStringLiteral("bridge stopped"));
        removeClient(client);
    }
    if (m_server)
        m_server->close();
    if (!m_connectionFile.isEmpty())
        QFile::remove(m_connectionFile);
    m_connectionFile.clear();
}

quint16 BridgeServer::port() const {
    return m_info.port;
}

QString BridgeServer::url() const {
    return m_info.url();
}

void BridgeServer::onNewConnection() {
    while (QWebSocket* socket = m_server->nextPendingConnection()) {
        socket->setParent(this);
        // Refused peers get the close frame and nothing else; why is said in its reason, never the token.
        QString refusal;
        if (!socket->peerAddress().isLoopback())
            refusal = QStringLiteral("not loopback");
        else if (const QByteArray token = presentedToken(*socket); token.isEmpty())
            refusal = QStringLiteral("missing token");
        else if (!sameSecret(token, m_info.token))
            refusal = QStringLiteral("wrong token");
        if (!refusal.isEmpty()) {
            connect(socket, &QWebSocket::disconnected, socket, &QObject::deleteLater);
            socket->close(kUnauthorized, refusal);
            continue;
        }
        socket->setMaxAllowedIncomingMessageSize(static_cast<quint64>(m_options.maxIncomingBytes));
        auto* client = new Client{socket, {}};
        m_clients.insert(socket, client);
        connect(socket, &QWebSocket::textMessageReceived, this,
                [this, client](const QString& text) { onMessage(client, text); });
        connect(socket, &QWebSocket::binaryMessageReceived, this, [this, client](const QByteArray&) {
            sendError(client, QJsonValue::Null, kInvalidRequest, QStringLiteral("binary messages are not JSON-RPC"));
        });
        connect(socket, &QWebSocket::bytesWritten, this, [this, client](qint64) { onBytesWritten(client); });
        connect(socket, &QWebSocket::disconnected, this, [this, client] { removeClient(client); });
        emit clientCountChanged(clientCount());
    }
}

void BridgeServer::removeClient(Client* client) {
    if (!m_clients.remove(client->socket))
        return;
    for (Run* run : std::as_const(m_runs))
        run->subscribers.remove(client);
    client->socket->deleteLater();
    delete client;
    emit clientCountChanged(clientCount());
}

void BridgeServer::onMessage(Client* client, const QString& text) {
    if (text.size() > m_options.maxRequestBytes) {
        sendError(client, QJsonValue::Null, kInvalidRequest, QStringLiteral("request too large"),
                  QJsonObject{{"limit", m_options.maxRequestBytes}});
        return;
    }
    QJsonParseError parseError{};
    const QJsonDocument document = QJsonDocument::fromJson(text.toUtf8(), &parseError);
    if (parseError.error != QJsonParseError::NoError) {
        sendError(client, QJsonValue::Null, kParseError, parseError.errorString(),
                  QJsonObject{{"offset", parseError.offset}});
        return;
    }
    if (!document.isObject()) {
        sendError(client, QJsonValue::Null, kInvalidRequest, QStringLiteral("a request is one JSON object"));
        return;
    }
    const QJsonObject request = document.object();
    const QJsonValue id = request.value(QStringLiteral("id"));
    const QJsonValue method = request.value(QStringLiteral("method"));
    const bool validId = id.isUndefined() || id.isString() || id.isDouble() || id.isNull();
    if (request.value(QStringLiteral("jsonrpc")) != QLatin1String("2.0") || !method.isString() || !validId) {
        // Answered even without an id: nobody can tell it was meant as a notification. An id of the wrong kind is
        // not echoed.
        sendError(client, validId && !id.isUndefined() ? id : QJsonValue(QJsonValue::Null), kInvalidRequest,
                  QStringLiteral("not a JSON-RPC 2.0 request (jsonrpc \"2.0\", a string method, an id)"));
        return;
    }
    const QJsonValue params = request.value(QStringLiteral("params"));
    if (!params.isUndefined() && !params.isObject()) {
        sendError(client, id, kInvalidParams, QStringLiteral("params must be an object"),
                  QJsonObject{{"field", "params"}});
        return;
    }
    dispatch(client, id, method.toString(), params.toObject());
}

void BridgeServer::dispatch(Client* client, const QJsonValue& id, const QString& method, const QJsonObject& params) {
    const auto invalid = [&](const QString& field, const QString& message) {
        sendError(client, id, kInvalidParams, QStringLiteral("%1: %2").arg(field, message), QJsonObject{{"field", field}});
    };

    if (method == QLatin1String("bridge.hello")) {
        sendResult(client, id,
                   QJsonObject{{"version", 1}, {"server", m_options.server}, {"server_version", RANKSCOPE_VERSION}});
        return;
    }
    if (method == QLatin1String("runs.list")) {
        QJsonArray runs;
        for (const RunRecord& record : m_store->list()) {
            QJsonObject object = record.toJson();
            object.remove(QStringLiteral("job"));
            const Run* run = m_runs.value(record.id);
            object.insert(QStringLiteral("active"), run && run->engine && run->engine->isActive());
            runs.append(object);
        }
        sendResult(client, id, QJsonObject{{"runs", runs}});
        return;
    }
    if (method == QLatin1String("run.get") || method == QLatin1String("run.subscribe")) {
        Run* run = runFor(client, id, params);
        if (!run)
            return;
        if (method == QLatin1String("run.subscribe"))
            run->subscribers.insert(client);
        sendResult(client, id, snapshot(*run));
        return;
    }
    if (method == QLatin1String("run.unsubscribe")) {
        const QString runId = resolveRun(client, id, params);
        if (runId.isEmpty())
            return;
        if (Run* run = m_runs.value(runId))
            run->subscribers.remove(client);
        client->dropped.remove(runId);
        sendResult(client, id, QJsonObject{{"run", runId}});
        return;
    }
    if (method == QLatin1String("run.launch") || method == QLatin1String("cluster.check")) {
        std::optional<RunMode> asked; // checked for the mode it will run in
        if (const QJsonValue modeValue = params.value(QStringLiteral("mode")); !modeValue.isUndefined()) {
            if (modeValue == QLatin1String("debug"))
                asked = RunMode::Debug;
            else if (modeValue == QLatin1String("submit"))
                asked = RunMode::Submit;
            else
                return invalid(QStringLiteral("mode"), QStringLiteral("must be \"debug\" or \"submit\""));
        }
        const QJsonValue jobValue = params.value(QStringLiteral("job"));
        JobParseResult parsed;
        if (jobValue.isString())
            parsed = loadJobFile(jobValue.toString(), asked);
        else if (jobValue.isObject())
            parsed =
                parseJob(QJsonDocument(jobValue.toObject()).toJson(QJsonDocument::Compact), QDir::currentPath(), asked);
        else
            return invalid(QStringLiteral("job"), QStringLiteral("a job object or the path of a job file"));
        if (!parsed.ok()) {
            QJsonArray issues;
            QStringList lines;
            for (const JobIssue& issue : std::as_const(parsed.issues)) {
                issues.append(QJsonObject{{"path", issue.path}, {"message", issue.message}});
                lines << issue.toString();
            }
            sendError(client, id, kInvalidParams, QStringLiteral("invalid job: %1").arg(lines.join(QStringLiteral("; "))),
                      QJsonObject{{"field", "job"}, {"issues", issues}});
            return;
        }
        const RunMode mode = parsed.job->mode;
        if (method == QLatin1String("cluster.check")) {
            remote::ConnectionOptions connection;
            connection.knownHostsPath = m_options.engine.knownHostsPath;
            connection.sshConfigPath = m_options.engine.sshConfigPath;
            connection.acceptNewHostKeys = m_options.engine.acceptNewHostKeys;
            connection.connectTimeout = m_options.engine.connectTimeout;
            auto* check = new remote::ClusterCheck(connection, this);
            QPointer<QWebSocket> socket = client->socket;
            connect(check, &remote::ClusterCheck::finished, this,
                    [this, check, socket, id](const remote::ClusterCheckResult& result) {
                        if (Client* asker = socket ? m_clients.value(socket) : nullptr)
                            sendResult(asker, id, remote::clusterCheckToJson(result));
                        check->deleteLater();
                    });
            QString error;
            if (!check->start(*parsed.job, mode, &error)) {
                check->deleteLater();
                sendError(client, id, kInvalidParams, error, QJsonObject{{"field", "job"}});
            }
            return;
        }
        std::optional<int> debugRank;
        if (const QJsonValue value = params.value(QStringLiteral("debug_rank")); !value.isUndefined()) {
            if (!value.isDouble() || value.toDouble() != double(value.toInt()) || value.toInt() < 0)
                return invalid(QStringLiteral("debug_rank"), QStringLiteral("must be a rank number"));
            debugRank = value.toInt();
        }
        auto engine = std::make_unique<remote::RunEngine>(m_store, m_options.engine);
        remote::RunEngine* raw = engine.get();
        Run* run = track(raw, std::move(engine));
        run->subscribers.insert(client);
        QString error;
        remote::LaunchOptions launchOptions;
        launchOptions.debugRank = debugRank;
        const bool launched = raw->launch(*parsed.job, mode, launchOptions, &error);
        if (!launched) {
            m_runs.remove(run->id);
            m_runs.remove(raw->record().id);
            delete run;
            QJsonObject data;
            if (debugRank)
                data.insert(QStringLiteral("rank"), *debugRank);
            sendError(client, id, kLaunchFailed, error, data);
            return;
        }
        run->id = raw->record().id;
        m_runs.insert(run->id, run);
        sendResult(client, id, QJsonObject{{"run", run->id}});
        return;
    }
    if (method == QLatin1String("run.attach") || method == QLatin1String("run.stop")) {
        const QString runId = resolveRun(client, id, params);
        if (runId.isEmpty())
            return;
        QString error;
        Run* run = m_runs.value(runId);
        if (!run || !run->engine || !run->engine->isActive()) {
            // Not followed here: follow it, if it is still on its nodes.
            const std::optional<RunRecord> record = m_store->load(runId);
            const QString state = record ? record->state : QString();
            if (!record || !record->inProgress()) {
                sendError(client, id, kRunNotActive, QStringLiteral("run %1 is %2").arg(runId, state),
                          QJsonObject{{"run", runId}, {"state", state}});
                return;
            }
            if (run) { // shown offline before: replace it by a live one
                m_runs.remove(runId);
                delete run;
            }
            auto engine = std::make_unique<remote::RunEngine>(m_store, m_options.engine);
            remote::RunEngine* raw = engine.get();
            run = track(raw, std::move(engine));
            run->id = runId;
            if (!raw->attach(runId, &error)) {
                delete run;
                sendError(client, id, kLaunchFailed, error, QJsonObject{{"run", runId}});
                return;
            }
            m_runs.insert(runId, run);
        }
        if (method == QLatin1String("run.stop")) {
            run->engine->stop();
            sendResult(client, id, QJsonObject{{"run", runId}, {"stopping", true}});
        } else {
            run->subscribers.insert(client);
            sendResult(client, id, QJsonObject{{"run", runId}, {"state", run->engine->record().state}});
        }
        return;
    }
    if (method == QLatin1String("run.logs")) {
        const QString runId = resolveRun(client, id, params);
        if (runId.isEmpty())
            return;
        QString error;
        const std::optional<RunRecord> record = m_store->load(runId, &error);
        if (!record) {
            sendError(client, id, kNoSuchRun, error, QJsonObject{{"run", runId}});
            return;
        }
        const QJsonValue rankValue = params.value(QStringLiteral("rank"));
        if (!rankValue.isDouble() || rankValue.toDouble() != double(rankValue.toInt()))
            return invalid(QStringLiteral("rank"), QStringLiteral("a rank number"));
        const int rank = rankValue.toInt();
        if (rank < 0 || rank >= record->worldSize) {
            sendError(client, id, kNoSuchRank,
                      QStringLiteral("run %1 has ranks 0-%2, not %3").arg(runId).arg(record->worldSize - 1).arg(rank),
                      QJsonObject{{"run", runId}, {"rank", rank}});
            return;
        }
        const QString streamName = params.value(QStringLiteral("stream")).toString(QStringLiteral("out"));
        RankStream stream = RankStream::Out;
        if (streamName == QLatin1String("err"))
            stream = RankStream::Err;
        else if (streamName == QLatin1String("events"))
            stream = RankStream::Events;
        else if (streamName != QLatin1String("out"))
            return invalid(QStringLiteral("stream"), QStringLiteral("must be \"out\", \"err\" or \"events\""));
        const QJsonValue fromValue = params.value(QStringLiteral("from"));
        const QJsonValue countValue = params.value(QStringLiteral("count"));
        if (!(fromValue.isUndefined() || fromValue.isDouble()))
            return invalid(QStringLiteral("from"), QStringLiteral("a line number"));
        if (!(countValue.isUndefined() || countValue.isDouble()))
            return invalid(QStringLiteral("count"), QStringLiteral("a number of lines"));
        const qint64 from = static_cast<qint64>(fromValue.toDouble(1));
        const int count = static_cast<int>(countValue.toDouble(1000));
        if (from < 1)
            return invalid(QStringLiteral("from"), QStringLiteral("line numbers start at 1"));
        if (count < 0 || count > kMaxLogLines)
            return invalid(QStringLiteral("count"), QStringLiteral("must be 0-%1").arg(kMaxLogLines));
        // Readers are kept: each extends its line index by what was appended since, so paging through a long
        // log reads each byte once, not once per page.
        const QString path = m_store->streamPath(runId, rank, stream);
        auto reader = m_readers.find(path);
        if (reader == m_readers.end()) {
            if (m_readers.size() >= kMaxReaders)
                m_readers.clear();
            reader = m_readers.insert(path, std::make_shared<StreamLineReader>(path));
        }
        const StreamLineReader::Page page = (*reader)->read(from, count);
        QJsonArray lines;
        qint64 number = page.first;
        for (const QString& line : page.lines)
            lines.append(QJsonObject{{"line", number++}, {"text", line}});
        sendResult(client, id,
                   QJsonObject{{"run", runId}, {"rank", rank}, {"stream", streamName}, {"lines", lines},
                               {"next", std::max(number, from)}, {"total", page.total}});
        return;
    }
    sendError(client, id, kMethodNotFound, QStringLiteral("unknown method %1").arg(method),
              QJsonObject{{"method", method}});
}

QString BridgeServer::resolveRun(Client* client, const QJsonValue& id, const QJsonObject& params) {
    const QJsonValue asked = params.value(QStringLiteral("run"));
    if (!asked.isString() || asked.toString().isEmpty()) {
        sendError(client, id, kInvalidParams, QStringLiteral("run: a run id"), QJsonObject{{"field", "run"}});
        return {};
    }
    QString error;
    const QString runId = m_store->resolveId(asked.toString(), &error);
    if (runId.isEmpty())
        sendError(client, id, kNoSuchRun, error, QJsonObject{{"run", asked}});
    return runId;
}

BridgeServer::Run* BridgeServer::runFor(Client* client, const QJsonValue& id, const QJsonObject& params) {
    const QString runId = resolveRun(client, id, params);
    if (runId.isEmpty())
        return nullptr;
    QString error;
    if (Run* run = m_runs.value(runId))
        return run;
    // A stored run nobody here follows: shown offline, its history replayed through an engine of its own.
    auto engine = std::make_unique<remote::RunEngine>(m_store, m_options.engine);
    remote::RunEngine* raw = engine.get();
    Run* run = track(raw, std::move(engine));
    run->id = runId;
    if (!raw->open(runId, &error)) {
        delete run;
        sendError(client, id, kNoSuchRun, error, QJsonObject{{"run", runId}});
        return nullptr;
    }
    run->pendingEvents = {};
    run->pendingLines.clear();
    run->pendingDiagnoses = {};
    run->pendingProgress.clear();
    run->changedRanks.clear();
    run->finishedSent = true; // its end is history, not news
    m_runs.insert(runId, run);
    return run;
}

BridgeServer::Run* BridgeServer::track(remote::RunEngine* engine, std::unique_ptr<remote::RunEngine> owned) {
    auto* run = new Run;
    run->engine = engine;
    run->owned = std::move(owned);
    using remote::RunEngine;
    // Everything the engine says is folded in at once and sent at the next tick, coalesced.
    // Hosts as the job names its nodes, as the diagnoses do, not as each rank's start event names its machine.
    const auto knowHosts = [run] {
        if (!run->hostsKnown && run->engine && !run->engine->record().nodes.isEmpty()) {
            run->tracker.setRankHosts(run->engine->record().rankHosts());
            run->hostsKnown = true;
        }
    };
    connect(engine, &RunEngine::events, this, [this, run, knowHosts](const QVector<TrainerEvent>& events) {
        scheduleFlush();
        knowHosts();
        run->tracker.addEvents(events);
        for (const TrainerEvent& event : events) {
            run->pendingEvents.append(event.fields);
            run->changedRanks.insert(event.rank);
        }
    });
    connect(engine, &RunEngine::logLines, this, [this, run](const QVector<RankLogLine>& lines) {
        scheduleFlush();
        for (const RankLogLine& line : lines)
            if (line.stream != RankStream::Events)
                run->pendingLines.push_back(QJsonObject{{"rank", line.rank},
                                                     {"stream", rankStreamSuffix(line.stream)},
                                                     {"line", line.lineNumber},
                                                     {"text", line.text}});
    });
    const auto exited = [this, run, knowHosts](int rank, const QString& host, int status, bool stopped) {
        scheduleFlush();
        knowHosts();
        run->tracker.rankExited(rank, status, host, stopped);
        run->changedRanks.insert(rank);
    };
    connect(engine, &RunEngine::rankExited, this, exited);
    connect(engine, &RunEngine::rankExitJudged, this, exited);
    connect(engine, &RunEngine::diagnoses, this, [this, run](const QVector<Diagnosis>& found) {
        scheduleFlush();
        for (const Diagnosis& diagnosis : found) {
            run->diagnoses[diagnosis.key] = diagnosis;
            run->pendingDiagnoses.append(diagnosis.toJson());
            // A rank a finding names may keep its state (failed before its root cause was known) and still change
            // its reason and the finding it points to.
            for (const int rank : diagnosis.ranks)
                run->changedRanks.insert(rank);
        }
        for (const int rank : run->tracker.applyDiagnoses(found)) // the ranks' hung, slow, failed come from them
            run->changedRanks.insert(rank);
    });
    connect(engine, &RunEngine::nodeProgress, this, [this, run](int, const QString& host, const QString& message) {
        scheduleFlush();
        run->pendingProgress.append(QJsonObject{{"host", host}, {"message", message}});
    });
    connect(engine, &RunEngine::linkLost, this, [this, run](int, const QString& host, const QString& message) {
        scheduleFlush();
        run->pendingProgress.append(QJsonObject{{"host", host}, {"message", QStringLiteral("link lost: ") + message}});
    });
    connect(engine, &RunEngine::linkRestored, this, [this, run](int, const QString& host) {
        scheduleFlush();
        run->pendingProgress.append(QJsonObject{{"host", host}, {"message", QStringLiteral("link restored")}});
    });
    connect(engine, &RunEngine::debugServerReady, this, [this, run](const remote::DebugServer& server) {
        run->pendingDebug.append(server.toJson());
        scheduleFlush();
    });
    connect(engine, &RunEngine::finished, this, [this, run](const RunRecord&) {
        run->finished = true;
        scheduleFlush();
    });
    return run;
}

void BridgeServer::followEngine(remote::RunEngine* engine) {
    const QString runId = engine->record().id;
    if (runId.isEmpty())
        return;
    // A host's engine follows one run after another: the run it followed before is history now.
    for (Run* other : std::as_const(m_runs))
        if (!other->owned && other->engine == engine) {
            engine->disconnect(this);
            other->engine = nullptr;
        }
    QSet<Client*> subscribers;
    if (Run* old = m_runs.take(runId)) {
        subscribers = old->subscribers;
        if (old->engine && old->engine != engine)
            old->engine->disconnect(this);
        delete old;
    }
    Run* run = track(engine, nullptr);
    run->id = runId;
    run->subscribers = subscribers;
    m_runs.insert(runId, run);
    connect(engine, &QObject::destroyed, this, [this, runId, run] {
        if (m_runs.value(runId) == run)
            run->engine = nullptr; // the host's engine is gone; what was seen stays
    });
}

QJsonObject BridgeServer::recordJson(const QString& runId) const {
    const Run* run = m_runs.value(runId);
    if (run && run->engine && !run->engine->record().id.isEmpty())
        return run->engine->record().toJson();
    const std::optional<RunRecord> record = m_store->load(runId);
    return record ? record->toJson() : QJsonObject{{"id", runId}};
}

QJsonObject BridgeServer::snapshot(const Run& run) const {
    QJsonArray ranks;
    for (const RankLiveStatus& status : run.tracker.ranks())
        ranks.append(rankStateJson(status));
    QJsonArray diagnoses;
    for (const auto& [key, diagnosis] : run.diagnoses)
        diagnoses.append(diagnosis.toJson());
    QJsonObject result{{"run", recordJson(run.id)}, {"ranks", ranks}, {"diagnoses", diagnoses}};
    if (run.engine && run.engine->isActive())
        if (const std::optional<remote::DebugServer> server = run.engine->debugServer())
            result.insert(QStringLiteral("debug"), server->toJson());
    return result;
}

void BridgeServer::flush() {
    // A client is behind when what earlier ticks sent is still queued: it then loses this tick's bulk
    // notifications (counted, and said once it caught up). Within a tick everything goes out together.
    QSet<Client*> behind;
    for (Client* client : std::as_const(m_clients))
        if (!client->dropped.isEmpty() || client->socket->bytesToWrite() > m_options.maxQueuedBytes)
            behind.insert(client);
    m_sinceFlush.restart();
    bool more = false;
    for (Run* run : std::as_const(m_runs)) {
        struct Message {
            QByteArray text;
            bool droppable;
        };
        QVector<Message> messages;
        const QJsonValue id = run->id;
        for (const QJsonObject& progress : std::as_const(run->pendingProgress)) {
            QJsonObject params = progress;
            params.insert(QStringLiteral("run"), id);
            messages.append({notification(QStringLiteral("run.progress"), params), false});
        }
        if (!run->pendingEvents.isEmpty())
            messages.append(
                {notification(QStringLiteral("run.events"), {{"run", id}, {"events", run->pendingEvents}}), true});
        if (!run->pendingLines.empty()) {
            QJsonArray lines;
            const size_t count = std::min(run->pendingLines.size(), kLinesPerTick);
            for (size_t i = 0; i < count; ++i)
                lines.append(run->pendingLines[i]);
            run->pendingLines.erase(run->pendingLines.begin(), run->pendingLines.begin() + ptrdiff_t(count));
            more = more || !run->pendingLines.empty();
            messages.append({notification(QStringLiteral("run.logLines"), {{"run", id}, {"lines", lines}}), true});
        }
        if (!run->changedRanks.isEmpty()) {
            QJsonArray ranks;
            for (const int rank : std::as_const(run->changedRanks))
                if (const RankLiveStatus* status = run->tracker.rank(rank))
                    ranks.append(rankStateJson(*status));
            if (!ranks.isEmpty())
                messages.append({notification(QStringLiteral("run.ranks"), {{"run", id}, {"ranks", ranks}}), true});
        }
        for (const QJsonObject& debug : std::as_const(run->pendingDebug)) {
            QJsonObject params = debug;
            params.insert(QStringLiteral("run"), id);
            messages.append({notification(QStringLiteral("run.debugReady"), params), false});
        }
        run->pendingDebug.clear();
        // Findings and the end are few and small, and a client must not miss them: never dropped.
        if (!run->pendingDiagnoses.isEmpty())
            messages.append(
                {notification(QStringLiteral("run.diagnoses"), {{"run", id}, {"diagnoses", run->pendingDiagnoses}}),
                 false});
        if (run->finished && !run->finishedSent && run->pendingLines.empty()) {
            run->finishedSent = true;
            messages.append(
                {notification(QStringLiteral("run.finished"), {{"run", id}, {"record", recordJson(run->id)}}), false});
        }
        run->pendingProgress.clear();
        run->pendingEvents = {};
        run->pendingDiagnoses = {};
        run->changedRanks.clear();
        for (Client* client : std::as_const(run->subscribers))
            for (const Message& message : std::as_const(messages)) {
                if (message.droppable && behind.contains(client))
                    client->dropped[run->id] += 1;
                else
                    sendRaw(client, message.text);
            }
    }
    if (more)
        scheduleFlush();
}

void BridgeServer::onBytesWritten(Client* client) {
    if (client->dropped.isEmpty() || client->socket->bytesToWrite() > m_options.maxQueuedBytes / 4)
        return; // still behind, or never was
    const QHash<QString, qint64> dropped = std::exchange(client->dropped, {});
    for (auto it = dropped.begin(); it != dropped.end(); ++it)
        client->socket->sendTextMessage(QString::fromUtf8(
            notification(QStringLiteral("bridge.fellBehind"), {{"run", it.key()}, {"dropped", it.value()}})));
}

void BridgeServer::sendRaw(Client* client, const QByteArray& text) {
    // Answers are never dropped; a client that asks but never reads is cut off before it costs real memory.
    if (client->socket->bytesToWrite() > 16 * m_options.maxQueuedBytes) {
        client->socket->abort();
        return;
    }
    client->socket->sendTextMessage(QString::fromUtf8(text));
}

void BridgeServer::sendResult(Client* client, const QJsonValue& id, const QJsonValue& result) {
    if (id.isUndefined())
        return; // a notification from the client: no answer
    sendRaw(client, QJsonDocument(QJsonObject{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}})
                        .toJson(QJsonDocument::Compact));
}

void BridgeServer::sendError(Client* client, const QJsonValue& id, int code, const QString& message,
                             const QJsonObject& data) {
    if (id.isUndefined())
        return; // a notification from the client is never answered, not even with an error (JSON-RPC 2.0)
    QJsonObject error{{"code", code}, {"message", message}};
    if (!data.isEmpty())
        error.insert(QStringLiteral("data"), data);
    sendRaw(
        client,
        QJsonDocument(QJsonObject{{"jsonrpc", "2.0"}, {"id", id}, {"error", error}}).toJson(QJsonDocument::Compact));
}

} // namespace rankscope::bridge
