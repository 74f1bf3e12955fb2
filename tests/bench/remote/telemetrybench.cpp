// SPDX-License-Identifier: MIT
// telemetry: from a trainer event's `time` to its arrival in core (the engine's `events` signal), 2 ranks on
// two namespace nodes, one event per step. The baseline watches the same run at the same time: one
// `ssh node tail -F` per rank, which the kernel wakes on every write (inotify), timestamped as its lines reach
// this process. Namespaces share this machine's clock, so arrival minus `time` is the latency (the trainer
// truncates `time` to the millisecond: up to 1 ms is added to both sides alike).
#include "benchnodes.h"

#include "remote/shellcommand.h"

#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>

namespace rankscope::bench {

namespace {

constexpr int kRunTimeoutMs = 600000;
constexpr double kSettleMs = 100;

struct Arrival {
    double eventMs = 0;
    double arrivedMs = 0;
};

// Follows one rank's events file over OpenSSH. tail is started once the file exists (on a missing file GNU
// tail falls back to polling once a second); "ready" is printed just before, and only events written after
// every follower's ready plus kSettleMs are compared.
class TailFollower final {
public:
    TailFollower(const OpensshTarget& target, const QString& eventsPath) {
        QObject::connect(&m_ssh, &QProcess::readyReadStandardOutput, [this] { read(); });
        m_ssh.start(QStringLiteral("ssh"),
                    sshArguments(target, QStringLiteral("until [ -e %1 ]; do sleep 0.01; done; echo ready; "
                                                        "exec tail -n +1 -F -s 0.01 %1 2>/dev/null")
                                             .arg(remote::shellQuote(eventsPath))));
    }
    ~TailFollower() {
        m_ssh.kill();
        m_ssh.waitForFinished(5000);
    }

    [[nodiscard]] double readyMs() const { return m_readyMs; }
    [[nodiscard]] const QVector<Arrival>& arrivals() const { return m_arrivals; }

private:
    void read() {
        const double now = wallMs();
        m_buffer += m_ssh.readAllStandardOutput();
        qsizetype end = 0;
        while ((end = m_buffer.indexOf('\n')) >= 0) {
            const QByteArray line = m_buffer.left(end);
            m_buffer.remove(0, end + 1);
            if (line == "ready") {
                m_readyMs = now;
            } else if (line.startsWith("@rankscope ")) {
                const double time = QJsonDocument::fromJson(line.mid(11)).object().value("time").toDouble();
                m_arrivals.append({time * 1000, now});
            }
        }
    }

    QProcess m_ssh;
    QByteArray m_buffer;
    double m_readyMs = 0;
    QVector<Arrival> m_arrivals;
};

struct RoundResult {
    QVector<double> engine;
    QVector<double> tail;
    double eventsPerSecond = 0;
    double batches = 0;
};

QVector<double> latenciesAfter(const QVector<Arrival>& arrivals, double since) {
    QVector<double> out;
    for (const Arrival& arrival : arrivals)
        if (arrival.eventMs >= since)
            out << arrival.arrivedMs - arrival.eventMs;
    return out;
}

std::optional<RoundResult> followOneRun(BenchNodes& nodes, JobSpec job, const remote::EngineOptions& options,
                                        RunStore& store, QString* error) {
    job.masterPort = freshMasterPort();
    remote::RunEngine engine(&store, options);
    QVector<Arrival> engineArrivals;
    std::vector<std::unique_ptr<TailFollower>> tails;
    std::optional<RunRecord> record;
    int batches = 0;
    QObject::connect(&engine, &remote::RunEngine::events, [&](const QVector<TrainerEvent>& events) {
        const double now = wallMs();
        ++batches;
        for (const TrainerEvent& event : events)
            engineArrivals.append({event.time * 1000, now});
    });
    QObject::connect(&engine, &remote::RunEngine::launched, [&] {
        for (int node = 0; node < engine.record().nodes.size(); ++node)
            for (const int rank : engine.record().nodes[node].ranks)
                tails.push_back(
                    std::make_unique<TailFollower>(nodes.target(node), engine.record().nodes[node].runDir +
                                                                           QStringLiteral("/rank%1.events").arg(rank)));
    });
    QObject::connect(&engine, &remote::RunEngine::finished, [&](const RunRecord& r) { record = r; });
    if (!engine.launch(job, RunMode::Submit, error))
        return std::nullopt;
    if (!waitUntil([&] { return record.has_value(); }, kRunTimeoutMs)) {
        engine.stop();
        waitUntil([&] { return record.has_value(); }, 30000);
    }
    // The engine reports the end once every byte is in: give the followers a moment for their last lines.
    waitUntil([] { return false; }, 1000);
    if (!record || record->state != QLatin1String("finished")) {
        *error = record ? QStringLiteral("run %1: %2").arg(record->state, record->summary)
                        : QStringLiteral("the run did not end");
        return std::nullopt;
    }
    double since = 0;
    for (const auto& tail : tails) {
        if (tail->readyMs() <= 0) {
            *error = QStringLiteral("a tail follower never started");
            return std::nullopt;
        }
        since = std::max(since, tail->readyMs() + kSettleMs);
    }
    RoundResult result;
    result.engine = latenciesAfter(engineArrivals, since);
    QVector<Arrival> tailArrivals;
    for (const auto& tail : tails)
        tailArrivals += tail->arrivals();
    result.tail = latenciesAfter(tailArrivals, since);
    double first = 0;
    double last = 0;
    for (const Arrival& arrival : std::as_const(engineArrivals)) {
        if (arrival.eventMs < since)
            continue;
        first = first == 0 ? arrival.eventMs : std::min(first, arrival.eventMs);
        last = std::max(last, arrival.eventMs);
    }
    result.eventsPerSecond = last > first ? result.engine.size() / ((last - first) / 1000) : 0;
    result.batches = batches;
    return result;
}

QJsonObject latencyJson(const QVector<double>& values) {
    auto rounded = [](double value) { return std::round(value * 10) / 10; };
    return QJsonObject{{"p50", rounded(percentile(values, 50))},
                       {"p90", rounded(percentile(values, 90))},
                       {"p99", rounded(percentile(values, 99))},
                       {"max", rounded(percentile(values, 100))},
                       {"events", static_cast<int>(values.size())}};
}

} // namespace

QJsonObject runTelemetryBench(const BenchArgs& args, QString* error) {
    BenchNodes nodes(args.text(QStringLiteral("login-shell")));
    if (!nodes.start(2, error))
        return {};
    const int steps = args.integer(QStringLiteral("steps"), 2000);
    // 4096 synthetic samples at batch 16 on 2 ranks are 128 steps an epoch: enough epochs for every step.
    const auto job = jobFromJson(nodes.job(QStringLiteral("telemetry-bench"), steps, steps / 128 + 1), error);
    if (!job)
        return {};
    QTemporaryDir storeDir;
    RunStore store(storeDir.path());
    const remote::EngineOptions options =
        nodes.engineOptions(args.trainer(), args.integer(QStringLiteral("poll-ms"), 20));
    QVector<double> engineAll, tailAll, engineP50, engineP99, tailP50, tailP99, rates, perBatch;
    QJsonArray rounds;
    for (int round = 0; round < args.rounds(); ++round) {
        const auto result = followOneRun(nodes, *job, options, store, error);
        if (!result)
            return {};
        engineAll += result->engine;
        tailAll += result->tail;
        engineP50 << percentile(result->engine, 50);
        engineP99 << percentile(result->engine, 99);
        tailP50 << percentile(result->tail, 50);
        tailP99 << percentile(result->tail, 99);
        rates << result->eventsPerSecond;
        perBatch << result->engine.size() / std::max(1.0, result->batches);
        rounds.append(QJsonObject{{"engine", latencyJson(result->engine)},
                                  {"ssh_tail", latencyJson(result->tail)},
                                  {"events_per_s", std::round(result->eventsPerSecond)}});
        qInfo("telemetry round %d: engine p50 %.1f p99 %.1f ms, ssh tail -F p50 %.1f p99 %.1f ms, %.0f events/s",
              round + 1, engineP50.last(), engineP99.last(), tailP50.last(), tailP99.last(), rates.last());
    }
    return QJsonObject{{"bench", "telemetry"},
                       {"nodes", 2},
                       {"ranks", 2},
                       {"steps", steps},
                       {"rounds", args.rounds()},
                       {"login_shell", nodes.loginShellSeen()},
                       {"poll_interval_ms", options.worker.pollIntervalMs},
                       {"engine_pooled", latencyJson(engineAll)},
                       {"ssh_tail_pooled", latencyJson(tailAll)},
                       {"engine_p50_ms", summary(engineP50)},
                       {"engine_p99_ms", summary(engineP99)},
                       {"ssh_tail_p50_ms", summary(tailP50)},
                       {"ssh_tail_p99_ms", summary(tailP99)},
                       {"events_per_s", summary(rates)},
                       {"events_per_batch", summary(perBatch)},
                       {"per_round", rounds}};
}

} // namespace rankscope::bench
