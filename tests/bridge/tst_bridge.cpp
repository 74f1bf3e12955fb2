// SPDX-License-Identifier: MIT
// The IDE bridge with real WebSocket clients, the real run engine and the real trainer on this machine: the
// token and the connection file, JSON-RPC answers and errors, a run followed from launch to end, paging of a
// rank's log, and a client that stops reading while another keeps up.
#include "plugins/bridge/bridgeserver.h"

#include <QDeadlineTimer>
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
#include <QStandardPaths>
#include <QSignalSpy>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QWebSocket>

#include <sys/stat.h>

using namespace rankscope;

namespace {

const QString kTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");

// A WebSocket client that collects every message and answers requests by id.
class RpcClient final : public QObject {
public:
    explicit RpcClient(QObject* parent = nullptr) : QObject(parent) {
        connect(&socket, &QWebSocket::textMessageReceived, this, [this](const QString& text) {
            const QJsonObject message = QJsonDocument::fromJson(text.toUtf8()).object();
            if (message.contains(QStringLiteral("id")))
                answers.insert(message.value(QStringLiteral("id")).toInt(-1), message);
            else
                notifications.append(message);
        });
    }

    // Opens and waits for the handshake; false when the bridge closed it (closeCode says why).
    bool open(const QUrl& url, const QByteArray& bearer = {}) {
        QNetworkRequest request(url);
        if (!bearer.isEmpty())
            request.setRawHeader("Authorization", "Bearer " + bearer);
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

    QWebSocket socket;
    QHash<int, QJsonObject> answers;
    QList<QJsonObject> notifications;

private:
    int m_nextId = 0;
};

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
    QJsonObject localJob(const QString& name, int steps) const {
        return QJsonObject{{"version", 1},
                           {"name", name},
                           {"mode", "debug"},
                           {"trainer", QJsonObject{{"dataset", "synthetic"},
                                                   {"model", "mlp"},
                                                   {"epochs", 1},
                                                   {"max_steps", steps},
                                                   {"batch_size", 16},
                                                   {"backend", "gloo"},
                                                   {"device", "cpu"}}},
                           // No debug cap (20 steps by default): `steps` is what the trainer runs.
                           {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"max_steps", 0}, {"verbose", false}}}};
    }
    bool connectClient(RpcClient& client) { return client.open(url(), m_token); }

private slots:
    void initTestCase() {
        qRegisterMetaType<RunRecord>();
        QVERIFY(QFileInfo(kTrainer).isExecutable());
        m_store = std::make_unique<RunStore>(m_dir.filePath(QStringLiteral("store")));
        bridge::BridgeOptions options;
        options.runtimeDir = m_dir.filePath(QStringLiteral("runtime"));
        options.engine.localTrainer = kTrainer;
        options.engine.sshConfigPath = QStringLiteral("none");
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
    }
    void cleanupTestCase() {
        m_bridge.reset();
        QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-f"), m_dir.path()});
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
        const QJsonObject launched =
            client.call(QStringLiteral("run.launch"), {{"job", localJob(QStringLiteral("bridged"), 6)}});
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
        QCOMPARE(logs({{"from", lines + 5}}).value("lines").toArray().size(), 0);
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
        QJsonObject job = localJob(QStringLiteral("to-stop"), 100000);
        QJsonObject trainer = job.value("trainer").toObject();
        trainer.insert("epochs", 1000);
        job.insert("trainer", trainer);
        const QString run = client.call(QStringLiteral("run.launch"), {{"job", job}})
                                .value("result")
                                .toObject()
                                .value("run")
                                .toString();
        QVERIFY(!run.isEmpty());
        // Wait for training to start, then stop from a second client.
        QTRY_VERIFY_WITH_TIMEOUT(!client.received(QStringLiteral("run.events")).isEmpty(), 60000);
        RpcClient other;
        QVERIFY(connectClient(other));
        const QJsonObject stopped = other.call(QStringLiteral("run.stop"), {{"run", run}});
        QVERIFY2(stopped.value("result").toObject().value("stopping").toBool(),
                 QJsonDocument(stopped).toJson(QJsonDocument::Compact).constData());
        QTRY_VERIFY_WITH_TIMEOUT(!client.received(QStringLiteral("run.finished")).isEmpty(), 60000);
        QCOMPARE(client.received(QStringLiteral("run.finished")).front().value("record").toObject().value("state").toString(),
                 QStringLiteral("stopped"));
        QCOMPARE(QProcess::execute(QStringLiteral("pgrep"), {QStringLiteral("-f"), run}), 1); // nothing left
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
        error = errorOf(client.call(QStringLiteral("run.launch"),
                                    {{"job", localJob(QStringLiteral("debug-bad"), 4)}, {"debug_rank", "one"}}));
        QCOMPARE(error.value("data").toObject().value("field").toString(), QStringLiteral("debug_rank"));

        const QString run = client.call(QStringLiteral("run.launch"),
                                        {{"job", localJob(QStringLiteral("debugged"), 4)}, {"debug_rank", 1}})
                                .value("result")
                                .toObject()
                                .value("run")
                                .toString();
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
        QCOMPARE(client.received(QStringLiteral("run.finished")).front().value("record").toObject().value("state").toString(),
                 QStringLiteral("finished"));
        QCOMPARE(QProcess::execute(QStringLiteral("pgrep"), {QStringLiteral("-f"), run}), 1);
    }

    void aClientThatStopsReadingDoesNotHoldUpTheOthers() {
        // A "trainer" that floods stdout: far more than the kernel's socket buffers hold.
        const QString flood = m_dir.filePath(QStringLiteral("flood.sh"));
        QFile script(flood);
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write("#!/bin/sh\n"
                     "rank=0\n"
                     "while [ $# -gt 0 ]; do [ \"$1\" = --rank ] && rank=$2; shift; done\n"
                     "seq -f \"rank $rank line %.0f: the quick brown fox jumps over the lazy dog, again and again\" "
                     "1 100000\n");
        script.close();
        script.setPermissions(script.permissions() | QFileDevice::ExeOwner);
        bridge::BridgeOptions options;
        options.runtimeDir = m_dir.filePath(QStringLiteral("runtime-flood"));
        options.engine.localTrainer = flood;
        bridge::BridgeServer server(m_store.get(), options);
        QString error;
        QVERIFY2(server.listen(&error), qPrintable(error));
        QFile file(server.connectionFile());
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray token = QJsonDocument::fromJson(file.readAll()).object().value("token").toString().toLatin1();

        RpcClient reader;
        QVERIFY(reader.open(QUrl(server.url()), token));
        const QString run = reader.call(QStringLiteral("run.launch"), {{"job", localJob(QStringLiteral("flood"), 1)}})
                                .value("result")
                                .toObject()
                                .value("run")
                                .toString();
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
        QVERIFY(reader.received(QStringLiteral("bridge.fellBehind")).isEmpty());

        // The stalled client, once it reads again, is told it fell behind and by how much.
        const QByteArray backlog = stalled.drain(3000);
        QVERIFY2(backlog.contains("\"method\":\"bridge.fellBehind\""), backlog.right(300).constData());
        QVERIFY(backlog.contains(run.toUtf8()));
    }
};

QTEST_GUILESS_MAIN(tst_Bridge)
#include "tst_bridge.moc"
