// SPDX-License-Identifier: MIT
// The pipeline benchmark: a real MainWindow (offscreen) runs a job whose ranks are rankscope_bench_emitter, and
// is measured while the lines flow through the engine, the session, the run view and the log model. Side by
// side in the same run, a plain follower reads the same files (tailreaders.h): the floor for lost lines and
// latency.
#include "pipelinebench.h"

#include "benchnodes.h"
#include "chartlatencyprobe.h"
#include "frameprobe.h"
#include "tailreaders.h"

#include "jobview/jobeditor.h"
#include "logview/loginspector.h"
#include "logview/logmodel.h"
#include "mainwindow.h"
#include "runsession.h"
#include "runview/runcharts.h"
#include "runview/runmetrics.h"
#include "runview/runview.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTimer>

#include <cmath>

namespace rankscope::bench {

namespace {

constexpr int kIdleProbeMs = 2000;
constexpr double kSettleMs = 100; // latencies count events written this long after every follower began

// VmRSS or VmHWM of this process, MiB.
double statusMiB(const char* key) {
    QFile file(QStringLiteral("/proc/self/status"));
    if (!file.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray& line : file.readAll().split('\n'))
        if (line.startsWith(key))
            return line.mid(qsizetype(qstrlen(key))).trimmed().split(' ').value(0).toDouble() / 1024.0;
    return 0;
}

double rounded(double value) {
    return std::isfinite(value) ? std::round(value * 10) / 10 : -1;
}

QJsonObject distribution(const QVector<double>& values, double over = 0) {
    QJsonObject out{{"p50", rounded(percentile(values, 50))},
                    {"p90", rounded(percentile(values, 90))},
                    {"p99", rounded(percentile(values, 99))},
                    {"max", rounded(percentile(values, 100))},
                    {"n", int(values.size())}};
    if (over > 0)
        out.insert(QStringLiteral("over"),
                   int(std::count_if(values.begin(), values.end(), [over](double v) { return v > over; })));
    return out;
}

QJsonObject emitterEnv(const PipelineConfig& config) {
    return {{"RANKSCOPE_BENCH_LINES_PER_SEC", QString::number(config.ratePerRank)},
            {"RANKSCOPE_BENCH_TOTAL_LINES", QString::number(config.linesPerRank())},
            {"RANKSCOPE_BENCH_EVENT_EVERY", QString::number(config.eventEvery)}};
}

QJsonObject localJob(const PipelineConfig& config) {
    const QJsonObject trainer{{"dataset", "synthetic"}, {"model", "mlp"}, {"backend", "gloo"}, {"device", "cpu"}};
    return {{"version", 1},
            {"name", "gui-bench"},
            {"mode", "debug"},
            {"master_port", freshMasterPort()},
            {"trainer", trainer},
            {"env", emitterEnv(config)},
            {"debug", QJsonObject{{"node", "local"}, {"procs", config.ranks}, {"max_steps", 0}, {"verbose", false}}}};
}

QJsonObject remoteJob(const PipelineConfig& config, const BenchNodes& nodes) {
    QJsonObject job = nodes.job(QStringLiteral("gui-bench-ssh"), 0, 1);
    QJsonArray list = job.value("nodes").toArray();
    for (qsizetype i = 0; i < list.size(); ++i) {
        QJsonObject node = list[i].toObject();
        node.insert("procs", config.ranks / config.nodes);
        list[i] = node;
    }
    job.insert("nodes", list);
    job.insert("env", emitterEnv(config));
    job.insert("master_port", freshMasterPort());
    return job;
}

// Latencies of the events written after `since` (ms).
QVector<double> latencies(const QVector<double>& eventMs, const QVector<double>& arrivedMs, double since) {
    QVector<double> out;
    for (qsizetype i = 0; i < eventMs.size(); ++i)
        if (eventMs[i] >= since)
            out << arrivedMs[i] - eventMs[i];
    return out;
}

// The run view's tick, which drives the charts on its halves and the session's log flush on every second light
// tick (the session's own timer is stopped in the app).
void setTicks(gui::MainWindow& window, int ms) {
    window.runView()->setTickInterval(ms);
}

struct Observed {
    qint64 logRows = 0;
    qint64 logDropped = 0;
    qint64 steps = 0;
    qint64 replaces = 0;
};

Observed observe(gui::MainWindow& window) {
    Observed out;
    out.logRows = window.logInspector()->model()->rowCount();
    out.logDropped = window.logInspector()->model()->droppedRows();
    const gui::RunMetrics* metrics = window.runView()->metrics();
    for (const int rank : metrics->ranks())
        out.steps += metrics->rank(rank)->loss.appendedCount();
    out.replaces = window.runView()->charts()->replaceCount();
    return out;
}

} // namespace

qint64 PipelineConfig::linesPerRank() const {
    if (totalLines > 0)
        return std::max<qint64>(1, totalLines / std::max(1, ranks));
    return std::max<qint64>(1, qint64(double(ratePerRank) * seconds));
}

PipelineConfig PipelineConfig::fromArgs(const BenchArgs& args) {
    PipelineConfig config;
    const bool quick = !args.text(QStringLiteral("quick")).isEmpty();
    config.overSsh = !args.text(QStringLiteral("latency")).isEmpty();
    config.ranks = args.integer(QStringLiteral("ranks"), 16);
    config.ratePerRank = args.integer(QStringLiteral("rate"), 5000);
    config.seconds =
        args.text(QStringLiteral("seconds"), quick ? QStringLiteral("5") : QStringLiteral("60")).toDouble();
    config.totalLines = args.text(QStringLiteral("total-lines"), QStringLiteral("0")).toLongLong();
    config.eventEvery = std::max(1, args.integer(QStringLiteral("event-every"), 10));
    config.tickMs = args.integer(QStringLiteral("tick-ms"), 0); // 0: the app's own ticks
    config.tab = args.text(QStringLiteral("tab"), QStringLiteral("run"));
    config.tailPollMs = args.integer(QStringLiteral("tail-poll-ms"), 10);
    config.chartPointBudget = args.integer(QStringLiteral("chart-point-budget"), 0);
    config.chartsDir = args.text(QStringLiteral("save-charts"));
    config.emitter = args.text(QStringLiteral("emitter"), QStringLiteral(RANKSCOPE_BENCH_EMITTER));
    if (config.overSsh)
        config.ranks = std::max(config.nodes, config.ranks - config.ranks % config.nodes);
    return config;
}

QJsonObject runPipelineBench(const PipelineConfig& config, QString* error) {
    std::unique_ptr<BenchNodes> nodes;
    if (config.overSsh) {
        nodes = std::make_unique<BenchNodes>(QStringLiteral("/bin/sh"));
        if (!nodes->start(config.nodes, error))
            return {};
    }
    QTemporaryDir storeDir;
    gui::MainWindow::Options options;
    options.storeRoot = storeDir.filePath(QStringLiteral("store"));
    options.localTrainer = config.emitter;
    options.sshConfigPath = QStringLiteral("none");
    options.knownHostsPath = nodes ? nodes->fixture().knownHostsPath() : QString();
    options.restoreState = false;
    gui::MainWindow window(options);
    window.resize(1600, 1000);
    window.show();
    if (config.tickMs > 0)
        setTicks(window, config.tickMs);
    if (config.chartPointBudget > 0)
        window.runView()->charts()->setTickPointBudget(config.chartPointBudget);
    const QJsonObject job = nodes ? remoteJob(config, *nodes) : localJob(config);
    window.jobEditor()->setJsonText(QString::fromUtf8(QJsonDocument(job).toJson()));
    if (!waitUntil([&] { return window.jobEditor()->isValid(); }, 5000)) {
        *error = QStringLiteral("the bench job is not valid: %1").arg(window.jobEditor()->issues().value(0).toString());
        return {};
    }

    FrameProbe frames;
    frames.start(); // the window idle: the probe's own floor on this machine
    waitUntil([] { return false; }, kIdleProbeMs);
    const QVector<double> idleFrames = frames.intervalsMs();
    const double idleRss = statusMiB("VmRSS:");

    ChartLatencyProbe chartLatency(window.session(), window.runView());
    if (chartLatency.hookedTimers() != 1) {
        *error = QStringLiteral("expected the run view to own one tick timer, found %1")
                     .arg(chartLatency.hookedTimers());
        return {};
    }
    std::vector<std::unique_ptr<TailReader>> tails;
    QObject::connect(window.session()->engine(), &remote::RunEngine::launched, &window, [&] {
        const RunRecord& record = window.session()->record();
        for (int node = 0; node < record.nodes.size(); ++node) {
            const RunNodeRecord& on = record.nodes[node];
            tails.push_back(nodes ? startSshTail(nodes->target(node), on.runDir, on.ranks)
                                  : startLocalTail(on.runDir, on.ranks, config.tailPollMs));
        }
    });
    double peakSampledRss = 0;
    QTimer rssSampler;
    QObject::connect(&rssSampler, &QTimer::timeout,
                     [&] { peakSampledRss = std::max(peakSampledRss, statusMiB("VmRSS:")); });
    std::optional<RunRecord> finished;
    QObject::connect(window.session(), &gui::RunSession::finished, &window, [&](const RunRecord& r) { finished = r; });

    const double launchMs = wallMs();
    frames.start();
    rssSampler.start(1000);
    const bool launched = nodes ? window.submitRun(error) : window.debugRun(error, QStringLiteral("local"));
    if (!launched)
        return {};
    if (config.tab == QLatin1String("logs"))
        window.showTab(gui::MainWindow::LogsTab);
    const int timeoutMs = int(config.linesPerRank() * 1000 / std::max(1, config.ratePerRank)) * 4 + 120000;
    if (!waitUntil([&] { return finished.has_value(); }, timeoutMs)) {
        window.stopRun();
        waitUntil([&] { return finished.has_value(); }, 30000);
        *error = QStringLiteral("the run did not end within %1 s").arg(timeoutMs / 1000);
        return {};
    }
    const double finishedMs = wallMs();
    frames.stop();
    rssSampler.stop();
    window.runView()->flush(); // what the last tick had not applied yet
    chartLatency.check();
    for (auto& tail : tails)
        tail->stop();
    const double endRss = statusMiB("VmRSS:");
    const Observed seen = observe(window);
    if (!config.chartsDir.isEmpty()) // what the user sees at the end: every chart as a PNG
        for (int which = 0; which < gui::RunCharts::ChartCount; ++which)
            window.runView()->charts()->saveChartPng(which, QStringLiteral("%1/chart%2.png").arg(config.chartsDir).arg(which));

    const qint64 stepsExpected = config.stepsPerRank() * config.ranks;
    const qint64 logExpected = (config.linesPerRank() - config.stepsPerRank()) * config.ranks;
    TailReader::Counts tailCounts;
    double since = launchMs;
    for (const auto& tail : tails) {
        const TailReader::Counts counts = tail->counts();
        tailCounts.logLines += counts.logLines;
        tailCounts.stepEvents += counts.stepEvents;
        tailCounts.eventMs += counts.eventMs;
        tailCounts.arrivedMs += counts.arrivedMs;
        since = std::max(since, tail->readyMs() + kSettleMs);
    }
    QVector<double> chartEventMs, chartArrivedMs;
    for (const ChartLatencyProbe::Sample& sample : chartLatency.samples()) {
        chartEventMs << sample.eventMs;
        chartArrivedMs << sample.inChartMs;
    }
    const double wallS = (finishedMs - launchMs) / 1000;
    return QJsonObject{
        {"mode", nodes ? "ssh" : "local"},
        {"state", finished->state},
        {"ranks", config.ranks},
        {"rate_per_rank", config.ratePerRank},
        {"lines_per_rank", double(config.linesPerRank())},
        {"lines_total", double(config.linesPerRank() * config.ranks)},
        {"event_every", config.eventEvery},
        {"tick_ms", config.tickMs},
        {"chart_point_budget", config.chartPointBudget > 0 ? config.chartPointBudget : gui::RunCharts::kTickPointBudget},
        {"tab", config.tab},
        {"wall_s", rounded(wallS)},
        {"lines_per_s", std::round(double(config.linesPerRank() * config.ranks) / wallS)},
        {"frame_ms_idle", distribution(idleFrames, 33)},
        {"frame_ms", distribution(frames.intervalsMs(), 33)},
        {"rss_mib_idle", rounded(idleRss)},
        {"rss_mib_end", rounded(endRss)},
        {"rss_mib_peak_sampled", rounded(std::max(peakSampledRss, endRss))},
        {"rss_mib_hwm", rounded(statusMiB("VmHWM:"))},
        {"log_expected", double(logExpected)},
        {"log_in_model", double(seen.logRows + seen.logDropped)},
        {"log_rows_kept", double(seen.logRows)},
        {"log_lost", double(logExpected - seen.logRows - seen.logDropped)},
        {"steps_expected", double(stepsExpected)},
        {"steps_in_metrics", double(seen.steps)},
        {"steps_lost", double(stepsExpected - seen.steps)},
        {"steps_never_in_chart", double(chartLatency.pending())},
        {"series_replaced", double(seen.replaces)},
        {"tail_log_lost", double(nodes ? -1 : logExpected - tailCounts.logLines)},
        {"tail_steps_lost", double(stepsExpected - tailCounts.stepEvents)},
        {"latency_ms_chart", distribution(latencies(chartEventMs, chartArrivedMs, since))},
        {"latency_ms_tail", distribution(latencies(tailCounts.eventMs, tailCounts.arrivedMs, since))},
        {"tail", nodes ? QStringLiteral("ssh tail -F per node")
                       : QStringLiteral("local pread poll every %1 ms").arg(config.tailPollMs)},
    };
}

} // namespace rankscope::bench
