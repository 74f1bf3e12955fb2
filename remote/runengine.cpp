// SPDX-License-Identifier: MIT
// RunEngine: a run's course on its nodes: launch, attach, open, teardown, stop, detach and its end. What the run
// says meanwhile (its ranks' streams, GPUs, exits, diagnoses and stacks) is read in runengine_reading.cpp.
#include "remote/runengine.h"

#include "remote/streamingest.h"

#include "core/deploymanifest.h"
#include "core/rankplan.h"
#include "remote/shellcommand.h"
#include "remote/transportfactory.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QSaveFile>
#include <QSysInfo>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <limits>

namespace rankscope::remote {

namespace {

QString modeName(RunMode mode) {
    return mode == RunMode::Debug ? QStringLiteral("debug") : QStringLiteral("submit");
}

QString deployName(DeployStrategy strategy) {
    switch (strategy) {
    case DeployStrategy::Build:
        return QStringLiteral("build");
    case DeployStrategy::Binary:
        return QStringLiteral("binary");
    case DeployStrategy::Auto:
        break;
    }
    return QStringLiteral("auto");
}

// Hashing the 27 MB trainer took 125-185 ms of every launch; the hash is kept next to the run store, keyed by
// the binary's path, size and modification time.
QByteArray cachedSha256(const QString& path, const QString& cacheFile) {
    const QFileInfo info(path);
    const QByteArray key = (info.absoluteFilePath() + QLatin1Char(' ') + QString::number(info.size()) +
                            QLatin1Char(' ') + QString::number(info.lastModified().toMSecsSinceEpoch()))
                               .toUtf8();
    QFile cache(cacheFile);
    if (cache.open(QIODevice::ReadOnly)) {
        const QList<QByteArray> lines = cache.readAll().split('\n');
        if (lines.size() >= 2 && lines[0] == key && lines[1].size() == 64)
            return lines[1];
        cache.close();
    }
    const QByteArray sha = sha256OfFile(path);
    QDir().mkpath(QFileInfo(cacheFile).absolutePath());
    QSaveFile out(cacheFile);
    if (!sha.isEmpty() && out.open(QIODevice::WriteOnly)) {
        out.write(key + '\n' + sha + '\n');
        out.commit();
    }
    return sha;
}

} // namespace

RunEngine::RunEngine(RunStore* store, EngineOptions options, QObject* parent)
    : QObject(parent), m_store(store), m_options(std::move(options)) {
    qRegisterMetaType<QVector<TrainerEvent>>();
    qRegisterMetaType<QVector<RankLogLine>>();
    qRegisterMetaType<QVector<GpuSample>>();
    qRegisterMetaType<QVector<Diagnosis>>();
    qRegisterMetaType<QVector<RankStackCapture>>();
    qRegisterMetaType<StackTree>();
    qRegisterMetaType<DebugServer>();
    // Hangs and stragglers are about time passing: re-evaluated ten times a second while following.
    m_diagnosisTimer = new QTimer(this);
    m_diagnosisTimer->setInterval(100);
    connect(m_diagnosisTimer, &QTimer::timeout, this,
            [this] { diagnose(static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0); });
    if (m_options.localTrainer.isEmpty())
        m_options.localTrainer = QCoreApplication::applicationDirPath() + QStringLiteral("/rankscope-trainer");
    m_kernelLogs = new KernelLogWatch(m_store, {}, this);
    connect(m_kernelLogs, &KernelLogWatch::captured, this,
            [this](const KernelLogCapture& capture) { m_diagnostics.addKernelLog(capture); });
    connect(m_kernelLogs, &KernelLogWatch::settled, this, [this] {
        if (!m_finished && !m_workers.isEmpty() && m_drainedNodes.size() == m_workers.size())
            onDrained(*m_drainedNodes.cbegin()); // the run was only waiting for the kernel logs
    });
}

RunEngine::~RunEngine() {
    m_debug.reset();
    releaseWorkers();
}

std::unique_ptr<Transport> RunEngine::makeTransport(const NodeSpec& node, bool local) const {
    ConnectionOptions connection;
    connection.knownHostsPath = m_options.knownHostsPath;
    connection.sshConfigPath = m_options.sshConfigPath;
    connection.acceptNewHostKeys = m_options.acceptNewHostKeys;
    connection.confirmUnknownHost = m_options.confirmUnknownHost;
    connection.passphrase = m_options.passphrase;
    connection.password = m_options.password;
    connection.connectTimeout = m_options.connectTimeout;
    return remote::makeTransport(node, local, connection);
}

QString RunEngine::localPlatform() const {
    return QStringLiteral("%1 %2 %3")
        .arg(QSysInfo::currentCpuArchitecture(), QSysInfo::productType(), QSysInfo::productVersion());
}

QString RunEngine::hostOfRank(int rank) const {
    const int node = m_record.nodeOfRank(rank);
    return node < 0 ? QString() : m_record.nodes[node].host;
}

NodeWorker* RunEngine::startWorker(int node, std::unique_ptr<Transport> transport, RankStreamParsers parsers) {
    auto* thread = new QThread(this);
    thread->setObjectName(QStringLiteral("node%1").arg(node));
    auto* worker = new NodeWorker(node, std::move(transport), m_options.worker);
    worker->moveToThread(thread);
    connect(thread, &QThread::finished, worker, &QObject::deleteLater);
    connect(worker, &NodeWorker::progress, this,
            [this](int n, const QString& message) { emit nodeProgress(n, m_record.nodes.value(n).host, message); });
    connect(worker, &NodeWorker::prepared, this, &RunEngine::onPrepared);
    connect(worker, &NodeWorker::launched, this, [this](int n, const QString& runDir) {
        m_record.nodes[n].runDir = runDir;
        const bool all = std::all_of(m_record.nodes.begin(), m_record.nodes.end(),
                                     [](const RunNodeRecord& r) { return !r.runDir.isEmpty(); });
        if (all && m_record.state == QLatin1String("launching")) {
            m_record.state = QStringLiteral("running");
            emit launched(m_record.id);
        }
        saveRecord();
    });
    connect(worker, &NodeWorker::trainerDeployed, this,
            [this](int n, const QString& path, bool thisMachines, const QString& builtFrom) {
                if (m_debug && m_debug->node() == n)
                    m_debug->trainerDeployed(path, thisMachines, builtFrom);
            });
    // The node's bytes are stored and parsed on its own thread; only the parsed chunks come here.
    auto* ingest = new StreamIngest(m_store, m_record.id, std::move(parsers), m_generation);
    ingest->moveToThread(thread);
    connect(thread, &QThread::finished, ingest, &QObject::deleteLater);
    connect(worker, &NodeWorker::data, ingest, &StreamIngest::onData, Qt::DirectConnection);
    connect(ingest, &StreamIngest::parsed, this, &RunEngine::onParsed, Qt::QueuedConnection);
    m_kernelLogs->follow(worker);
    connect(worker, &NodeWorker::gpuData, this, &RunEngine::onGpuData);
    connect(worker, &NodeWorker::gpuErrors, this, &RunEngine::onGpuErrors);
    connect(worker, &NodeWorker::rankExited, this, &RunEngine::onRankExited);
    connect(worker, &NodeWorker::failed, this, &RunEngine::onFailed);
    connect(worker, &NodeWorker::drained, this, &RunEngine::onDrained);
    connect(worker, &NodeWorker::stopped, this, &RunEngine::onStopped);
    connect(worker, &NodeWorker::stacksCaptured, this, &RunEngine::onStacksCaptured);
    connect(worker, &NodeWorker::linkLost, this,
            [this](int n, const QString& message) { emit linkLost(n, m_record.nodes.value(n).host, message); });
    connect(worker, &NodeWorker::linkRestored, this,
            [this](int n) { emit linkRestored(n, m_record.nodes.value(n).host); });
    thread->start();
    m_threads.append(thread);
    m_workers.append(worker);
    return worker;
}

void RunEngine::reset() {
    m_debug.reset();
    m_debugServer.reset();
    m_diagnosisTimer->stop();
    m_diagnostics.clear();
    releaseWorkers();
    m_workers.clear();
    m_replayParsers = {};
    ++m_generation;
    m_gpuParsers.clear();
    m_gpuErrSplitters.clear();
    m_drainedNodes.clear();
    m_preparedNodes.clear();
    m_stackNodesPending.clear();
    m_stackedHangs.clear();
    ++m_stackJob; // results of an earlier run's capture are dropped
    m_kernelLogs->reset();
    m_firstErrors.clear();
    m_lastStderrLine.clear();
    m_watchdogs.clear();
    m_watchNccl = false;
    m_nccl.clear();
    m_ncclClock.invalidate();
    m_stoppedNodes.clear();
    m_processesLeft = 0;
    m_stopRequested = m_tearingDown = m_finished = m_launchFailed = m_unfollowed = m_attached = false;
    m_firstLaunchFailure.clear();
    m_otherLaunchFailures.clear();
    m_teardownAt = {};
    m_teardownGraceSeconds = 0;
    m_stopRequestedAt = {};
    m_offlineEndingSince = {};
    m_knownUntil = std::numeric_limits<double>::infinity();
}

bool RunEngine::launch(const JobSpec& job, RunMode mode, QString* error) {
    return launch(job, mode, LaunchOptions{}, error);
}

bool RunEngine::launch(const JobSpec& original, RunMode mode, const LaunchOptions& options, QString* error) {
    reset();
    // A node known by an ~/.ssh/config alias is reached by the other nodes at the alias's HostName.
    JobSpec job = original;
    for (NodeSpec& node : job.nodes) {
        if (!node.address.isEmpty())
            continue;
        SshOptions ssh;
        ssh.host = node.host;
        ssh.sshConfigPath = m_options.sshConfigPath;
        const QString resolved = SshTransport::resolveHostName(ssh);
        if (resolved != node.host)
            node.address = resolved;
    }
    RankPlan plan = planRanks(job, mode);
    if (plan.ranks.isEmpty()) {
        if (error)
            *error = QStringLiteral("the job has no ranks to run in %1 mode").arg(modeName(mode));
        return false;
    }
    const int debugRank = options.debugRank.value_or(-1);
    if (options.debugRank && (debugRank < 0 || debugRank >= plan.worldSize)) {
        if (error)
            *error = QStringLiteral("debug rank %1 is not a rank of this job: it has %2 rank(s) in %3 mode (0-%4)")
                         .arg(debugRank)
                         .arg(plan.worldSize)
                         .arg(modeName(mode))
                         .arg(plan.worldSize - 1);
        return false;
    }
    if (debugRank >= 0) {
        // gdbserver starts the trainer without a shell, and then refuses an argument with a blank in it.
        const QStringList& arguments = plan.ranks[debugRank].args;
        const auto blank = std::find_if(arguments.cbegin(), arguments.cend(), [](const QString& argument) {
            return std::any_of(argument.cbegin(), argument.cend(), [](QChar c) { return c.isSpace(); });
        });
        if (blank != arguments.cend()) {
            if (error)
                *error = QStringLiteral("debug rank %1: gdbserver cannot hand the trainer an argument with a blank in "
                                        "it: %2 (from the job's trainer settings); use a path without blanks, or run "
                                        "without --debug-rank")
                             .arg(debugRank)
                             .arg(shellQuote(*blank));
            return false;
        }
        for (RankAssignment& rank : plan.ranks) // last: it wins over a --timeout-s of the job's extra_args
            rank.args << QStringLiteral("--timeout-s") << QString::number(options.debugCollectiveTimeout.count());
    }
    DeployPlan deploy;
    deploy.strategy = deployName(job.deploy);
    deploy.sourceRoot = m_options.trainerSources;
    deploy.localPlatform = localPlatform();
    deploy.buildEnvironment = job.env;
    if (QFileInfo(m_options.localTrainer).isExecutable()) {
        deploy.localTrainer = m_options.localTrainer;
        deploy.localTrainerSha256 =
            cachedSha256(m_options.localTrainer, m_store->root() + QStringLiteral("/cache/trainer.sha256"));
    } else if (job.deploy == DeployStrategy::Binary) {
        if (error)
            *error = QStringLiteral("deploy: no prebuilt trainer at %1").arg(m_options.localTrainer);
        return false;
    }

    m_record = {};
    m_record.created = QDateTime::currentDateTimeUtc();
    m_record.id = m_store->newRunId(m_record.created); // the same second as its creation time
    m_record.name = job.name;
    m_record.mode = modeName(mode);
    m_record.state = QStringLiteral("launching");
    m_record.job = jobToJson(original);
    m_record.worldSize = plan.worldSize;
    for (const PlanNode& node : plan.nodes)
        m_record.nodes.append(
            {node.node.name, node.local ? QStringLiteral("localhost") : node.node.host, node.local, QString(), {}});
    for (const RankAssignment& rank : plan.ranks)
        m_record.nodes[rank.nodeIndex].ranks.append(rank.rank);
    m_record.debugRank = debugRank;
    if (!m_store->save(m_record, error))
        return false;
    chooseStreamsToRead();
    startDiagnosis();
    if (debugRank >= 0)
        startDebugSession(plan, debugRank, deploy);

    for (int i = 0; i < plan.nodes.size(); ++i) {
        NodeLaunch launch;
        launch.nodeIndex = i;
        launch.name = plan.nodes[i].node.name;
        launch.workDir = plan.nodes[i].node.workDir;
        launch.runId = m_record.id;
        launch.mode = m_record.mode;
        launch.deploy = deploy;
        for (const RankAssignment& rank : plan.ranks)
            if (rank.nodeIndex == i)
                launch.ranks.append({rank.rank, rank.env, rank.args});
        if (plan.launcher == Launcher::Torchrun) {
            // Relative: launcher.cmd runs in the node's run directory.
            launch.launcherCommand = torchrunCommand(plan, i, QStringLiteral("torchrun"));
            launch.launcherEnvironment = job.env;
        }
        launch.gpus = plan.nodes[i].node.gpus;
        launch.samplerEnvironment = job.env;
        if (!plan.ranks.isEmpty() && plan.ranks.front().nodeIndex == i)
            launch.masterPort = plan.masterPort;
        if (debugRank >= 0 && plan.ranks[debugRank].nodeIndex == i)
            launch.debugRank = debugRank;
        NodeWorker* worker = startWorker(i, makeTransport(plan.nodes[i].node, plan.nodes[i].local),
                                         parsersFor(m_record.nodes[i].ranks));
        QMetaObject::invokeMethod(
            worker, [worker, launch] { worker->prepare(launch); }, Qt::QueuedConnection);
    }
    return true;
}

void RunEngine::startDebugSession(const RankPlan& plan, int rank, const DeployPlan& deploy) {
    DebugSessionSetup setup;
    setup.rank = rank;
    setup.node = plan.ranks[rank].nodeIndex;
    setup.host = m_record.nodes[setup.node].host;
    setup.local = plan.nodes[setup.node].local;
    setup.localTrainer = deploy.localTrainer;
    setup.localBuildSourceDir = DebugSession::builtSourceDir();
    const QString debugDir = m_store->runDir(m_record.id) + QStringLiteral("/debug");
    setup.sourceDir = DebugSession::localSources(m_options.trainerSources, debugDir + QStringLiteral("/trainer"));
    setup.fetchTo = debugDir + QStringLiteral("/rankscope-trainer");
    const NodeSpec node = plan.nodes[setup.node].node;
    setup.makeTransport = [this, node, local = setup.local] { return makeTransport(node, local); };
    m_debug = std::make_unique<DebugSession>(setup);
    connect(m_debug.get(), &DebugSession::ready, this, [this](const DebugServer& server) {
        m_debugServer = server;
        emit debugServerReady(server);
    });
    connect(m_debug.get(), &DebugSession::progress, this, [this](const QString& message) {
        if (m_debug)
            emit nodeProgress(m_debug->node(), m_record.nodes.value(m_debug->node()).host, message);
    });
    connect(m_debug.get(), &DebugSession::failed, this, &RunEngine::debugServerError);
}

bool RunEngine::attach(const QString& runId, QString* error) {
    const auto record = m_store->load(runId, error);
    if (!record)
        return false;
    const JobParseResult job = parseJob(QJsonDocument(record->job).toJson());
    if (!job.ok()) {
        if (error)
            *error = QStringLiteral("run %1: its stored job no longer parses: %2")
                         .arg(runId, job.issues.value(0).toString());
        return false;
    }
    for (const RunNodeRecord& node : record->nodes) {
        if (node.runDir.isEmpty()) {
            if (error)
                *error =
                    QStringLiteral("run %1: node %2 never started it (nothing to attach to)").arg(runId, node.host);
            return false;
        }
    }
    reset();
    m_record = *record;
    m_attached = true;
    chooseStreamsToRead();
    startDiagnosis();
    replayStored();
    for (int i = 0; i < m_record.nodes.size(); ++i) {
        const RunNodeRecord& node = m_record.nodes[i];
        NodeSpec spec;
        for (const NodeSpec& candidate : job.job->nodes)
            if (candidate.name == node.name)
                spec = candidate;
        if (!node.local && spec.host.isEmpty()) {
            if (error)
                *error = QStringLiteral("run %1: node %2 is not in its stored job").arg(runId, node.name);
            return false;
        }
        StreamOffsets offsets;
        for (const int rank : node.ranks)
            for (const RankStream stream : kRankStreams)
                offsets.streams.insert({rank, static_cast<int>(stream)},
                                       m_store->streamSize(m_record.id, rank, stream));
        offsets.gpu = m_store->nodeStreamSize(m_record.id, i, kGpuStream);
        offsets.gpuErr = m_store->nodeStreamSize(m_record.id, i, kGpuErrStream);
        NodeWorker* worker = startWorker(i, makeTransport(spec, node.local), parsersFor(node.ranks));
        const QString runDir = node.runDir;
        const QVector<int> ranks = node.ranks;
        const int debugRank = node.ranks.contains(m_record.debugRank) ? m_record.debugRank : -1;
        QMetaObject::invokeMethod(
            worker, [worker, runDir, ranks, offsets, debugRank] { worker->attach(runDir, ranks, offsets, debugRank); },
            Qt::QueuedConnection);
    }
    return true;
}

bool RunEngine::open(const QString& runId, QString* error) {
    const auto record = m_store->load(runId, error);
    if (!record)
        return false;
    reset();
    m_record = *record;
    chooseStreamsToRead();
    m_finished = true; // nothing to follow
    // When its ranks began to be ended, as far as the store tells (endingSince()): the stop's mark, or the first
    // exit of a rank that failed (a failure tears the run down).
    m_offlineEndingSince = m_store->stopRequestedAt(m_record.id);
    for (const RankExit& exit : std::as_const(m_record.exits))
        if (exit.status != 0 && exit.status != kLostExitStatus && !exit.stopped && exit.seenAt.isValid() &&
            (!m_offlineEndingSince.isValid() || exit.seenAt < m_offlineEndingSince))
            m_offlineEndingSince = exit.seenAt;
    startDiagnosis();
    m_diagnosisTimer->stop();
    // The diagnosis is replayed in the order things happened, as it ran live: events by their time, exits
    // when they were seen, evaluated every tenth of a second of the run's time, as the live timer does. A run stopped because it hung
    // shows the hang, though its ranks ended afterwards.
    m_offlineEvents.emplace();
    replayStreams();
    QVector<TrainerEvent> timeline = *std::exchange(m_offlineEvents, std::nullopt);
    std::stable_sort(timeline.begin(), timeline.end(),
                     [](const TrainerEvent& a, const TrainerEvent& b) { return a.time < b.time; });
    // A run not seen to end is known up to where this machine's copy of each rank's events stops (a detached run,
    // a lost node). Past the earliest of those, a rank's silence is only its copy ending sooner, not a hang: the
    // diagnosis stops there.
    double horizon = std::numeric_limits<double>::infinity();
    if (!m_record.endSeen() && !timeline.isEmpty()) {
        QHash<int, double> lastOfRank;
        for (const TrainerEvent& event : std::as_const(timeline))
            lastOfRank[event.rank] = event.time; // in time order: the last one stays
        for (const double last : std::as_const(lastOfRank))
            horizon = std::min(horizon, last);
        timeline.erase(std::upper_bound(timeline.begin(), timeline.end(), horizon,
                                        [](double t, const TrainerEvent& e) { return t < e.time; }),
                       timeline.end());
    }
    m_knownUntil = horizon;
    QVector<QPair<double, int>> exits; // (time, rank)
    for (auto it = m_record.exits.cbegin(); it != m_record.exits.cend(); ++it)
        exits.append({it->seenAt.isValid() ? static_cast<double>(it->seenAt.toMSecsSinceEpoch()) / 1000.0 : 0.0,
                      it.key()});
    std::sort(exits.begin(), exits.end());
    double tick = timeline.isEmpty() ? 0.0 : timeline.front().time;
    qsizetype nextExit = 0;
    const auto exitsUntil = [&](double t) {
        for (; nextExit < exits.size() && exits[nextExit].first <= t; ++nextExit)
            m_diagnostics.rankExited(exits[nextExit].second, m_record.exits.value(exits[nextExit].second).status);
    };
    for (qsizetype i = 0; i < timeline.size();) {
        tick += 0.1;
        const qsizetype from = i;
        while (i < timeline.size() && timeline[i].time <= tick)
            ++i;
        if (i == from && i < timeline.size() && timeline[i].time > tick + 60.0)
            tick = timeline[i].time - 0.1; // a long silence: jump, after one evaluation inside it
        m_diagnostics.addEvents(timeline.mid(from, i - from));
        exitsUntil(tick);
        diagnose(tick);
    }
    exitsUntil(std::numeric_limits<double>::infinity());
    replayExits();
    for (const KernelLogCapture& capture : m_store->kernelLogs(m_record.id))
        m_diagnostics.addKernelLog(capture);
    m_diagnostics.runEnded(m_record, firstFailedRankLastLines());
    if (m_record.endSeen())
        diagnose(static_cast<double>(m_record.ended.toMSecsSinceEpoch()) / 1000.0);
    else if (std::isfinite(horizon))
        diagnose(horizon);
    else
        diagnose(static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0);
    return true;
}

// No node starts its ranks before every node is ready: a node that cannot be reached or deployed to stops the
// launch with nothing started anywhere, where the ranks of the nodes ready first would otherwise run into a
// rendezvous that cannot complete, until the teardown ends them.
void RunEngine::onPrepared(int node) {
    m_preparedNodes.insert(node);
    if (m_tearingDown || m_launchFailed)
        return; // the teardown's stop tells this node's worker that nothing was started
    if (m_preparedNodes.size() < m_workers.size()) {
        emit nodeProgress(node, m_record.nodes.value(node).host,
                          QStringLiteral("ready; its ranks start once every node is (%1 of %2 ready)")
                              .arg(m_preparedNodes.size())
                              .arg(m_workers.size()));
        return;
    }
    for (NodeWorker* worker : std::as_const(m_workers))
        QMetaObject::invokeMethod(worker, &NodeWorker::start, Qt::QueuedConnection);
}

void RunEngine::onFailed(int node, int kind, const QString& message) {
    const QString host = m_record.nodes.value(node).host;
    const QString cause =
        QStringLiteral("%1: %2 (%3)").arg(host, message, transportErrorKindName(static_cast<TransportErrorKind>(kind)));
    emit nodeProgress(node, host, QStringLiteral("failed: %1").arg(message));
    m_drainedNodes.insert(node);
    m_stoppedNodes.insert(node);
    if (m_record.state != QLatin1String("launching")) {
        // Following a running run: a node that cannot be reached (a changed host key, refused credentials)
        // is not a reason to stop the ranks on the others. Say so, and finish once the others are done.
        m_unfollowed = true;
        m_record.summary = QStringLiteral("cannot follow %1").arg(cause);
        if (m_drainedNodes.size() == m_workers.size())
            finish(QStringLiteral("lost"));
        return;
    }
    // The first failure in full, and every node that failed too by name: with sixteen nodes, the one named is not
    // the only one to fix.
    if (!m_launchFailed) {
        m_firstLaunchFailure = cause;
        m_otherLaunchFailures.clear();
    } else {
        m_otherLaunchFailures.append(
            QStringLiteral("%1 (%2)").arg(host, transportErrorKindName(static_cast<TransportErrorKind>(kind))));
    }
    m_record.summary = m_otherLaunchFailures.isEmpty()
                           ? m_firstLaunchFailure
                           : QStringLiteral("%1; also failed: %2")
                                 .arg(m_firstLaunchFailure, m_otherLaunchFailures.join(QStringLiteral(", ")));
    m_launchFailed = true;
    if (!m_tearingDown)
        teardown(m_options.failureGraceSeconds);
    else if (m_stoppedNodes.size() == m_workers.size())
        emit stopped(m_processesLeft);
    if (m_drainedNodes.size() == m_workers.size())
        finish(QStringLiteral("failed"));
}

void RunEngine::onDrained(int node) {
    m_drainedNodes.insert(node);
    if (m_drainedNodes.size() < m_workers.size())
        return;
    if (m_tearingDown && m_stoppedNodes.size() < m_workers.size())
        return; // finish once the teardown is verified
    if (m_kernelLogs->pending())
        return; // finish once the kernel logs asked for are in (bounded: the worker's read has a timeout)
    noticeStopRequest();
    judgeExits(true); // every error event is in now
    QString state = QStringLiteral("finished");
    const bool anyFailed = std::any_of(m_record.exits.begin(), m_record.exits.end(),
                                       [](const RankExit& exit) { return exit.status != 0 && !exit.stopped; });
    // Every rank ran to its end (a stop asked after that, or as it ended, found nothing to stop): finished.
    const bool everyRankDone = m_record.worldSize > 0 && m_record.exits.size() == m_record.worldSize &&
                               std::all_of(m_record.exits.begin(), m_record.exits.end(),
                                           [](const RankExit& exit) { return exit.status == 0; });
    if (m_launchFailed || m_record.firstFailedRank >= 0)
        state = QStringLiteral("failed");
    else if (m_stopRequested && !everyRankDone)
        state = QStringLiteral("stopped");
    else if (m_unfollowed)
        state = QStringLiteral("lost"); // some node's ranks were never seen to end
    else if (anyFailed)
        state = QStringLiteral("failed");
    finish(state);
}

void RunEngine::onStopped(int node, int left, const QString& detail) {
    m_stoppedNodes.insert(node);
    if (left < 0 || m_processesLeft < 0)
        m_processesLeft = -1;
    else
        m_processesLeft += left;
    if (!detail.isEmpty())
        emit nodeProgress(node, m_record.nodes.value(node).host, QStringLiteral("teardown: %1").arg(detail));
    if (m_stoppedNodes.size() < m_workers.size())
        return;
    emit stopped(m_processesLeft);
    if (m_drainedNodes.size() == m_workers.size())
        onDrained(node);
}

void RunEngine::teardown(int graceSeconds) {
    if (m_tearingDown)
        return;
    m_tearingDown = true;
    m_teardownAt = QDateTime::currentDateTimeUtc();
    m_teardownGraceSeconds = graceSeconds;
    for (int i = 0; i < m_workers.size(); ++i) {
        NodeWorker* worker = m_workers[i];
        if (!worker || m_stoppedNodes.contains(i))
            continue;
        QMetaObject::invokeMethod(
            worker, [worker, graceSeconds] { worker->stop(graceSeconds); }, Qt::QueuedConnection);
    }
    if (m_stoppedNodes.size() == m_workers.size())
        emit stopped(m_processesLeft);
}

void RunEngine::stop() {
    if (m_finished || m_workers.isEmpty() || m_record.endSeen()) // nothing runs: an ended run, attached to
        return;
    // A stop asked before, by a front end that left while it ran (a second Ctrl-C), keeps its time: the ranks'
    // SIGTERM errors from then on are that stop's, not failures before this one.
    noticeStopRequest();
    m_stopRequested = !m_tearingDown || m_stopRequested;
    if (m_stopRequested && !m_stopRequestedAt.isValid()) {
        m_stopRequestedAt = QDateTime::currentDateTimeUtc();
        QString error;
        if (!m_store->markStopRequested(m_record.id, m_stopRequestedAt, &error))
            qWarning("rankscope: %s", qPrintable(error));
    }
    teardown(m_options.stopGraceSeconds);
}

void RunEngine::detach() {
    m_debug.reset(); // the forward ends with the following: gdbserver sees its one connection go and ends the rank
    m_debugServer.reset();
    m_diagnosisTimer->stop();
    saveRecord();
    releaseWorkers();
    m_workers.clear(); // no longer following: isActive() is false, and a new run may start
}

void RunEngine::finish(const QString& state) {
    if (m_finished)
        return;
    m_finished = true;
    // A run whose end was seen before it was attached to (to read its logs, or by a late stop) keeps the end that
    // is stored: its state, time, summary and verdict.
    const bool endedHere = !m_record.endSeen();
    if (endedHere) {
        m_record.state = state;
        m_record.ended = QDateTime::currentDateTimeUtc();
        if (state == QLatin1String("stopped") && m_record.summary.isEmpty())
            m_record.summary = QStringLiteral("stopped by the user");
    }
    saveRecord();
    m_debug.reset(); // the forward ends with the run
    m_debugServer.reset();
    releaseWorkers();
    m_diagnosisTimer->stop();
    m_diagnostics.runEnded(m_record, firstFailedRankLastLines());
    diagnose(static_cast<double>(m_record.ended.toMSecsSinceEpoch()) / 1000.0);
    // What listings show of the run (`rankscope-cli runs`, the app's history, the bridge): the findings at its end
    // say more than the summary the record was saved with above (the hung rank a failure waited on).
    if (endedHere) {
        QVector<Diagnosis> findings = m_diagnostics.all();
        if (m_attached) {
            // Followed since an attach: what happened before it is in the store, which this engine read in one go
            // and then saw the ranks mostly as they ended (a detached run whose rank failed waiting on a hung one,
            // found over when attached; a stop whose first front end died). The store replayed in the order things
            // happened knows at least as much, and is what `diagnose` shows: its findings stand over the live ones of
            // the same key. Those it says otherwise than they were said are said again.
            QVector<Diagnosis> stored = storedFindings();
            QVector<Diagnosis> changed;
            for (const Diagnosis& finding : std::as_const(stored)) {
                const auto live = std::find_if(findings.cbegin(), findings.cend(),
                                               [&finding](const Diagnosis& d) { return d.key == finding.key; });
                if (live == findings.cend() ? !finding.resolved
                                            : live->message != finding.message || live->resolved != finding.resolved)
                    changed.append(finding);
            }
            foldFindings(findings, stored);
            if (!changed.isEmpty())
                emit diagnoses(changed);
        }
        const QString verdict = runVerdict(m_record, findings);
        if (verdict != m_record.verdict) {
            m_record.verdict = verdict;
            saveRecord();
        }
    }
    emit finished(m_record);
}

QVector<Diagnosis> RunEngine::storedFindings() const {
    RunEngine offline(m_store, m_options);
    QVector<Diagnosis> found;
    connect(&offline, &RunEngine::diagnoses,
            [&found](const QVector<Diagnosis>& changed) { foldFindings(found, changed); });
    QString error;
    if (!offline.open(m_record.id, &error))
        qWarning("rankscope: %s", qPrintable(error));
    return found;
}

QVector<StoredLine> RunEngine::firstFailedRankLastLines() const {
    if (m_record.firstFailedRank < 0 || m_record.id.isEmpty())
        return {};
    return lastStoredLines(*m_store, m_record.id, m_record.firstFailedRank, kRootCauseLines);
}

void RunEngine::saveRecord() {
    QString error;
    if (!m_record.id.isEmpty() && !m_store->save(m_record, &error))
        qWarning("rankscope: %s", qPrintable(error));
}

void RunEngine::releaseWorkers() {
    for (const QPointer<NodeWorker>& worker : std::as_const(m_workers))
        if (worker)
            QMetaObject::invokeMethod(worker, &NodeWorker::shutdown, Qt::QueuedConnection);
    // A command that only reads (a stack capture under gdb, the kernel log) is given up rather than waited for;
    // one that changes a node (a stop) runs to its end. See CommandEffect.
    for (QThread* thread : std::as_const(m_threads))
        thread->requestInterruption();
    for (QThread* thread : std::as_const(m_threads)) {
        thread->quit();
        thread->wait();
        delete thread;
    }
    m_threads.clear();
}

} // namespace rankscope::remote
