// SPDX-License-Identifier: MIT
// The IDE bridge with real WebSocket clients, the real run engine and the real trainer on this machine: the
// token and the connection file, JSON-RPC answers and errors, a run followed from launch to end, paging of a
// rank's log, and a client that stops reading while another keeps up.
#include "fixtures/sshdfixture.h"
#include "plugins/bridge/bridgeserver.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkInterface>
#include <QNetworkRequest>
#include <QProcess>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QWebSocket>

#include <sys/stat.h>
#include <unistd.h>

using namespace rankscope;

namespace {

const QString kTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");

// A WebSocket client that collects every message and answers requests by id.
class RpcClient final : public QObject {
public:
    explicit RpcClient(QObject* parent = nullptr) : QObject(parent) {
        connect(&socket, &QWebSocket::textMessageReceived, this, [this](const QString& text) {
            const QJsonObject message = QJsonDocument::fromJson(text.toUtf8()).object();
            all.append(message);
            if (message.contains(QStringLiteral("id")))
                answers.insert(message.value(QStringLiteral("id")).toInt(-1), message);
            else
                notifications.append(message);
        });
    }

    // Opens and waits for the handshake; false when the bridge closed it (closeCode says why).
    bool open(const QUrl& url, const QByteArray& bearer = {}, const QByteArray& scheme = "Bearer") {
        QNetworkRequest request(url);
        if (!bearer.isEmpty())
            request.setRawHeader("Authorization", scheme + ' ' + bearer);
        QSignalSpy connected(&socket, &QWebSocket::connected);
        QSignalSpy disconnected(&socket, &QWebSocket::disconnected);
        socket.open(request);
        if (!connected.wait(5000))
            return false;
        // A refused client is closed right after the handshake: give the close frame a moment to arrive.
        disconnected.wait(300);
        return socket.state() == QAbstractSocket::ConnectedState;
    }

    QJsonObject call(const QString& method, const QJsonObject& params = {}, int timeoutMs = 10000) {
        const int id = ++m_nextId;
        socket.sendTextMessage(QString::fromUtf8(
            QJsonDocument(QJsonObject{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}})
                .toJson(QJsonDocument::Compact)));
        return await(id, timeoutMs);
    }
    QJsonObject await(int id, int timeoutMs = 10000) {
        QDeadlineTimer deadline(timeoutMs);
        while (!answers.contains(id) && !deadline.hasExpired())
            QTest::qWait(5);
        return answers.value(id);
    }
    int nextId() const { return m_nextId + 1; }
    void sendRaw(const QString& text) { socket.sendTextMessage(text); }

    QList<QJsonObject> received(const QString& method) const {
        QList<QJsonObject> found;
        for (const QJsonObject& message : notifications)
            if (message.value(QStringLiteral("method")).toString() == method)
                found.append(message.value(QStringLiteral("params")).toObject());
        return found;
    }

    // The state the run ended in, from its run.finished notification; empty before that came.
    QString endState() const {
        const QList<QJsonObject> finished = received(QStringLiteral("run.finished"));
        return finished.isEmpty() ? QString()
                                  : finished.front().value("record").toObject().value("state").toString();
    }

    QWebSocket socket;
    QList<QJsonObject> all; // every message, in order
    QHash<int, QJsonObject> answers;
    QList<QJsonObject> notifications;

private:
    int m_nextId = 0;
};

// Whether a process of this machine has `text` in its command line (a run's id: its supervisor and ranks).
bool processesOf(const QString& text) {
    QProcess pgrep;
    pgrep.start(QStringLiteral("pgrep"), {QStringLiteral("-f"), text});
    return pgrep.waitForFinished(10000) && pgrep.exitStatus() == QProcess::NormalExit && pgrep.exitCode() == 0;
}

// Ends what processesOf(text) finds.
void endProcessesOf(const QString& text) {
    if (!text.isEmpty())
        QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-f"), text});
}

// The token a bridge wrote to its connection file.
QByteArray tokenOf(const bridge::BridgeServer& server) {
    QFile file(server.connectionFile());
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(file.readAll()).object().value(QStringLiteral("token")).toString().toLatin1();
}

QJsonObject errorOf(const QJsonObject& answer) {
    return answer.value(QStringLiteral("error")).toObject();
}

// A client that does the WebSocket handshake by hand and then reads nothing: its kernel buffers fill, then the
// bridge's. Only what is needed to send one request is implemented here.
class StalledClient final {
public:
    bool open(quint16 port, const QByteArray& token) {
        m_socket.setSocketOption(QAbstractSocket::ReceiveBufferSizeSocketOption, 4096);
        m_socket.connectToHost(QHostAddress::LocalHost, port);
        if (!m_socket.waitForConnected(5000))
            return false;
        m_socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                       "Authorization: Bearer " +
                       token + "\r\n\r\n");
        // The bridge runs on this thread: wait with the event loop turning, never in a blocking wait.
        QByteArray response;
        QDeadlineTimer deadline(5000);
        while (!response.contains("\r\n\r\n") && !deadline.hasExpired()) {
            QTest::qWait(10);
            response += m_socket.read(4096 - response.size());
        }
        if (!response.startsWith("HTTP/1.1 101"))
            qWarning("handshake answered: %s", response.constData());
        return response.startsWith("HTTP/1.1 101");
    }
    void sendText(const QByteArray& payload) {
        QByteArray frame;
        frame.append(char(0x81)); // FIN, text
        if (payload.size() < 126) {
            frame.append(char(0x80 | payload.size()));
        } else {
            frame.append(char(0x80 | 126));
            frame.append(char((payload.size() >> 8) & 0xff));
            frame.append(char(payload.size() & 0xff));
        }
        const quint32 mask = QRandomGenerator::global()->generate();
        const char* maskBytes = reinterpret_cast<const char*>(&mask);
        frame.append(maskBytes, 4);
        for (qsizetype i = 0; i < payload.size(); ++i)
            frame.append(char(payload[i] ^ maskBytes[i % 4]));
        m_socket.write(frame);
        m_socket.flush();
    }
    // Stops reading: Qt takes at most this much from the kernel, then leaves the rest there.
    void stall() { m_socket.setReadBufferSize(1024); }
    QByteArray drain(int ms) {
        m_socket.setReadBufferSize(0);
        QByteArray all;
        QElapsedTimer timer;
        timer.start();
        while (timer.elapsed() < ms) {
            QTest::qWait(20);
            all += m_socket.readAll();
        }
        return all;
    }
    QTcpSocket m_socket;
};

} // namespace

class tst_Bridge final : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<RunStore> m_store;
    std::unique_ptr<bridge::BridgeServer> m_bridge;
    QByteArray m_token;

    QUrl url(const QString& query = {}) const {
        QUrl result(m_bridge->url());
        if (!query.isEmpty())
            result.setQuery(query);
        return result;
    }
    // `trainer`: settings over the defaults below.
    QJsonObject localJob(const QString& name, int steps, const QJsonObject& trainer = {}) const {
        QJsonObject settings{{"dataset", "synthetic"}, {"model", "mlp"},    {"epochs", 1},    {"max_steps", steps},
                             {"batch_size", 16},       {"backend", "gloo"}, {"device", "cpu"}};
        for (auto it = trainer.begin(); it != trainer.end(); ++it)
            settings.insert(it.key(), it.value());
        return QJsonObject{
            {"version", 1},
            {"name", name},
            {"mode", "debug"},
            {"master_port", test::freePort()},
            {"trainer", settings},
            // No debug cap (20 steps by default): `steps` is what the trainer runs.
            {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"max_steps", 0}, {"verbose", false}}}};
    }
    bool connectClient(RpcClient& client) { return client.open(url(), m_token); }
    // run.launch through `client`: the run's id, empty when it was refused.
    static QString launchRun(RpcClient& client, const QJsonObject& params) {
        return client.call(QStringLiteral("run.launch"), params).value("result").toObject().value("run").toString();
    }
    // A bridge's options: its connection file in m_dir/RUNTIME, this build's trainer, no ssh config.
    bridge::BridgeOptions bridgeOptions(const QString& runtime) const {
        bridge::BridgeOptions options;
        options.runtimeDir = m_dir.filePath(runtime);
        options.engine.localTrainer = kTrainer;
        options.engine.sshConfigPath = QStringLiteral("none");
        return options;
    }

private slots:
    void initTestCase() {
        qRegisterMetaType<RunRecord>();
        QVERIFY(QFileInfo(kTrainer).isExecutable());
        m_store = std::make_unique<RunStore>(m_dir.filePath(QStringLiteral("store")));
        const bridge::BridgeOptions options = bridgeOptions(QStringLiteral("runtime"));
        m_bridge = std::make_unique<bridge::BridgeServer>(m_store.get(), options);
        QString error;
        QVERIFY2(m_bridge->listen(&error), qPrintable(error));
        QFile file(m_bridge->connectionFile());
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject info = QJsonDocument::fromJson(file.readAll()).object();
        m_token = info.value(QStringLiteral("token")).toString().toLatin1();
        QCOMPARE(m_token.size(), 64);
        QCOMPARE(info.value(QStringLiteral("port")).toInt(), int(m_bridge->port()));
        QCOMPARE(info.value(QStringLiteral("url")).toString(), m_bridge->url());
        // By number: "localhost" may resolve to ::1 first, where the bridge does not listen.
        QCOMPARE(m_bridge->url(), QStringLiteral("ws://127.0.0.1:%1/").arg(m_bridge->port()));
        QCOMPARE(info.value(QStringLiteral("host")).toString(), QStringLiteral("127.0.0.1"));
    }
    void cleanupTestCase() {
        m_bridge.reset();
        QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-f"), m_dir.path()});
        // A test that failed before its run ended leaves the run on this machine (under ~/rankscope/runs): end it.
        for (const RunRecord& record : m_store->list())
            endProcessesOf(record.id);
    }

    void connectionFileIsTheUsersOnly() {
        struct stat st {};
        QCOMPARE(::stat(QFile::encodeName(m_bridge->connectionFile()).constData(), &st), 0);
        QCOMPARE(int(st.st_mode & 0777), 0600);
        QCOMPARE(::stat(QFile::encodeName(m_dir.filePath(QStringLiteral("runtime"))).constData(), &st), 0);
        QCOMPARE(int(st.st_mode & 0777), 0700);
        QVERIFY(QFileInfo(m_bridge->connectionFile()).fileName().startsWith(QLatin1String("bridge-")));

        // A second bridge in the same directory gets its own file, removed when it stops; a group-readable
        // directory is taken back to its owner.
        QVERIFY(QFile::setPermissions(m_dir.filePath(QStringLiteral("runtime")),
                                      QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner |
                                          QFileDevice::ReadGroup | QFileDevice::ExeGroup));
        bridge::ConnectionInfo info{1234, bridge::newToken(), 999999, QStringLiteral("test")};
        QString error;
        const auto path = bridge::writeConnectionFile(info, &error, m_dir.filePath(QStringLiteral("runtime")));
        QVERIFY2(path, qPrintable(error));
        QCOMPARE(::stat(QFile::encodeName(m_dir.filePath(QStringLiteral("runtime"))).constData(), &st), 0);
        QCOMPARE(int(st.st_mode & 0777), 0700);
        QVERIFY(*path != m_bridge->connectionFile());
        QFile::remove(*path);
    }

    void aRuntimeDirectoryOfAnotherUserIsRefused() {
        if (::getuid() != 0)
            QSKIP("giving a directory to another user needs root");
        const QString others = m_dir.filePath(QStringLiteral("others"));
        QVERIFY(QDir().mkpath(others));
        QCOMPARE(::chown(QFile::encodeName(others).constData(), 65534, 65534), 0);
        QString error;
        QVERIFY(
            !bridge::writeConnectionFile({1234, bridge::newToken(), 999998, QStringLiteral("test")}, &error, others));
        QCOMPARE(error, others + QStringLiteral(" belongs to another user"));
        QVERIFY(QDir(others).isEmpty());
    }

    void aBridgeThatCannotWriteItsFileDoesNotListen() {
        const QString blocker = m_dir.filePath(QStringLiteral("a-file"));
        QFile file(blocker);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.close();
        bridge::BridgeOptions options;
        options.runtimeDir = blocker + QStringLiteral("/runtime");
        bridge::BridgeServer server(m_store.get(), options);
        QString error;
        QVERIFY(!server.listen(&error));
        QCOMPARE(error, QStringLiteral("cannot create the runtime directory ") + options.runtimeDir);
        QTcpSocket socket; // nobody can reach a bridge whose clients cannot find it
        socket.connectToHost(QHostAddress::LocalHost, server.port());
        QVERIFY(!socket.waitForConnected(2000));
    }

    void theRuntimeDirectoryIsWhereClientsLook() {
        // The clients (plugins/jupyter, plugins/vscode) look in these places in this order.
        const auto restore = [](const char* name, const QByteArray& value, bool was) {
            if (was)
                qputenv(name, value);
            else
                qunsetenv(name);
        };
        const bool hadOwn = qEnvironmentVariableIsSet("RANKSCOPE_RUNTIME_DIR");
        const bool hadXdg = qEnvironmentVariableIsSet("XDG_RUNTIME_DIR");
        const QByteArray own = qgetenv("RANKSCOPE_RUNTIME_DIR");
        const QByteArray xdg = qgetenv("XDG_RUNTIME_DIR");
        const auto guard = qScopeGuard([&] {
            restore("RANKSCOPE_RUNTIME_DIR", own, hadOwn);
            restore("XDG_RUNTIME_DIR", xdg, hadXdg);
        });
        qputenv("RANKSCOPE_RUNTIME_DIR", "/tmp/rankscope-own");
        qputenv("XDG_RUNTIME_DIR", "/run/user/4321");
        QCOMPARE(bridge::runtimeDirectory(), QStringLiteral("/tmp/rankscope-own"));
        qunsetenv("RANKSCOPE_RUNTIME_DIR");
        QCOMPARE(bridge::runtimeDirectory(), QStringLiteral("/run/user/4321/rankscope"));
        qunsetenv("XDG_RUNTIME_DIR");
        QCOMPARE(bridge::runtimeDirectory(), QDir::homePath() + QStringLiteral("/.local/share/rankscope/runtime"));
    }

    void tokensAreRandomPerStart() {
        QVERIFY(bridge::newToken() != bridge::newToken());
        QVERIFY(bridge::sameSecret("abc", "abc"));
        QVERIFY(!bridge::sameSecret("abc", "abd"));
        QVERIFY(!bridge::sameSecret("abc", "abcd"));
    }

    void aMissingOrWrongTokenIsRefused() {
        RpcClient none;
        QVERIFY(!none.open(url()));
        QCOMPARE(int(none.socket.closeCode()), 4401);
        QCOMPARE(none.socket.closeReason(), QStringLiteral("missing token"));
        QVERIFY(none.answers.isEmpty() && none.notifications.isEmpty());

        RpcClient wrong;
        QByteArray bad = m_token;
        bad[10] = bad[10] == 'a' ? 'b' : 'a';
        QVERIFY(!wrong.open(url(), bad));
        QCOMPARE(int(wrong.socket.closeCode()), 4401);
        QCOMPARE(wrong.socket.closeReason(), QStringLiteral("wrong token"));

        RpcClient wrongQuery;
        QVERIFY(!wrongQuery.open(url(QStringLiteral("token=") + QString::fromLatin1(bad))));
        QCOMPARE(wrongQuery.socket.closeReason(), QStringLiteral("wrong token"));

        // Both ways of presenting the right one work.
        RpcClient header;
        QVERIFY(header.open(url(), m_token));
        QCOMPARE(header.call(QStringLiteral("bridge.hello")).value("result").toObject().value("version").toInt(), 1);
        RpcClient query;
        QVERIFY(query.open(url(QStringLiteral("token=") + QString::fromLatin1(m_token))));
        QVERIFY(query.call(QStringLiteral("bridge.hello")).contains(QStringLiteral("result")));

        // Only a bearer token counts: the right token under another scheme is no token.
        RpcClient basic;
        QVERIFY(!basic.open(url(), m_token, "Basic"));
        QCOMPARE(basic.socket.closeReason(), QStringLiteral("missing token"));
    }

    void itListensOnLoopbackOnly() {
        QHostAddress outside;
        for (const QHostAddress& address : QNetworkInterface::allAddresses())
            if (!address.isLoopback() && address.protocol() == QAbstractSocket::IPv4Protocol)
                outside = address;
        if (outside.isNull())
            QSKIP("this machine has no non-loopback IPv4 address");
        QTcpSocket socket;
        socket.connectToHost(outside, m_bridge->port());
        QVERIFY2(!socket.waitForConnected(3000),
                 qPrintable(QStringLiteral("connected through %1").arg(outside.toString())));
    }

    void eachBadRequestGetsItsError_data() {
        QTest::addColumn<QString>("request");
        QTest::addColumn<int>("code"); // 0: a result
        QTest::addColumn<QString>("message");
        QTest::addColumn<QString>("field"); // data.field
        QTest::addColumn<QString>("id");    // the answer's id, as JSON

        const auto launch = [this](const QJsonObject& extra) {
            QJsonObject params{{"job", localJob(QStringLiteral("never-run"), 4)}};
            for (auto it = extra.begin(); it != extra.end(); ++it)
                params.insert(it.key(), it.value());
            return QString::fromUtf8(
                QJsonDocument(QJsonObject{{"jsonrpc", "2.0"}, {"id", 9}, {"method", "run.launch"}, {"params", params}})
                    .toJson(QJsonDocument::Compact));
        };
        const QString notRpc = QStringLiteral("not a JSON-RPC 2.0 request (jsonrpc \"2.0\", a string method, an id)");
        QTest::newRow("not JSON") << "{not json" << -32700 << ""
                                  << ""
                                  << "null";
        QTest::newRow("an array") << "[1, 2]" << -32600 << "a request is one JSON object"
                                  << ""
                                  << "null";
        QTest::newRow("no jsonrpc") << R"({"id":1,"method":"bridge.hello"})" << -32600 << notRpc << ""
                                    << "1";
        QTest::newRow("jsonrpc 1.0") << R"({"jsonrpc":"1.0","id":2,"method":"bridge.hello"})" << -32600 << notRpc << ""
                                     << "2";
        QTest::newRow("method a number") << R"({"jsonrpc":"2.0","id":3,"method":7})" << -32600 << notRpc << ""
                                         << "3";
        QTest::newRow("id an array") << R"({"jsonrpc":"2.0","id":[4],"method":"bridge.hello"})" << -32600 << notRpc
                                     << ""
                                     << "null";
        QTest::newRow("id an object") << R"({"jsonrpc":"2.0","id":{"n":4},"method":"bridge.hello"})" << -32600 << notRpc
                                      << ""
                                      << "null";
        QTest::newRow("params an array") << R"({"jsonrpc":"2.0","id":5,"method":"bridge.hello","params":[1]})" << -32602
                                         << "params must be an object"
                                         << "params"
                                         << "5";
        QTest::newRow("params a string") << R"({"jsonrpc":"2.0","id":5,"method":"runs.list","params":"all"})" << -32602
                                         << "params must be an object"
                                         << "params"
                                         << "5";
        QTest::newRow("a string id") << R"({"jsonrpc":"2.0","id":"six","method":"bridge.hello"})" << 0 << ""
                                     << ""
                                     << R"("six")";
        QTest::newRow("a null id") << R"({"jsonrpc":"2.0","id":null,"method":"bridge.hello"})" << 0 << ""
                                   << ""
                                   << "null";
        QTest::newRow("params left out") << R"({"jsonrpc":"2.0","id":7,"method":"bridge.hello"})" << 0 << ""
                                         << ""
                                         << "7";
        QTest::newRow("an empty run") << R"({"jsonrpc":"2.0","id":8,"method":"run.get","params":{"run":""}})" << -32602
                                      << "run: a run id"
                                      << "run"
                                      << "8";
        QTest::newRow("mode sideways") << launch({{"mode", "sideways"}}) << -32602
                                       << "mode: must be \"debug\" or \"submit\""
                                       << "mode"
                                       << "9";
        QTest::newRow("debug_rank below 0")
            << launch({{"debug_rank", -1}}) << -32602 << "debug_rank: must be a rank number"
            << "debug_rank"
            << "9";
        QTest::newRow("debug_rank a fraction")
            << launch({{"debug_rank", 0.5}}) << -32602 << "debug_rank: must be a rank number"
            << "debug_rank"
            << "9";
    }

    void eachBadRequestGetsItsError() {
        QFETCH(QString, request);
        QFETCH(int, code);
        QFETCH(QString, message);
        QFETCH(QString, field);
        QFETCH(QString, id);
        RpcClient client;
        QVERIFY(connectClient(client));
        client.sendRaw(request);
        QTRY_COMPARE(client.all.size(), 1);
        const QJsonObject answer = client.all.front();
        QCOMPARE(answer.value("jsonrpc").toString(), QStringLiteral("2.0"));
        QCOMPARE(answer.value("id"), QJsonDocument::fromJson("[" + id.toUtf8() + "]").array().at(0));
        if (code == 0) {
            QVERIFY2(answer.value("result").isObject(), QJsonDocument(answer).toJson().constData());
            QVERIFY(!answer.contains("error"));
            return;
        }
        const QJsonObject error = errorOf(answer);
        QCOMPARE(error.value("code").toInt(), code);
        if (!message.isEmpty())
            QCOMPARE(error.value("message").toString(), message);
        if (code == -32700)
            QVERIFY(error.value("data").toObject().value("offset").isDouble());
        if (field.isEmpty())
            QVERIFY(!error.value("data").toObject().contains("field"));
        else
            QCOMPARE(error.value("data").toObject().value("field").toString(), field);
        client.answers.clear(); // the call below may reuse the request's id
        QVERIFY(client.call(QStringLiteral("bridge.hello")).contains(QStringLiteral("result"))); // still served
    }

    void aNotificationIsNeverAnswered() {
        // A request without an id is a notification: carried out, never answered, errors included (JSON-RPC 2.0).
        RpcClient client;
        QVERIFY(connectClient(client));
        client.sendRaw(QStringLiteral(R"({"jsonrpc":"2.0","method":"bridge.hello"})"));
        client.sendRaw(QStringLiteral(R"({"jsonrpc":"2.0","method":"run.teleport"})"));
        client.sendRaw(QStringLiteral(R"({"jsonrpc":"2.0","method":"run.get","params":{"run":7}})"));
        const QJsonObject answer = client.call(QStringLiteral("bridge.hello"));
        QVERIFY(answer.contains(QStringLiteral("result")));
        QCOMPARE(client.all.size(), 1); // the call's answer; the bridge answers in order
        QCOMPARE(client.all.front(), answer);
    }

    void binaryAndOversizedMessages() {
        RpcClient client;
        QVERIFY(connectClient(client));
        client.socket.sendBinaryMessage(QByteArrayLiteral(R"({"jsonrpc":"2.0","id":1,"method":"bridge.hello"})"));
        QTRY_COMPARE(client.all.size(), 1);
        QCOMPARE(client.all.front().value("id"), QJsonValue(QJsonValue::Null));
        QCOMPARE(errorOf(client.all.front()).value("code").toInt(), -32600);
        QCOMPARE(errorOf(client.all.front()).value("message").toString(),
                 QStringLiteral("binary messages are not JSON-RPC"));

        // Beyond 64 MiB a message is not even taken in: the WebSocket is closed as too big (1009).
        QSignalSpy closed(&client.socket, &QWebSocket::disconnected);
        client.socket.sendBinaryMessage(QByteArray((64 << 20) + 1, 'x'));
        QVERIFY(closed.wait(30000));
        QCOMPARE(client.socket.closeCode(), QWebSocketProtocol::CloseCodeTooMuchData);
        QCOMPARE(client.all.size(), 1);
    }

    void badRequestsGetErrorsAndOthersAreStillServed() {
        RpcClient client;
        QVERIFY(connectClient(client));
        RpcClient other;
        QVERIFY(connectClient(other));

        client.sendRaw(QStringLiteral("{not json"));
        QTRY_VERIFY(client.answers.contains(-1));
        QCOMPARE(errorOf(client.answers.take(-1)).value("code").toInt(), -32700);

        client.sendRaw(QStringLiteral("[1, 2]"));
        QTRY_VERIFY(client.answers.contains(-1));
        QCOMPARE(errorOf(client.answers.take(-1)).value("code").toInt(), -32600);

        QJsonObject error = errorOf(client.call(QStringLiteral("run.teleport")));
        QCOMPARE(error.value("code").toInt(), -32601);
        QCOMPARE(error.value("data").toObject().value("method").toString(), QStringLiteral("run.teleport"));

        error = errorOf(client.call(QStringLiteral("run.logs"), {{"run", 42}}));
        QCOMPARE(error.value("code").toInt(), -32602);
        QCOMPARE(error.value("data").toObject().value("field").toString(), QStringLiteral("run"));

        error = errorOf(client.call(QStringLiteral("run.launch"), {{"job", 7}}));
        QCOMPARE(error.value("code").toInt(), -32602);
        QCOMPARE(error.value("data").toObject().value("field").toString(), QStringLiteral("job"));

        error = errorOf(client.call(QStringLiteral("run.launch"),
                                    {{"job", QJsonObject{{"version", 1}, {"nodes", QJsonArray{QJsonObject{
                                                                                   {"host", "a"}, {"port", 70000}}}}}}}));
        QCOMPARE(error.value("code").toInt(), -32602);
        bool named = false;
        for (const QJsonValue& issue : error.value("data").toObject().value("issues").toArray())
            named = named || issue.toObject().value("path").toString() == QLatin1String("nodes[0].port");
        QVERIFY2(named, QJsonDocument(error).toJson().constData());

        // Every method that names a run answers the same way for one that does not exist.
        for (const QString method : {"run.get", "run.subscribe", "run.unsubscribe", "run.attach", "run.stop", "run.logs"}) {
            error = errorOf(client.call(method, {{"run", "19990101-000000-dead"}, {"rank", 0}}));
            QVERIFY2(error.value("code").toInt() == -32001, qPrintable(method));
            QCOMPARE(error.value("data").toObject().value("run").toString(), QStringLiteral("19990101-000000-dead"));
        }

        // A huge message is refused with an error; the socket stays open and the others are served meanwhile.
        const int hugeId = client.nextId();
        client.sendRaw(QStringLiteral(R"({"jsonrpc":"2.0","id":%1,"method":"bridge.hello","params":{"pad":"%2"}})")
                           .arg(hugeId)
                           .arg(QString(5 << 20, QLatin1Char('x'))));
        QVERIFY(other.call(QStringLiteral("bridge.hello")).contains(QStringLiteral("result")));
        QTRY_VERIFY_WITH_TIMEOUT(client.answers.contains(-1), 20000);
        error = errorOf(client.answers.take(-1));
        QCOMPARE(error.value("code").toInt(), -32600);
        QCOMPARE(error.value("data").toObject().value("limit").toInt(), 4 << 20);
        QVERIFY(client.call(QStringLiteral("bridge.hello")).contains(QStringLiteral("result")));
    }

    void aRunIsFollowedFromLaunchToEnd() {
        RpcClient client;
        QVERIFY(connectClient(client));
        const QJsonObject launched = client.call(QStringLiteral("run.launch"),
                                                 {{"job", localJob(QStringLiteral("bridged"), 6)}, {"mode", "debug"}});
        const QString run = launched.value("result").toObject().value("run").toString();
        QVERIFY2(!run.isEmpty(), QJsonDocument(launched).toJson().constData());

        // The launching client is subscribed from the start: the end comes as a notification.
        QTRY_VERIFY_WITH_TIMEOUT(!client.received(QStringLiteral("run.finished")).isEmpty(), 120000);
        const QJsonObject finished = client.received(QStringLiteral("run.finished")).front();
        QCOMPARE(finished.value("run").toString(), run);
        QCOMPARE(finished.value("record").toObject().value("state").toString(), QStringLiteral("finished"));

        // Every step of both ranks arrived as an event, in order, each with its loss.
        QMap<int, QList<qint64>> steps;
        for (const QJsonObject& batch : client.received(QStringLiteral("run.events"))) {
            QCOMPARE(batch.value("run").toString(), run);
            for (const QJsonValue& value : batch.value("events").toArray()) {
                const QJsonObject event = value.toObject();
                if (event.value("type").toString() != QLatin1String("step"))
                    continue;
                QVERIFY(event.value("loss").isDouble());
                steps[event.value("rank").toInt()].append(event.value("step").toInteger());
            }
        }
        QCOMPARE(steps.keys(), (QList<int>{0, 1}));
        QCOMPARE(steps.value(0), (QList<qint64>{1, 2, 3, 4, 5, 6}));
        QCOMPARE(steps.value(1), (QList<qint64>{1, 2, 3, 4, 5, 6}));

        // Rank states end as finished, with the last step and loss.
        QMap<int, QJsonObject> ranks;
        for (const QJsonObject& batch : client.received(QStringLiteral("run.ranks")))
            for (const QJsonValue& value : batch.value("ranks").toArray())
                ranks[value.toObject().value("rank").toInt()] = value.toObject();
        QCOMPARE(ranks.size(), 2);
        for (const QJsonObject& rank : std::as_const(ranks)) {
            QCOMPARE(rank.value("state").toString(), QStringLiteral("finished"));
            QCOMPARE(rank.value("step").toInt(), 6);
            QVERIFY(rank.value("loss").isDouble());
            QCOMPARE(rank.value("host").toString(), QStringLiteral("localhost")); // the job's node, as diagnoses say
        }
        QVERIFY(!client.received(QStringLiteral("run.progress")).isEmpty());

        // The store pages a rank's streams by line number (the events file has the most lines here).
        const QJsonObject events{{"run", run}, {"rank", 0}, {"stream", "events"}};
        const auto logs = [&](QJsonObject params) {
            for (auto it = events.begin(); it != events.end(); ++it)
                if (!params.contains(it.key()))
                    params.insert(it.key(), it.value());
            return client.call(QStringLiteral("run.logs"), params).value("result").toObject();
        };
        QJsonObject page = logs({{"from", 1}, {"count", 2}});
        QCOMPARE(page.value("lines").toArray().size(), 2);
        QCOMPARE(page.value("lines").toArray().at(1).toObject().value("line").toInt(), 2);
        QCOMPARE(page.value("next").toInt(), 3);
        const int lines = page.value("total").toInt();
        QVERIFY(lines >= 8); // start, 6 steps, end at least
        page = logs({{"from", lines}, {"count", 10}});
        QCOMPARE(page.value("lines").toArray().size(), 1);
        QCOMPARE(page.value("next").toInt(), lines + 1);
        QFile stored(m_store->streamPath(run, 0, RankStream::Events));
        QVERIFY(stored.open(QIODevice::ReadOnly));
        const QList<QByteArray> storedLines = stored.readAll().split('\n');
        QCOMPARE(page.value("lines").toArray().at(0).toObject().value("text").toString(),
                 QString::fromUtf8(storedLines.at(lines - 1)));
        QVERIFY(page.value("lines").toArray().at(0).toObject().value("text").toString().startsWith("@rankscope {"));
        page = logs({{"from", lines + 5}});
        QCOMPARE(page.value("lines").toArray().size(), 0);
        QCOMPARE(page.value("next").toInt(), lines + 5); // where to ask again once the log grew
        // Paging parameters out of range name their field.
        const QList<std::pair<QJsonObject, QString>> badPages{
            {{{"from", 0}}, "from: line numbers start at 1"}, {{{"from", "one"}}, "from: a line number"},
            {{{"count", 10001}}, "count: must be 0-10000"},   {{{"count", -1}}, "count: must be 0-10000"},
            {{{"count", "all"}}, "count: a number of lines"}, {{{"rank", 0.5}}, "rank: a rank number"}};
        for (const auto& [params, message] : badPages) {
            QJsonObject asked = params;
            for (auto it = events.begin(); it != events.end(); ++it)
                if (!asked.contains(it.key()))
                    asked.insert(it.key(), it.value());
            const QJsonObject bad = errorOf(client.call(QStringLiteral("run.logs"), asked));
            QCOMPARE(bad.value("code").toInt(), -32602);
            QCOMPARE(bad.value("message").toString(), message);
            QCOMPARE(bad.value("data").toObject().value("field").toString(), message.section(QLatin1Char(':'), 0, 0));
        }
        // What a rank said on stderr comes the same way.
        QFile err(m_store->streamPath(run, 1, RankStream::Err));
        QVERIFY(err.open(QIODevice::ReadOnly));
        page = logs({{"rank", 1}, {"stream", "err"}});
        QCOMPARE(page.value("total").toInt(), err.readAll().count('\n'));

        QJsonObject error = errorOf(client.call(QStringLiteral("run.logs"), {{"run", run}, {"rank", 2}}));
        QCOMPARE(error.value("code").toInt(), -32004);
        QCOMPARE(error.value("data").toObject().value("rank").toInt(), 2);
        error = errorOf(client.call(QStringLiteral("run.logs"), {{"run", run}, {"rank", 0}, {"stream", "stdout"}}));
        QCOMPARE(error.value("data").toObject().value("field").toString(), QStringLiteral("stream"));

        // Listed, no longer active; stopping it is refused with its state.
        bool listed = false;
        for (const QJsonValue& value : client.call(QStringLiteral("runs.list")).value("result").toObject().value("runs").toArray())
            if (value.toObject().value("id").toString() == run) {
                listed = true;
                QCOMPARE(value.toObject().value("active").toBool(), false);
                QVERIFY(!value.toObject().contains("job"));
            }
        QVERIFY(listed);
        error = errorOf(client.call(QStringLiteral("run.stop"), {{"run", run}}));
        QCOMPARE(error.value("code").toInt(), -32002);
        QCOMPARE(error.value("data").toObject().value("state").toString(), QStringLiteral("finished"));

        // Another client asking later gets the same picture from the store.
        RpcClient late;
        QVERIFY(connectClient(late));
        const QJsonObject snapshot = late.call(QStringLiteral("run.subscribe"), {{"run", run.left(17)}}).value("result").toObject();
        QCOMPARE(snapshot.value("run").toObject().value("id").toString(), run);
        QCOMPARE(snapshot.value("ranks").toArray().size(), 2);
        for (const QJsonValue& rank : snapshot.value("ranks").toArray())
            QCOMPARE(rank.toObject().value("host").toString(), QStringLiteral("localhost"));
    }

    void aRunIsStoppedFromAClient() {
        RpcClient client;
        QVERIFY(connectClient(client));
        // A run that goes on until it is stopped: one that ends by itself (the debug cap, one epoch of the synthetic
        // data) races the stop, and a loaded machine loses that race.
        const QJsonObject job = localJob(QStringLiteral("to-stop"), 100000, {{"epochs", 1000}});
        const QString run = launchRun(client, {{"job", job}});
        QVERIFY(!run.isEmpty());
        const auto end = qScopeGuard([&run] { endProcessesOf(run); }); // also when a check below fails
        // Wait for training to start, then stop from a second client.
        QTRY_VERIFY_WITH_TIMEOUT(!client.received(QStringLiteral("run.events")).isEmpty(), 60000);
        RpcClient other;
        QVERIFY(connectClient(other));
        // The second client looks in and leaves: it hears nothing of the run after that.
        QVERIFY(other.call(QStringLiteral("run.subscribe"), {{"run", run}}).contains(QStringLiteral("result")));
        QTRY_VERIFY_WITH_TIMEOUT(!other.received(QStringLiteral("run.events")).isEmpty(), 30000);
        QCOMPARE(other.call(QStringLiteral("run.unsubscribe"), {{"run", run}})
                     .value("result")
                     .toObject()
                     .value("run")
                     .toString(),
                 run);
        other.notifications.clear();
        const QJsonObject stopped = other.call(QStringLiteral("run.stop"), {{"run", run}});
        QVERIFY2(stopped.value("result").toObject().value("stopping").toBool(),
                 QJsonDocument(stopped).toJson(QJsonDocument::Compact).constData());
        QTRY_VERIFY_WITH_TIMEOUT(!client.received(QStringLiteral("run.finished")).isEmpty(), 60000);
        QCOMPARE(client.endState(),
                 QStringLiteral("stopped"));
        QVERIFY2(!processesOf(run), "the run left processes behind");
        QTest::qWait(200); // what went to the subscriber at the end would have reached the other one by now
        QVERIFY2(other.notifications.isEmpty(),
                 QJsonDocument(other.notifications.front()).toJson(QJsonDocument::Compact).constData());
    }

    void aRunLeftByAnotherBridgeIsAttached() {
        // An editor's bridge that stops leaves its runs going; another bridge attaches and follows one to its end.
        QString run;
        QString connectionFile;
        const auto end = qScopeGuard([&run] { endProcessesOf(run); }); // also when a check below fails
        {
            const bridge::BridgeOptions options = bridgeOptions(QStringLiteral("runtime-first"));
            bridge::BridgeServer first(m_store.get(), options);
            QString error;
            QVERIFY2(first.listen(&error), qPrintable(error));
            connectionFile = first.connectionFile();
            RpcClient client;
            QVERIFY(client.open(QUrl(first.url()), tokenOf(first)));
            const QJsonObject job = localJob(QStringLiteral("left"), 100000, {{"epochs", 1000}});
            run = launchRun(client, {{"job", job}});
            QVERIFY(!run.isEmpty());
            QTRY_VERIFY_WITH_TIMEOUT(!client.received(QStringLiteral("run.events")).isEmpty(), 60000);
        }
        QVERIFY2(processesOf(run), "the run did not go on");
        QVERIFY2(!QFile::exists(connectionFile), "a stopped bridge left its connection file");

        RpcClient client;
        QVERIFY(connectClient(client));
        const QJsonObject attached =
            client.call(QStringLiteral("run.attach"), {{"run", run}}, 30000).value("result").toObject();
        QCOMPARE(attached.value("run").toString(), run);
        QCOMPARE(attached.value("state").toString(), QStringLiteral("running"));
        // Attaching subscribes: the steps it takes from now on arrive.
        QTRY_VERIFY_WITH_TIMEOUT(!client.received(QStringLiteral("run.events")).isEmpty(), 60000);
        bool active = false;
        for (const QJsonValue& value :
             client.call(QStringLiteral("runs.list")).value("result").toObject().value("runs").toArray())
            active =
                active || (value.toObject().value("id").toString() == run && value.toObject().value("active").toBool());
        QVERIFY(active);
        QVERIFY(client.call(QStringLiteral("run.stop"), {{"run", run}})
                    .value("result")
                    .toObject()
                    .value("stopping")
                    .toBool());
        QTRY_VERIFY_WITH_TIMEOUT(!client.received(QStringLiteral("run.finished")).isEmpty(), 60000);
        QCOMPARE(client.endState(),
                 QStringLiteral("stopped"));
        QVERIFY2(!processesOf(run), "the run left processes behind");
    }

    void aFailedRankIsToldToTheClient() {
        RpcClient client;
        QVERIFY(connectClient(client));
        const QJsonObject job =
            localJob(QStringLiteral("failing"), 200,
                     {{"extra_args", QJsonArray{"--fail-at-step", "4", "--fail-rank", "1", "--timeout-s", "5"}}});
        const QString run = launchRun(client, {{"job", job}});
        QVERIFY(!run.isEmpty());
        QTRY_VERIFY_WITH_TIMEOUT(!client.received(QStringLiteral("run.finished")).isEmpty(), 120000);
        QCOMPARE(client.endState(),
                 QStringLiteral("failed"));

        // The root cause, as a notification: rank 1, with what it said last.
        QJsonObject cause;
        for (const QJsonObject& batch : client.received(QStringLiteral("run.diagnoses")))
            for (const QJsonValue& value : batch.value("diagnoses").toArray())
                if (value.toObject().value("kind").toString() == QLatin1String("root-cause"))
                    cause = value.toObject();
        QVERIFY2(!cause.isEmpty(), "no root cause was sent");
        QCOMPARE(cause.value("ranks").toArray(), QJsonArray{1});
        QCOMPARE(cause.value("last_lines").toArray().last().toObject().value("text").toString(),
                 QStringLiteral("[rank 1] error: injected failure at step 4 (--fail-at-step)"));

        // Rank 1's last state: failed, its exit status, the finding's message and key; no line of the events
        // stream among the log lines.
        QMap<int, QJsonObject> ranks;
        for (const QJsonObject& batch : client.received(QStringLiteral("run.ranks")))
            for (const QJsonValue& value : batch.value("ranks").toArray())
                ranks[value.toObject().value("rank").toInt()] = value.toObject();
        const QJsonObject failed = ranks.value(1);
        QCOMPARE(failed.value("state").toString(), QStringLiteral("failed"));
        QCOMPARE(failed.value("exit_status").toInt(-1), 1);
        QCOMPARE(failed.value("diagnosis").toString(), cause.value("key").toString());
        QCOMPARE(failed.value("reason").toString(), cause.value("message").toString());
        for (const QJsonObject& batch : client.received(QStringLiteral("run.logLines")))
            for (const QJsonValue& value : batch.value("lines").toArray())
                QVERIFY2(value.toObject().value("stream").toString() != QLatin1String("events"),
                         qPrintable(value.toObject().value("text").toString()));

        // A bridge that did not follow the run shows it from the store: the same rank state, and its end is
        // history: no run.finished for a subscriber.
        const bridge::BridgeOptions options = bridgeOptions(QStringLiteral("runtime-later"));
        bridge::BridgeServer later(m_store.get(), options);
        QString error;
        QVERIFY2(later.listen(&error), qPrintable(error));
        RpcClient reader;
        QVERIFY(reader.open(QUrl(later.url()), tokenOf(later)));
        const QJsonObject snapshot =
            reader.call(QStringLiteral("run.subscribe"), {{"run", run}}).value("result").toObject();
        QCOMPARE(snapshot.value("run").toObject().value("state").toString(), QStringLiteral("failed"));
        QJsonObject stored;
        for (const QJsonValue& value : snapshot.value("ranks").toArray())
            if (value.toObject().value("rank").toInt() == 1)
                stored = value.toObject();
        QCOMPARE(stored.value("state").toString(), QStringLiteral("failed"));
        QCOMPARE(stored.value("exit_status").toInt(-1), 1);
        QTest::qWait(300); // two ticks
        QVERIFY2(reader.received(QStringLiteral("run.finished")).isEmpty(), "an old run's end was sent as news");
    }

    void aRankIsDebuggedThroughTheBridge() {
        if (QStandardPaths::findExecutable(QStringLiteral("gdbserver")).isEmpty() ||
            QStandardPaths::findExecutable(QStringLiteral("gdb")).isEmpty())
            QSKIP("gdb and gdbserver are needed (scripts/packages.txt installs them)");
        RpcClient client;
        QVERIFY(connectClient(client));
        QJsonObject error = errorOf(client.call(QStringLiteral("run.launch"),
                                                {{"job", localJob(QStringLiteral("debug-bad"), 4)}, {"debug_rank", 5}}));
        QCOMPARE(error.value("code").toInt(), -32003);
        QVERIFY2(error.value("message").toString().contains(QLatin1String("5")), qPrintable(error.value("message").toString()));
        QCOMPARE(error.value("data").toObject().value("rank").toInt(-1), 5);
        error = errorOf(client.call(QStringLiteral("run.launch"),
                                    {{"job", localJob(QStringLiteral("debug-bad"), 4)}, {"debug_rank", "one"}}));
        QCOMPARE(error.value("data").toObject().value("field").toString(), QStringLiteral("debug_rank"));

        const QString run = launchRun(client, {{"job", localJob(QStringLiteral("debugged"), 4)}, {"debug_rank", 1}});
        QVERIFY(!run.isEmpty());
        QTRY_VERIFY_WITH_TIMEOUT(!client.received(QStringLiteral("run.debugReady")).isEmpty(), 60000);
        const QJsonObject ready = client.received(QStringLiteral("run.debugReady")).front();
        QCOMPARE(ready.value("run").toString(), run);
        QCOMPARE(ready.value("rank").toInt(), 1);
        QVERIFY(ready.value("address").toString().startsWith(QLatin1String("127.0.0.1:")));
        QVERIFY(QFileInfo(ready.value("program").toString()).isExecutable());
        QVERIFY(ready.value("gdb_command").toString().contains(ready.value("address").toString()));
        // A client that comes later finds it in the run's snapshot.
        RpcClient late;
        QVERIFY(connectClient(late));
        QCOMPARE(late.call(QStringLiteral("run.get"), {{"run", run}}).value("result").toObject().value("debug").toObject().value("address"),
                 ready.value("address"));

        // gdb through the address the bridge handed out: a breakpoint in the step function, the step read.
        QProcess gdb;
        gdb.setProcessChannelMode(QProcess::MergedChannels);
        gdb.start(QStringLiteral("gdb"),
                  {"--batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off", "-ex",
                   "target remote " + ready.value("address").toString(), "-ex", "break Trainer::trainStep", "-ex",
                   "continue", "-ex", "print m_state.globalStep", "-ex", "detach", ready.value("program").toString()});
        QVERIFY(QTest::qWaitFor([&] { return gdb.state() == QProcess::NotRunning; }, 120000));
        const QString output = QString::fromUtf8(gdb.readAll());
        QVERIFY2(output.contains(QLatin1String("Breakpoint 1, ")) && output.contains(QLatin1String("trainStep")),
                 qPrintable(output));
        QVERIFY2(QRegularExpression(QStringLiteral("\\$1 = 0\\b")).match(output).hasMatch(), qPrintable(output));

        // Detached, the rank trains on and the run ends as usual.
        QTRY_VERIFY_WITH_TIMEOUT(!client.received(QStringLiteral("run.finished")).isEmpty(), 120000);
        QCOMPARE(client.received(QStringLiteral("run.debugReady")).size(), 1); // said once
        QCOMPARE(client.endState(),
                 QStringLiteral("finished"));
        QVERIFY2(!processesOf(run), "the run left processes behind");
    }

    void aClientThatStopsReadingDoesNotHoldUpTheOthers() {
        // A "trainer" that floods stdout: far more than the kernel's socket buffers hold.
        const QString flood = m_dir.filePath(QStringLiteral("flood.sh"));
        QFile script(flood);
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write("#!/bin/sh\n"
                     "rank=0\n"
                     "while [ $# -gt 0 ]; do\n"
                     "  [ \"$1\" = --rank ] && rank=$2\n"
                     "  [ \"$1\" = --events ] && events=$2\n"
                     "  shift\n"
                     "done\n"
                     "echo 'a line that is no event' >> \"$events\"\n" // stored; not sent as a log line
                     "seq -f \"rank $rank line %.0f: the quick brown fox jumps over the lazy dog, again and again\" "
                     "1 100000\n"
                     "exit 3\n"); // each fails once it said everything: findings the stalled client must not lose
        script.close();
        script.setPermissions(script.permissions() | QFileDevice::ExeOwner);
        bridge::BridgeOptions options = bridgeOptions(QStringLiteral("runtime-flood"));
        options.engine.localTrainer = flood;
        // The reader shares this thread with the bridge and the engine: at the 50 ms tick it had to take in 10,000
        // lines (about 1.8 MB of JSON) every 50 ms, which a busy two-core machine did not always manage, and so it
        // fell behind and lost lines by right. A slower tick leaves it four times the time, and the stalled client
        // still overflows its queue many times over (about 30 MB in all).
        options.tickMs = 200;
        bridge::BridgeServer server(m_store.get(), options);
        QString error;
        QVERIFY2(server.listen(&error), qPrintable(error));
        const QByteArray token = tokenOf(server);
        QCOMPARE(token.size(), 64);

        RpcClient reader;
        QVERIFY(reader.open(QUrl(server.url()), token));
        const QString run = launchRun(reader, {{"job", localJob(QStringLiteral("flood"), 1)}});
        QVERIFY(!run.isEmpty());
        StalledClient stalled;
        QVERIFY(stalled.open(server.port(), token));
        stalled.sendText(QStringLiteral(R"({"jsonrpc":"2.0","id":1,"method":"run.subscribe","params":{"run":"%1"}})")
                             .arg(run)
                             .toUtf8());
        stalled.stall();

        QTRY_VERIFY_WITH_TIMEOUT(!reader.received(QStringLiteral("run.finished")).isEmpty(), 120000);
        // The reader got every line of both ranks, in order, though the other client read nothing.
        QMap<int, qint64> last;
        qint64 lines = 0;
        for (const QJsonObject& batch : reader.received(QStringLiteral("run.logLines")))
            for (const QJsonValue& value : batch.value("lines").toArray()) {
                const QJsonObject line = value.toObject();
                QVERIFY2(line.value("stream").toString() != QLatin1String("events"),
                         qPrintable(line.value("text").toString()));
                if (line.value("stream").toString() != QLatin1String("out"))
                    continue;
                const int rank = line.value("rank").toInt();
                QCOMPARE(line.value("line").toInteger(), last.value(rank) + 1);
                last[rank] = line.value("line").toInteger();
                ++lines;
            }
        QCOMPARE(last.value(0), 100000);
        QCOMPARE(last.value(1), 100000);
        QCOMPARE(lines, 200000);
        QJsonObject page =
            reader.call(QStringLiteral("run.logs"), {{"run", run}, {"rank", 1}}).value("result").toObject();
        QCOMPARE(page.value("lines").toArray().size(), 1000); // by default
        QCOMPARE(page.value("next").toInt(), 1001);
        page = reader.call(QStringLiteral("run.logs"), {{"run", run}, {"rank", 1}, {"from", 1001}, {"count", 10000}})
                   .value("result")
                   .toObject();
        QCOMPARE(page.value("lines").toArray().size(), 10000);
        QCOMPARE(page.value("lines").toArray().at(0).toObject().value("text").toString(),
                 QStringLiteral("rank 1 line 1001: the quick brown fox jumps over the lazy dog, again and again"));
        QVERIFY(reader.received(QStringLiteral("bridge.fellBehind")).isEmpty());

        // The stalled client, once it reads again, is told it fell behind and by how much.
        const QByteArray backlog = stalled.drain(3000);
        QVERIFY2(backlog.contains("\"method\":\"bridge.fellBehind\""), backlog.right(300).constData());
        QVERIFY(backlog.contains(run.toUtf8()));
        QVERIFY2(backlog.contains("\"method\":\"run.finished\""), "the end of the run is never dropped");
        QVERIFY2(backlog.contains("\"method\":\"run.diagnoses\""), "a finding is never dropped");
    }
};

QTEST_GUILESS_MAIN(tst_Bridge)
#include "tst_bridge.moc"
