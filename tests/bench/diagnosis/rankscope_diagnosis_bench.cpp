// SPDX-License-Identifier: MIT
// Time from an injected hang to the engine's hang diagnosis, and from an injected failure to its root cause, in
// seconds and in heartbeat intervals, over rounds of real 2-rank runs of the trainer on the local transport
// (debug mode, Gloo), the fault at a random step of each run. Beside it, in the same runs, the baseline of a plain
// `tail -F` of the ranks' events files (tailfollower.h): when every rank's heartbeat stops changing, when the first
// error event and every rank's end event show up. A third run in each round stops rank 1 with SIGSTOP (as Ctrl-Z
// stops a process) at a random step: the time from the stop to the finding that names it, and whether the tail -F
// baseline sees the hang at all. Run by `tests/bench/run diagnosis`; prints a markdown table.
#include "tailfollower.h"

#include "core/jobspec.h"
#include "core/runstore.h"
#include "remote/runengine.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTimer>

#include <rankscope/event_schema.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

using namespace rankscope;
using rankscope::bench::TailFollower;
using rankscope::bench::wallSeconds;

namespace {

constexpr int kFaultyRank = 1;
// Rank 0 sleeps this long every step: at most 50 steps a second, a trainer's pace on any machine, so that a
// range of fault steps is a range of time (see faultStep).
constexpr int kStepMs = 20;

struct BenchOptions {
    int rounds = 5;
    double heartbeatSeconds = 1.0; // the trainer's default
    int firstFaultStep = 10;

    // The steps drawn from: two heartbeat intervals' worth of steps or more, so that the fault falls anywhere in
    // the heartbeat cycle. A fixed step would fall at the same moment of it every round (the heartbeat thread
    // starts with the process), and the figures would say where that moment is rather than how long it takes.
    [[nodiscard]] int faultSteps() const { return int(std::ceil(2.0 * heartbeatSeconds * 1000.0 / kStepMs)); }
    [[nodiscard]] int faultStep() const {
        return firstFaultStep + int(QRandomGenerator::global()->bounded(faultSteps()));
    }
};

QJsonObject benchJob(const QString& name, const BenchOptions& options, int steps, const QJsonArray& faults) {
    QJsonArray extra{"--threads",   "1", "--heartbeat-s", QString::number(options.heartbeatSeconds),
                     "--slow-rank", "0", "--slow-ms",     QString::number(kStepMs)};
    for (const QJsonValue& fault : faults)
        extra.append(fault);
    return QJsonObject{
        {"version", 1},
        {"name", name},
        {"mode", "debug"},
        {"trainer", QJsonObject{{"dataset", "synthetic"},
                                {"model", "mlp"},
                                {"epochs", 1},
                                {"max_steps", steps},
                                {"batch_size", 16},
                                {"backend", "gloo"},
                                {"device", "cpu"},
                                {"extra_args", extra}}},
        {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"verbose", false}, {"max_steps", steps}}}};
}

// Runs the event loop until `done` or the timeout.
bool waitUntil(const std::function<bool()>& done, int timeoutMs) {
    QElapsedTimer clock;
    clock.start();
    while (!done()) {
        if (clock.elapsed() > timeoutMs)
            return false;
        QEventLoop loop;
        QTimer::singleShot(10, &loop, &QEventLoop::quit);
        loop.exec();
    }
    return true;
}

double median(std::vector<double> values) {
    if (values.empty())
        return std::nan("");
    std::sort(values.begin(), values.end());
    const size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

// One launched run: the engine's events and findings as they arrive (stamped on arrival), and the tail -F
// follower of the same events files, started the moment the ranks' run directory is known.
class ObservedRun final {
public:
    ObservedRun(RunStore* store, const remote::EngineOptions& options) : m_engine(store, options) {
        QObject::connect(&m_engine, &remote::RunEngine::events, &m_engine,
                         [this](const QVector<TrainerEvent>& batch) { m_events += batch; });
        QObject::connect(&m_engine, &remote::RunEngine::diagnoses, &m_engine, [this](const QVector<Diagnosis>& found) {
            const double now = wallSeconds();
            for (const Diagnosis& d : found)
                m_diagnoses.append({now, d});
        });
        QObject::connect(&m_engine, &remote::RunEngine::launched, &m_engine, [this] {
            const RunNodeRecord& node = m_engine.record().nodes.front();
            QStringList files;
            for (const int rank : node.ranks)
                files << node.runDir + QStringLiteral("/rank%1.events").arg(rank);
            m_follower = std::make_unique<TailFollower>(files, int(node.ranks.size()));
        });
        QObject::connect(&m_engine, &remote::RunEngine::finished, &m_engine, [this] { m_finished = true; });
    }

    bool launch(const QJsonObject& json, QString* error) {
        const JobParseResult job = parseJob(QJsonDocument(json).toJson());
        if (!job.ok()) {
            *error = job.issues.value(0).toString();
            return false;
        }
        return m_engine.launch(*job.job, RunMode::Debug, error);
    }
    bool stopAndWait() {
        m_engine.stop();
        return waitUntil([this] { return m_finished; }, 60000);
    }

    // The first finding of `kind` and when it arrived (time 0 when none did).
    std::pair<double, Diagnosis> first(DiagnosisKind kind) const {
        for (const auto& [arrived, d] : m_diagnoses)
            if (d.kind == kind && !d.resolved)
                return {arrived, d};
        return {0.0, Diagnosis()};
    }
    TailFollower::Seen followed() const { return m_follower ? m_follower->seen() : TailFollower::Seen(); }
    bool finished() const { return m_finished; }
    const QVector<TrainerEvent>& events() const { return m_events; }
    QString summary() const { return m_engine.record().state + QStringLiteral(": ") + m_engine.record().summary; }
    // The pid of `rank`'s process, from the pid file the supervisor writes in the run directory (0 when unknown).
    qint64 pidOf(int rank) const {
        QFile file(m_engine.record().nodes.value(0).runDir + QStringLiteral("/rank%1.pid").arg(rank));
        return file.open(QIODevice::ReadOnly) ? file.readAll().trimmed().toLongLong() : 0;
    }
    // The newest step event of `rank` (0 when none).
    qint64 stepsDone(int rank) const {
        qint64 step = 0;
        for (const TrainerEvent& e : m_events)
            if (e.rank == rank && e.type == TrainerEventType::Step)
                step = std::max(step, e.integer(schema::step::kStep));
        return step;
    }

private:
    QVector<TrainerEvent> m_events;
    QVector<std::pair<double, Diagnosis>> m_diagnoses;
    std::unique_ptr<TailFollower> m_follower;
    bool m_finished = false;
    remote::RunEngine m_engine; // last: gone first, with its connections to the members above
};

// The heartbeat interval the ranks report: the median gap between a rank's consecutive heartbeats.
double heartbeatInterval(const QVector<TrainerEvent>& events) {
    std::vector<double> gaps;
    QHash<int, double> last;
    for (const TrainerEvent& e : events) {
        if (e.type != TrainerEventType::Heartbeat)
            continue;
        if (last.contains(e.rank))
            gaps.push_back(e.time - last.value(e.rank));
        last.insert(e.rank, e.time);
    }
    return median(gaps);
}

// When the last rank's heartbeats started showing the state they keep up to `until` (see stillSince in
// tests/remote/enginetestutil.h: the reference of the "within two heartbeat intervals" test).
double everyRankStillSince(const QVector<TrainerEvent>& events, double until) {
    QHash<int, std::pair<QString, double>> ranks;
    for (const TrainerEvent& e : events) {
        if (e.type != TrainerEventType::Heartbeat || e.time > until)
            continue;
        const QString state = QStringLiteral("%1 %2 %3 %4")
                                  .arg(e.integer(schema::heartbeat::kStep))
                                  .arg(e.string(schema::heartbeat::kPhase))
                                  .arg(e.integer(schema::heartbeat::kCollectiveStarted))
                                  .arg(e.integer(schema::heartbeat::kCollectiveFinished));
        if (ranks.value(e.rank).first != state)
            ranks.insert(e.rank, {state, e.time});
    }
    double since = 0.0;
    for (const auto& [state, time] : std::as_const(ranks))
        since = std::max(since, time);
    return since;
}

// The time of the last event of `rank` of `type` (0 when none).
double lastEventTime(const QVector<TrainerEvent>& events, int rank, TrainerEventType type) {
    double time = 0.0;
    for (const TrainerEvent& e : events)
        if (e.rank == rank && e.type == type)
            time = e.time;
    return time;
}

// One measure over the rounds: seconds, and the same in each round's heartbeat interval.
struct Measure {
    QString name;
    std::vector<double> seconds;
    std::vector<double> intervals;
    int named = 0; // rounds in which what was seen named the faulty rank (-1: it names no rank)

    void add(double s, double interval) {
        seconds.push_back(s);
        intervals.push_back(s / interval);
    }
};

struct Results {
    std::vector<double> heartbeat;
    Measure hang{QStringLiteral("hang injected → RankScope names the hung rank"), {}, {}, 0};
    Measure hangStill{QStringLiteral("every rank's heartbeat still → RankScope names the hung rank"), {}, {}, 0};
    Measure hangTail{
        QStringLiteral("hang injected → `tail -F`: every rank's heartbeat stopped changing (baseline)"), {}, {}, -1};
    Measure fail{QStringLiteral("failure → RankScope's root cause"), {}, {}, 0};
    Measure failTailEnd{QStringLiteral("failure → `tail -F`: every rank's end event (baseline)"), {}, {}, -1};
    Measure failTailError{QStringLiteral("failure → `tail -F`: the first error event"), {}, {}, 0};
    Measure stop{QStringLiteral("rank stopped (SIGSTOP) → RankScope names it"), {}, {}, 0};
    int stopTailSeen = 0; // rounds in which the tail -F baseline saw every rank still after the stop
};

bool hangRound(RunStore* store, const remote::EngineOptions& engine, const BenchOptions& options, Results& results) {
    ObservedRun run(store, engine);
    QString error;
    if (!run.launch(benchJob(QStringLiteral("hang-bench"), options, 100000,
                             {"--hang-at-step", QString::number(options.faultStep()), "--hang-rank",
                              QString::number(kFaultyRank)}),
                    &error)) {
        std::fprintf(stderr, "launch: %s\n", qPrintable(error));
        return false;
    }
    const bool seen = waitUntil(
        [&run] { return run.first(DiagnosisKind::Hang).first > 0.0 && run.followed().allStill > 0.0; }, 180000);
    const auto [arrived, hang] = run.first(DiagnosisKind::Hang);
    const TailFollower::Seen tail = run.followed();
    run.stopAndWait();
    if (!seen) {
        std::fprintf(stderr, "hang round: diagnosis %s, tail -F %s (%s)\n", arrived > 0 ? "seen" : "missing",
                     tail.allStill > 0 ? "saw it" : "saw nothing", qPrintable(run.summary()));
        return false;
    }
    // The hung rank's last step event: it enters the injected hang right after, at the next step's start.
    const double injected = lastEventTime(run.events(), kFaultyRank, TrainerEventType::Step);
    const double interval = heartbeatInterval(run.events());
    results.heartbeat.push_back(interval);
    results.hang.add(arrived - injected, interval);
    results.hang.named += hang.ranks.value(0) == kFaultyRank ? 1 : 0;
    results.hangStill.add(arrived - everyRankStillSince(run.events(), hang.time), interval);
    results.hangStill.named += hang.ranks.value(0) == kFaultyRank ? 1 : 0;
    results.hangTail.add(tail.allStill - injected, interval);
    std::fprintf(stderr, "hang: diagnosis %.2f s, tail -F %.2f s after the injection (interval %.3f s): %s\n",
                 arrived - injected, tail.allStill - injected, interval, qPrintable(hang.message));
    return true;
}

// A healthy run whose rank 1 is stopped with SIGSTOP at a step drawn like a fault's: the stop is timed on this
// machine's clock as the signal is sent. Rank 1 is let go again before the run is stopped.
bool stopRound(RunStore* store, const remote::EngineOptions& engine, const BenchOptions& options, Results& results) {
    ObservedRun run(store, engine);
    QString error;
    if (!run.launch(benchJob(QStringLiteral("stop-bench"), options, 100000, {}), &error)) {
        std::fprintf(stderr, "launch: %s\n", qPrintable(error));
        return false;
    }
    const int atStep = options.faultStep();
    if (!waitUntil([&run, atStep] { return run.stepsDone(kFaultyRank) >= atStep; }, 180000)) {
        std::fprintf(stderr, "stop round: rank %d never reached step %d (%s)\n", kFaultyRank, atStep,
                     qPrintable(run.summary()));
        return false;
    }
    const qint64 pid = run.pidOf(kFaultyRank);
    const double stopped = wallSeconds();
    if (pid <= 0 || ::kill(pid_t(pid), SIGSTOP) != 0) {
        std::fprintf(stderr, "stop round: cannot stop rank %d (pid %lld)\n", kFaultyRank, static_cast<long long>(pid));
        return false;
    }
    const bool seen = waitUntil([&run] { return run.first(DiagnosisKind::Hang).first > 0.0; }, 60000);
    // What tail -F shows by then and for a while after (10 heartbeat intervals): a stopped rank writes no second
    // equal heartbeat, so "every rank still" never comes.
    waitUntil([] { return false; }, int(10 * options.heartbeatSeconds * 1000));
    const auto [arrived, hang] = run.first(DiagnosisKind::Hang);
    const TailFollower::Seen tail = run.followed();
    ::kill(pid_t(pid), SIGCONT);
    run.stopAndWait();
    if (!seen) {
        std::fprintf(stderr, "stop round: no hang found (%s)\n", qPrintable(run.summary()));
        return false;
    }
    const double interval = heartbeatInterval(run.events());
    results.stop.add(arrived - stopped, interval);
    results.stop.named += hang.ranks.value(0) == kFaultyRank && hang.culprits == 1 ? 1 : 0;
    results.stopTailSeen += tail.allStill > stopped ? 1 : 0;
    std::fprintf(stderr, "stop: diagnosis %.2f s after SIGSTOP at step %d (interval %.3f s): %s\n", arrived - stopped,
                 atStep, interval, qPrintable(hang.message));
    return true;
}

// `interval`: the heartbeat interval of this round's hang run; a failure run ends before its ranks beat twice.
bool failRound(RunStore* store, const remote::EngineOptions& engine, const BenchOptions& options, double interval,
               Results& results) {
    ObservedRun run(store, engine);
    QString error;
    // The timeout only bounds a peer that would not notice the failure (it does: Gloo's connection closes).
    if (!run.launch(benchJob(QStringLiteral("fail-bench"), options, 100000,
                             {"--fail-at-step", QString::number(options.faultStep()), "--fail-rank",
                              QString::number(kFaultyRank), "--timeout-s", "60"}),
                    &error)) {
        std::fprintf(stderr, "launch: %s\n", qPrintable(error));
        return false;
    }
    const bool seen = waitUntil(
        [&run] { return run.first(DiagnosisKind::RootCause).first > 0.0 && run.followed().allEnded > 0.0; }, 180000);
    const auto [arrived, cause] = run.first(DiagnosisKind::RootCause);
    const TailFollower::Seen tail = run.followed();
    if (!seen || !waitUntil([&run] { return run.finished(); }, 60000)) {
        std::fprintf(stderr, "failure round: root cause %s, tail -F %s (%s)\n", arrived > 0 ? "seen" : "missing",
                     tail.allEnded > 0 ? "saw every end" : "missed an end", qPrintable(run.summary()));
        return false;
    }
    // The failing rank's own error event: written as the injected exception ends its training loop.
    const double failed = lastEventTime(run.events(), kFaultyRank, TrainerEventType::Error);
    results.fail.add(arrived - failed, interval);
    results.fail.named += cause.ranks.value(0) == kFaultyRank ? 1 : 0;
    results.failTailEnd.add(tail.allEnded - failed, interval);
    results.failTailError.add(tail.firstError - failed, interval);
    results.failTailError.named += tail.firstErrorRank == kFaultyRank ? 1 : 0;
    std::fprintf(stderr, "failure: root cause %.2f s, tail -F every end %.2f s after the failure: %s\n",
                 arrived - failed, tail.allEnded - failed, qPrintable(cause.message));
    return true;
}

void printRow(const Measure& m, const Measure* baseline, int rounds) {
    QString ratio = QStringLiteral("1.00x");
    if (!baseline) {
        ratio = QStringLiteral("–");
    } else if (baseline != &m) {
        std::vector<double> ratios;
        for (size_t i = 0; i < m.seconds.size() && i < baseline->seconds.size(); ++i)
            ratios.push_back(m.seconds[i] / baseline->seconds[i]);
        ratio = QStringLiteral("%1x").arg(median(ratios), 0, 'f', 2);
    }
    const QString named = m.named < 0 ? QStringLiteral("no rank") : QStringLiteral("%1/%2").arg(m.named).arg(rounds);
    std::printf("| %s | %.3f | %.3f | %.2f | %.2f | %s | %s |\n", qPrintable(m.name), median(m.seconds),
                *std::max_element(m.seconds.begin(), m.seconds.end()), median(m.intervals),
                *std::max_element(m.intervals.begin(), m.intervals.end()), qPrintable(ratio), qPrintable(named));
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    qRegisterMetaType<RunRecord>();
    QCommandLineParser parser;
    parser.addHelpOption();
    const QCommandLineOption roundsOption(QStringLiteral("rounds"),
                                          QStringLiteral("Rounds, each a hang run then a failure run (default 5)."),
                                          QStringLiteral("N"), QStringLiteral("5"));
    const QCommandLineOption heartbeatOption(QStringLiteral("heartbeat-s"),
                                             QStringLiteral("The trainer's heartbeat interval (default 1, its own)."),
                                             QStringLiteral("S"), QStringLiteral("1"));
    const QCommandLineOption stepOption(QStringLiteral("fault-step"),
                                        QStringLiteral("The first step at which rank 1 may hang or fail (default 10)."),
                                        QStringLiteral("N"), QStringLiteral("10"));
    const QCommandLineOption trainerOption(QStringLiteral("trainer"), QStringLiteral("rankscope-trainer to run."),
                                           QStringLiteral("PATH"));
    parser.addOptions({roundsOption, heartbeatOption, stepOption, trainerOption});
    parser.process(app);
    BenchOptions options;
    options.rounds = std::max(1, parser.value(roundsOption).toInt());
    options.heartbeatSeconds = parser.value(heartbeatOption).toDouble();
    options.firstFaultStep = std::max(2, parser.value(stepOption).toInt());
    if (options.heartbeatSeconds <= 0.0) {
        std::fprintf(stderr, "--heartbeat-s must be a positive number of seconds\n");
        return 2;
    }

    QTemporaryDir dir;
    RunStore store(dir.filePath(QStringLiteral("store")));
    remote::EngineOptions engine;
    engine.sshConfigPath = QStringLiteral("none");
    engine.captureStacksOnHang = false; // the diagnosis is measured, not the gdb runs that follow it
    if (parser.isSet(trainerOption))
        engine.localTrainer = QFileInfo(parser.value(trainerOption)).absoluteFilePath();

    Results results;
    for (int round = 0; round < options.rounds; ++round) {
        std::fprintf(stderr, "round %d of %d\n", round + 1, options.rounds);
        if (!hangRound(&store, engine, options, results) ||
            !failRound(&store, engine, options, results.heartbeat.back(), results) ||
            !stopRound(&store, engine, options, results))
            return 1;
    }

    std::printf("2-rank local runs (MLP, Gloo, debug mode, rank 0 sleeping %d ms a step), rank %d hangs or fails at a "
                "step drawn from %d-%d, or is stopped there with SIGSTOP; heartbeat interval %.3f s measured "
                "(--heartbeat-s %g); rounds: %d, a hang run, a failure run and a stop run in each. Intervals are those "
                "the round's hang run measured; ratios are medians of "
                "each round's ratio to its baseline.\n\n",
                kStepMs, kFaultyRank, options.firstFaultStep, options.firstFaultStep + options.faultSteps() - 1,
                median(results.heartbeat), options.heartbeatSeconds, options.rounds);
    std::printf("| from → to | median s | max s | median intervals | max intervals | vs baseline | names the rank |\n"
                "|---|---:|---:|---:|---:|---:|---|\n");
    printRow(results.hang, &results.hangTail, options.rounds);
    printRow(results.hangTail, &results.hangTail, options.rounds);
    printRow(results.hangStill, nullptr, options.rounds);
    printRow(results.fail, &results.failTailEnd, options.rounds);
    printRow(results.failTailEnd, &results.failTailEnd, options.rounds);
    printRow(results.failTailError, nullptr, options.rounds);
    printRow(results.stop, nullptr, options.rounds);
    std::printf("| rank stopped (SIGSTOP) → `tail -F`: every rank's heartbeat stopped changing (baseline) | %s | | | "
                "| | no rank |\n",
                results.stopTailSeen == 0
                    ? qPrintable(QStringLiteral("never, in %1 s after the finding").arg(10 * options.heartbeatSeconds))
                    : qPrintable(QStringLiteral("seen in %1/%2 rounds").arg(results.stopTailSeen).arg(options.rounds)));
    return 0;
}
