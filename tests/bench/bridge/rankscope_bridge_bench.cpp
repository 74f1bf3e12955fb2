// SPDX-License-Identifier: MIT
// Latency from a trainer event's `time` to the moment a bridge client holds it, for 1 and 10 clients, beside
// the baseline of the same path without the bridge: the engine's own `events` signal, which is what the desktop
// app receives. A real 2-rank local run of the trainer in each round; the clients run on a thread of their own,
// as a separate editor process would. Run by `tests/bench/run bridge`; prints a markdown table.
#include "plugins/bridge/bridgeserver.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkRequest>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <QWebSocket>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>

using namespace rankscope;

namespace {

double wallSeconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

QJsonObject benchJob(int steps) {
    // Rank 0 sleeps 20 ms a step: about 40 steps a second, a trainer's rate rather than a flood.
    return QJsonObject{{"version", 1},
                       {"name", "bridge-bench"},
                       {"mode", "debug"},
                       {"trainer", QJsonObject{{"dataset", "synthetic"},
                                               {"model", "mlp"},
                                               {"epochs", 1},
                                               {"max_steps", steps},
                                               {"batch_size", 16},
                                               {"backend", "gloo"},
                                               {"device", "cpu"},
                                               {"extra_args", QJsonArray{"--slow-rank", "0", "--slow-ms", "20"}}}},
                       {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"verbose", false}, {"max_steps", steps}}}};
}

// Latencies of step events, in milliseconds, gathered from any thread.
struct Samples {
    std::mutex mutex;
    std::vector<double> ms;
    void add(const QJsonArray& events, double now) {
        std::lock_guard<std::mutex> lock(mutex);
        for (const QJsonValue& value : events) {
            const QJsonObject event = value.toObject();
            if (event.value(QStringLiteral("type")).toString() == QLatin1String("step"))
                ms.push_back((now - event.value(QStringLiteral("time")).toDouble()) * 1000.0);
        }
    }
};

// N WebSocket clients on the thread this object lives on. The first launches the job; the others subscribe.
class ClientPool final : public QObject {
public:
    ClientPool(QUrl url, QByteArray token, int count, Samples* samples)
        : m_url(std::move(url)), m_token(std::move(token)), m_count(count), m_samples(samples) {}

    void start(const QJsonObject& job) {
        for (int i = 0; i < m_count; ++i) {
            auto* socket = new QWebSocket(QString(), QWebSocketProtocol::VersionLatest, this);
            m_sockets.append(socket);
            connect(socket, &QWebSocket::textMessageReceived, this, [this, socket, job](const QString& text) {
                const double now = wallSeconds();
                const QJsonObject message = QJsonDocument::fromJson(text.toUtf8()).object();
                const QString method = message.value(QStringLiteral("method")).toString();
                if (method == QLatin1String("run.events")) {
                    m_samples->add(message.value(QStringLiteral("params")).toObject().value(QStringLiteral("events")).toArray(), now);
                } else if (method == QLatin1String("run.finished")) {
                    const QJsonObject record = message.value(QStringLiteral("params")).toObject().value(QStringLiteral("record")).toObject();
                    if (record.value(QStringLiteral("state")).toString() != QLatin1String("finished")) {
                        std::fprintf(stderr, "run %s\n", qPrintable(record.value(QStringLiteral("summary")).toString()));
                        QMetaObject::invokeMethod(QCoreApplication::instance(), [] { QCoreApplication::instance()->exit(1); });
                    } else if (++m_finished == m_count)
                        QMetaObject::invokeMethod(QCoreApplication::instance(), [] { QCoreApplication::instance()->exit(0); });
                } else if (message.value(QStringLiteral("id")).toInt() == 1 && socket == m_sockets.front()) {
                    const QString run = message.value(QStringLiteral("result")).toObject().value(QStringLiteral("run")).toString();
                    if (run.isEmpty()) {
                        std::fprintf(stderr, "launch failed: %s\n", text.toUtf8().constData());
                        QMetaObject::invokeMethod(QCoreApplication::instance(), [] { QCoreApplication::instance()->exit(1); });
                        return;
                    }
                    for (QWebSocket* other : std::as_const(m_sockets))
                        if (other != socket)
                            other->sendTextMessage(QString::fromUtf8(QJsonDocument(QJsonObject{
                                {"jsonrpc", "2.0"}, {"id", 2}, {"method", "run.subscribe"}, {"params", QJsonObject{{"run", run}}}})
                                                                         .toJson(QJsonDocument::Compact)));
                }
            });
            connect(socket, &QWebSocket::connected, this, [this, socket, job] {
                if (++m_connected < m_count)
                    return;
                m_sockets.front()->sendTextMessage(QString::fromUtf8(
                    QJsonDocument(QJsonObject{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "run.launch"}, {"params", QJsonObject{{"job", job}}}})
                        .toJson(QJsonDocument::Compact)));
                Q_UNUSED(socket);
            });
            QNetworkRequest request(m_url);
            request.setRawHeader("Authorization", "Bearer " + m_token);
            socket->open(request);
        }
    }

private:
    QUrl m_url;
    QByteArray m_token;
    int m_count;
    Samples* m_samples;
    QVector<QWebSocket*> m_sockets;
    int m_connected = 0;
    int m_finished = 0;
};

struct Row {
    QString name;
    size_t samples = 0;
    double p50 = 0, p99 = 0, max = 0;
};

Row summarize(const QString& name, std::vector<double> ms) {
    Row row{name, ms.size()};
    if (ms.empty())
        return row;
    std::sort(ms.begin(), ms.end());
    const auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<size_t>(q * double(ms.size())))]; };
    row.p50 = at(0.50);
    row.p99 = at(0.99);
    row.max = ms.back();
    return row;
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    qRegisterMetaType<RunRecord>();
    QCommandLineParser parser;
    parser.addHelpOption();
    const QCommandLineOption stepsOption(QStringLiteral("steps"), QStringLiteral("Steps per round (default 200)."),
                                         QStringLiteral("N"), QStringLiteral("200"));
    const QCommandLineOption trainerOption(QStringLiteral("trainer"), QStringLiteral("rankscope-trainer to run."),
                                           QStringLiteral("PATH"));
    const QCommandLineOption roundsOption(QStringLiteral("rounds"),
                                          QStringLiteral("Rounds, the three paths interleaved in each (default 3)."),
                                          QStringLiteral("N"), QStringLiteral("3"));
    parser.addOptions({stepsOption, trainerOption, roundsOption});
    parser.process(app);
    const int steps = parser.value(stepsOption).toInt();
    const QJsonObject jobJson = benchJob(steps);
    QTemporaryDir dir;
    RunStore store(dir.filePath(QStringLiteral("store")));
    remote::EngineOptions engineOptions;
    engineOptions.sshConfigPath = QStringLiteral("none");
    if (parser.isSet(trainerOption))
        engineOptions.localTrainer = QFileInfo(parser.value(trainerOption)).absoluteFilePath();
    const int rounds = std::max(1, parser.value(roundsOption).toInt());
    QVector<QVector<Row>> perRound;
    for (int round = 0; round < rounds; ++round) {
    QVector<Row> rows;

    // Baseline: the engine's own signal, on its thread, as the desktop app gets it.
    {
        const JobParseResult parsed = parseJob(QJsonDocument(jobJson).toJson());
        if (!parsed.ok()) {
            std::fprintf(stderr, "bad bench job\n");
            return 1;
        }
        remote::RunEngine engine(&store, engineOptions);
        Samples samples;
        QObject::connect(&engine, &remote::RunEngine::events, [&samples](const QVector<TrainerEvent>& events) {
            const double now = wallSeconds();
            QJsonArray array;
            for (const TrainerEvent& event : events)
                array.append(event.fields);
            samples.add(array, now);
        });
        QObject::connect(&engine, &remote::RunEngine::finished, &app, [] { QCoreApplication::exit(0); });
        QString error;
        if (!engine.launch(*parsed.job, RunMode::Debug, &error)) {
            std::fprintf(stderr, "launch: %s\n", qPrintable(error));
            return 1;
        }
        app.exec();
        if (engine.record().state != QLatin1String("finished")) {
            std::fprintf(stderr, "baseline run %s: %s\n", qPrintable(engine.record().state), qPrintable(engine.record().summary));
            return 1;
        }
        rows.append(summarize(QStringLiteral("engine signal (no bridge; the app's path)"), samples.ms));
    }

    for (const int clients : {1, 10}) {
        bridge::BridgeOptions options;
        options.runtimeDir = dir.filePath(QStringLiteral("runtime"));
        options.engine = engineOptions;
        bridge::BridgeServer server(&store, options);
        QString error;
        if (!server.listen(&error)) {
            std::fprintf(stderr, "listen: %s\n", qPrintable(error));
            return 1;
        }
        QFile file(server.connectionFile());
        file.open(QIODevice::ReadOnly);
        const QByteArray token = QJsonDocument::fromJson(file.readAll()).object().value("token").toString().toLatin1();
        Samples samples;
        QThread thread;
        auto* pool = new ClientPool(QUrl(server.url()), token, clients, &samples);
        pool->moveToThread(&thread);
        QObject::connect(&thread, &QThread::finished, pool, &QObject::deleteLater);
        thread.start();
        QMetaObject::invokeMethod(pool, [pool, jobJson] { pool->start(jobJson); });
        const int code = app.exec();
        thread.quit();
        thread.wait();
        if (code != 0)
            return code;
        rows.append(summarize(QStringLiteral("bridge, %1 client%2").arg(clients).arg(clients > 1 ? "s" : ""), samples.ms));
    }
    perRound.append(rows);
    }

    // Per path, the median over rounds of each round's p50, p99 and max; the ratio is taken within each round.
    const auto median = [](std::vector<double> values) {
        std::sort(values.begin(), values.end());
        return values.empty() ? 0.0 : values[values.size() / 2];
    };
    QVector<Row> rows;
    std::vector<double> ratios[3];
    for (int path = 0; path < perRound.front().size(); ++path) {
        std::vector<double> p50, p99, max;
        Row row = perRound.front()[path];
        row.samples = 0;
        for (const QVector<Row>& round : std::as_const(perRound)) {
            p50.push_back(round[path].p50);
            p99.push_back(round[path].p99);
            max.push_back(round[path].max);
            row.samples += round[path].samples;
            ratios[path].push_back(round[0].p99 > 0 ? round[path].p99 / round[0].p99 : 0.0);
        }
        row.p50 = median(p50);
        row.p99 = median(p99);
        row.max = median(max);
        rows.append(row);
    }

    std::printf("Latency from a step event's `time` to its delivery (2-rank local run, %d steps at ~40 steps/s; "
                "medians over %d rounds, paths interleaved):\n\n",
                steps, rounds);
    std::printf("| path | samples | p50 ms | p99 ms | max ms | p99 vs engine |\n|---|---:|---:|---:|---:|---:|\n");
    for (int path = 0; path < rows.size(); ++path) {
        const Row& row = rows[path];
        std::printf("| %s | %zu | %.1f | %.1f | %.1f | %.2fx |\n", qPrintable(row.name), row.samples, row.p50, row.p99,
                    row.max, median(ratios[path]));
    }
    std::printf("\nGoal: p99 < 100 ms at a bridge client with 10 clients connected.\n");
    return 0;
}
