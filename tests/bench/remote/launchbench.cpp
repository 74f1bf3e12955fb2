// SPDX-License-Identifier: MIT
// launch: from the command to every rank's `start` event on two namespace nodes (1 rank each), the engine
// against a plain OpenSSH loop that starts the same trainer command lines, detached the same way. Then the
// engine's no-change redeploy, against one ssh command doing the same checks, and where the time goes.
#include "benchnodes.h"

#include "core/deploymanifest.h"
#include "core/rankplan.h"
#include "remote/nodeworker.h"
#include "remote/shellcommand.h"
#include "remote/sshtransport.h"

#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QThread>

namespace rankscope::bench {

namespace {

using remote::shellQuote;

constexpr int kRunTimeoutMs = 180000;
constexpr int kSteps = 5;

// Milestones of one launch, in ms since the command; medians are taken per name over rounds.
using Milestones = QMap<QString, double>;

struct LaunchSample {
    double totalMs = 0; // the command to the last rank's start event, as the launcher learns of it
    Milestones milestones;
    // How much earlier rank 0 started than the last other rank: a rank whose TCPStore client finds no server
    // yet waits a whole second before it tries again (LibTorch 1.13), so this decides much of the start-up.
    double masterLeadMs = 0;
    double trainerStartupMs = 0; // the last rank's process start to the start events: rendezvous included
};

// When each rank's process started, in ms since t0, from the mtime of a file written right next to its start.
void noteRankStarts(LaunchSample& sample, const QHash<int, QString>& startFiles, double t0) {
    double first = 0;
    double last = 0;
    double master = 0;
    double lastOther = 0;
    for (auto it = startFiles.begin(); it != startFiles.end(); ++it) {
        const double ms = static_cast<double>(QFileInfo(it.value()).lastModified().toMSecsSinceEpoch()) - t0;
        first = it == startFiles.begin() ? ms : std::min(first, ms);
        last = std::max(last, ms);
        if (it.key() == 0)
            master = ms;
        else
            lastOther = std::max(lastOther, ms);
    }
    sample.milestones.insert("4 first rank process started", first);
    sample.milestones.insert("5 last rank process started", last);
    sample.masterLeadMs = lastOther - master;
}

void noteTrainerStartup(LaunchSample& sample) {
    sample.trainerStartupMs = sample.milestones.value("7 start events written (trainer clock)") -
                              sample.milestones.value("5 last rank process started");
}

void noteFirst(Milestones& milestones, const QString& name, double ms) {
    if (!milestones.contains(name))
        milestones.insert(name, ms);
}

std::optional<LaunchSample> launchWithEngine(JobSpec job, const remote::EngineOptions& options, RunStore& store,
                                             QString* error) {
    job.masterPort = freshMasterPort();
    remote::RunEngine engine(&store, options);
    LaunchSample sample;
    QHash<int, double> arrived;
    std::optional<RunRecord> record;
    double t0 = wallMs();
    QObject::connect(&engine, &remote::RunEngine::nodeProgress, [&](int, const QString&, const QString& message) {
        // The last node to reach a phase is what the launch waits for.
        const QString phase = message.section(QLatin1Char(' '), 0, 0);
        const QHash<QString, QString> names{{"deploying", "2 connected, SFTP up"},
                                            {"starting", "3 deployed, run files written"}};
        if (names.contains(phase))
            sample.milestones[names[phase]] = std::max(sample.milestones.value(names[phase]), wallMs() - t0);
    });
    QObject::connect(&engine, &remote::RunEngine::launched,
                     [&] { noteFirst(sample.milestones, "6 supervisors started (launched)", wallMs() - t0); });
    QObject::connect(&engine, &remote::RunEngine::events, [&](const QVector<TrainerEvent>& events) {
        const double now = wallMs();
        for (const TrainerEvent& event : events) {
            if (event.type != TrainerEventType::Start || arrived.contains(event.rank))
                continue;
            arrived.insert(event.rank, now - t0);
            sample.milestones["7 start events written (trainer clock)"] =
                std::max(sample.milestones.value("7 start events written (trainer clock)"), event.time * 1000 - t0);
        }
    });
    QObject::connect(&engine, &remote::RunEngine::finished, [&](const RunRecord& r) { record = r; });
    t0 = wallMs();
    if (!engine.launch(job, RunMode::Submit, error))
        return std::nullopt;
    sample.milestones.insert("1 launch() returned", wallMs() - t0);
    const int world = static_cast<int>(engine.record().worldSize);
    waitUntil([&] { return arrived.size() == world || record; }, kRunTimeoutMs);
    if (arrived.size() == world) {
        for (const double ms : std::as_const(arrived))
            sample.totalMs = std::max(sample.totalMs, ms);
        sample.milestones.insert("8 start events arrived", sample.totalMs);
    }
    if (!waitUntil([&] { return record.has_value(); }, kRunTimeoutMs)) {
        engine.stop();
        waitUntil([&] { return record.has_value(); }, 30000);
    }
    if (!record || record->state != QLatin1String("finished") || arrived.size() != world) {
        *error = record ? QStringLiteral("engine run %1: %2").arg(record->state, record->summary)
                        : QStringLiteral("engine run did not end");
        return std::nullopt;
    }
    QHash<int, QString> pidFiles; // the supervisor writes rankR.pid right after starting the rank
    for (const RunNodeRecord& node : record->nodes)
        for (const int rank : node.ranks)
            pidFiles.insert(rank, node.runDir + QStringLiteral("/rank%1.pid").arg(rank));
    noteRankStarts(sample, pidFiles, t0);
    noteTrainerStartup(sample);
    return sample;
}

// One ssh command per node: write each rank's command file, start it with setsid and redirected stdio as the
// supervisor does, then wait (polling every 20 ms, like the engine) until each rank's events file holds its
// start event.
QString baselineCommand(const QString& runDir, const QString& trainer, const RankPlan& plan, int node) {
    QStringList parts{QStringLiteral("mkdir -p %1 && cd %1").arg(shellQuote(runDir))};
    QStringList started;
    for (const RankAssignment& rank : plan.ranks) {
        if (rank.nodeIndex != node)
            continue;
        const QString events = runDir + QStringLiteral("/rank%1.events").arg(rank.rank);
        remote::ShellCommand command(trainer, rank.args + QStringList{QStringLiteral("--events"), events});
        for (const auto& [name, value] : rank.env)
            command.setEnvironment(name, value);
        const QString script = QStringLiteral("cd %1 && exec %2").arg(shellQuote(runDir), command.toString());
        parts << QStringLiteral("printf '%s\\n' %1 >rank%2.cmd").arg(shellQuote(script)).arg(rank.rank)
              << QStringLiteral("{ setsid /bin/sh rank%1.cmd </dev/null >rank%1.out 2>rank%1.err & }").arg(rank.rank);
        started << QStringLiteral("grep -qs '\"type\":\"start\"' rank%1.events").arg(rank.rank);
    }
    return parts.join(QStringLiteral(" && ")) +
           QStringLiteral("; until %1; do sleep 0.02; done").arg(started.join(QStringLiteral(" && ")));
}

QByteArray readFile(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

bool anyProcessMatches(const QString& pattern) {
    QProcess pgrep;
    pgrep.start(QStringLiteral("pgrep"), {QStringLiteral("-f"), pattern});
    pgrep.waitForFinished(10000);
    return pgrep.exitCode() == 0;
}

double startEventTimeMs(const QByteArray& events) {
    for (const QByteArray& line : events.split('\n')) {
        if (!line.contains("\"type\":\"start\""))
            continue;
        const qsizetype at = line.indexOf("\"time\":");
        return at < 0 ? 0 : line.mid(at + 7).split(',').value(0).toDouble() * 1000;
    }
    return 0;
}

std::optional<LaunchSample> launchWithSsh(BenchNodes& nodes, JobSpec job, const QString& trainer, int round,
                                          QString* error) {
    job.masterPort = freshMasterPort();
    const RankPlan plan = planRanks(job, RunMode::Submit);
    QVector<QString> runDirs;
    std::vector<std::unique_ptr<QProcess>> ssh;
    QHash<int, double> returned;
    LaunchSample sample;
    const double t0 = wallMs();
    for (int node = 0; node < nodes.count(); ++node) {
        runDirs << nodes.workDir(node) + QStringLiteral("/runs/ssh-loop-%1/node%2").arg(round).arg(node);
        auto process = std::make_unique<QProcess>();
        QObject::connect(process.get(), &QProcess::finished, [&returned, node, t0] { returned[node] = wallMs() - t0; });
        process->start(QStringLiteral("ssh"),
                       sshArguments(nodes.target(node), baselineCommand(runDirs.last(), trainer, plan, node)));
        ssh.push_back(std::move(process));
    }
    const bool done = waitUntil([&] { return returned.size() == nodes.count(); }, kRunTimeoutMs);
    for (int node = 0; node < nodes.count(); ++node) {
        if (!done || ssh[node]->exitCode() != 0) {
            *error = QStringLiteral("ssh loop, node %1: %2")
                         .arg(node)
                         .arg(QString::fromUtf8(ssh[node]->readAllStandardError()));
            return std::nullopt;
        }
        sample.totalMs = std::max(sample.totalMs, returned[node]);
    }
    QHash<int, QString> cmdFiles; // written right before the rank starts
    for (const RankAssignment& rank : plan.ranks)
        cmdFiles.insert(rank.rank, runDirs[rank.nodeIndex] + QStringLiteral("/rank%1.cmd").arg(rank.rank));
    noteRankStarts(sample, cmdFiles, t0);
    auto eventsOf = [&](const RankAssignment& rank) {
        return readFile(runDirs[rank.nodeIndex] + QStringLiteral("/rank%1.events").arg(rank.rank));
    };
    for (const RankAssignment& rank : plan.ranks)
        sample.milestones["7 start events written (trainer clock)"] = std::max(
            sample.milestones.value("7 start events written (trainer clock)"), startEventTimeMs(eventsOf(rank)) - t0);
    sample.milestones.insert("8 every ssh returned", sample.totalMs);
    noteTrainerStartup(sample);
    // The run goes on to its end before the next launch, as the engine's does.
    const bool ended = waitUntil(
        [&] {
            return std::all_of(plan.ranks.begin(), plan.ranks.end(),
                               [&](const RankAssignment& rank) { return eventsOf(rank).contains("\"type\":\"end\""); });
        },
        kRunTimeoutMs);
    for (const QString& runDir : std::as_const(runDirs))
        waitUntil([&] { return !anyProcessMatches(runDir); }, 10000);
    if (!ended)
        *error = QStringLiteral("the ssh loop's ranks did not end");
    return ended ? std::optional<LaunchSample>(sample) : std::nullopt;
}

struct DeploySample {
    double connectIncludedMs = 0; // connect, SFTP start, then the deploy checks
    double connectExcludedMs = 0; // the deploy checks alone
    QJsonArray calls;
};

// The engine's node worker, alone and timed call by call: a launch of no ranks on an already deployed node
// runs exactly the no-change deploy (tools manifest, trainer binary's ok mark), then writes an empty run.
std::optional<DeploySample> redeployWithWorker(BenchNodes& nodes, const QString& trainer, int round, QString* error) {
    remote::SshOptions ssh;
    ssh.host = nodes.target(0).host;
    ssh.user = nodes.target(0).user;
    ssh.identityFile = nodes.target(0).identityFile;
    ssh.knownHostsPath = nodes.target(0).knownHosts;
    ssh.sshConfigPath = QStringLiteral("none");
    auto owned = std::make_unique<TimingTransport>(std::make_unique<remote::SshTransport>(ssh));
    TimingTransport* timing = owned.get();
    remote::NodeWorker worker(0, std::move(owned));
    double deployingAt = -1;
    bool drained = false;
    QObject::connect(&worker, &remote::NodeWorker::progress, [&](int, const QString& message) {
        if (message.startsWith(QLatin1String("deploying")))
            deployingAt = timing->elapsedMs();
    });
    QObject::connect(&worker, &remote::NodeWorker::failed, [&](int, int, const QString& message) { *error = message; });
    QObject::connect(&worker, &remote::NodeWorker::drained, [&] { drained = true; });
    remote::NodeLaunch launch;
    launch.name = QStringLiteral("node-a");
    launch.workDir = nodes.workDir(0);
    launch.runId = QStringLiteral("redeploy-%1").arg(round);
    launch.mode = QStringLiteral("submit");
    launch.deploy.strategy = QStringLiteral("binary");
    launch.deploy.localTrainer = trainer;
    launch.deploy.localTrainerSha256 = sha256OfFile(trainer);
    const double begin = timing->elapsedMs();
    QObject::connect(&worker, &remote::NodeWorker::prepared, [&] { worker.start(); }); // one node: ready is all
    worker.prepare(launch);
    waitUntil([&] { return drained || !error->isEmpty(); }, 30000);
    worker.shutdown();
    if (!drained || deployingAt < 0) {
        if (error->isEmpty())
            *error = QStringLiteral("the node worker did not finish its redeploy");
        return std::nullopt;
    }
    DeploySample sample;
    double runFilesAt = -1;
    for (const TimingTransport::Call& call : timing->calls()) {
        sample.calls.append(QJsonObject{{"call", call.what}, {"ms", std::round(call.ms * 10) / 10}});
        if (runFilesAt < 0 && call.what.startsWith(QLatin1String("makeDirectories")) && call.what.contains("/runs/"))
            runFilesAt = call.startMs;
    }
    sample.connectIncludedMs = runFilesAt - begin;
    sample.connectExcludedMs = runFilesAt - deployingAt;
    return sample;
}

double timedSsh(const OpensshTarget& target, const QString& command) {
    const double t0 = wallMs();
    QProcess ssh;
    ssh.start(QStringLiteral("ssh"), sshArguments(target, command));
    if (!ssh.waitForFinished(60000) || ssh.exitCode() != 0)
        return -1;
    return wallMs() - t0;
}

// The trainer alone on this machine, where its start-up goes. Every figure is from the command to the start
// event (or, for --help, to the exit).
struct TrainerStartup {
    double helpMs = 0;       // process start and LibTorch loading
    double soloMs = 0;       // a world of one: loading, a TCPStore on 127.0.0.1, data, model
    double togetherMs = 0;   // a world of two on 127.0.0.1, rank 1 started first, rank 0 right after it
    double rank0FirstMs = 0; // the same with rank 0 started 100 ms before rank 1
};

double trainerToStartEvent(const QString& trainer, int worldSize, int rank0LeadMs) {
    QTemporaryDir dir;
    const QString init = worldSize == 1 ? QStringLiteral("tcp://127.0.0.1:0")
                                        : QStringLiteral("tcp://127.0.0.1:%1").arg(freshMasterPort());
    std::vector<std::unique_ptr<QProcess>> ranks;
    auto start = [&](int rank) {
        auto process = std::make_unique<QProcess>();
        process->setStandardOutputFile(QProcess::nullDevice());
        process->setStandardErrorFile(QProcess::nullDevice());
        process->start(trainer, {"--rank",
                                 QString::number(rank),
                                 "--world-size",
                                 QString::number(worldSize),
                                 "--init-method",
                                 init,
                                 "--dataset",
                                 "synthetic",
                                 "--model",
                                 "mlp",
                                 "--max-steps",
                                 "1",
                                 "--batch-size",
                                 "16",
                                 "--threads",
                                 "1",
                                 "--no-eval",
                                 "--device",
                                 "cpu",
                                 "--events",
                                 dir.filePath(QStringLiteral("rank%1.events").arg(rank))});
        ranks.push_back(std::move(process));
    };
    const double t0 = wallMs();
    if (worldSize == 1) {
        start(0);
    } else if (rank0LeadMs > 0) {
        start(0);
        QThread::msleep(static_cast<unsigned long>(rank0LeadMs));
        start(1);
    } else {
        start(1);
        start(0);
    }
    for (const auto& process : ranks)
        process->waitForFinished(120000);
    return startEventTimeMs(readFile(dir.filePath(QStringLiteral("rank0.events")))) - t0;
}

TrainerStartup trainerStartup(const QString& trainer) {
    TrainerStartup startup;
    QProcess help;
    help.setStandardOutputFile(QProcess::nullDevice());
    const double t0 = wallMs();
    help.start(trainer, {QStringLiteral("--help")});
    help.waitForFinished(60000);
    startup.helpMs = wallMs() - t0;
    startup.soloMs = trainerToStartEvent(trainer, 1, 0);
    startup.togetherMs = trainerToStartEvent(trainer, 2, 0);
    startup.rank0FirstMs = trainerToStartEvent(trainer, 2, 100);
    return startup;
}

QJsonObject medians(const QVector<Milestones>& samples) {
    QJsonObject out;
    for (const QString& name : samples.value(0).keys()) {
        QVector<double> values;
        for (const Milestones& sample : samples)
            values << sample.value(name);
        out.insert(name, std::round(median(values) * 10) / 10);
    }
    return out;
}

} // namespace

QJsonObject runLaunchBench(const BenchArgs& args, QString* error) {
    BenchNodes nodes(args.text(QStringLiteral("login-shell")));
    if (!nodes.start(2, error))
        return {};
    const QString trainer = args.trainer();
    const auto job = jobFromJson(nodes.job(QStringLiteral("launch-bench"), kSteps, 1), error);
    if (!job)
        return {};
    QTemporaryDir storeDir;
    RunStore store(storeDir.path());
    const remote::EngineOptions options = nodes.engineOptions(trainer, args.integer(QStringLiteral("poll-ms"), 20));
    {
        // Warm-up: deploys tools and binary to both nodes, so that no round measures an upload.
        remote::RunEngine engine(&store, options);
        if (!BenchNodes::runToEnd(engine, *job, kRunTimeoutMs, error))
            return {};
    }
    const QString deployed =
        QStringLiteral("/trainer/bin-%1/rankscope-trainer").arg(QString::fromLatin1(sha256OfFile(trainer).left(16)));
    QVector<double> engineMs, sshMs, redeployIn, redeployEx, sshCheckMs, sshTrueMs, helpMs, soloMs, togetherMs,
        rank0FirstMs;
    QVector<double> engineLead, sshLead, engineStartup, sshStartup;
    QVector<Milestones> engineMilestones, sshMilestones;
    QJsonArray calls;
    for (int round = 0; round < args.rounds(); ++round) {
        // Alternate which goes first, so that whatever the machine does meanwhile hits both alike.
        for (int side = 0; side < 2; ++side) {
            if ((side + round) % 2 == 0) {
                const auto sample = launchWithEngine(*job, options, store, error);
                if (!sample)
                    return {};
                engineMs << sample->totalMs;
                engineLead << sample->masterLeadMs;
                engineStartup << sample->trainerStartupMs;
                engineMilestones << sample->milestones;
            } else {
                const auto sample = launchWithSsh(nodes, *job, nodes.workDir(0) + deployed, round, error);
                if (!sample)
                    return {};
                sshMs << sample->totalMs;
                sshLead << sample->masterLeadMs;
                sshStartup << sample->trainerStartupMs;
                sshMilestones << sample->milestones;
            }
        }
        const auto redeploy = redeployWithWorker(nodes, trainer, round, error);
        if (!redeploy)
            return {};
        redeployIn << redeploy->connectIncludedMs;
        redeployEx << redeploy->connectExcludedMs;
        calls = redeploy->calls;
        sshCheckMs << timedSsh(nodes.target(0),
                               QStringLiteral("cat %1/tools/.manifest >/dev/null && test -e %2")
                                   .arg(shellQuote(nodes.workDir(0)), shellQuote(nodes.workDir(0) + deployed)));
        sshTrueMs << timedSsh(nodes.target(0), QStringLiteral("true"));
        const TrainerStartup startup = trainerStartup(trainer);
        helpMs << startup.helpMs;
        soloMs << startup.soloMs;
        togetherMs << startup.togetherMs;
        rank0FirstMs << startup.rank0FirstMs;
        qInfo("launch round %d: engine %.0f ms, ssh loop %.0f ms, redeploy %.0f ms (connect excluded %.1f ms)",
              round + 1, engineMs.last(), sshMs.last(), redeployIn.last(), redeployEx.last());
    }
    const double ratio = median(engineMs) / median(sshMs);
    return QJsonObject{
        {"bench", "launch"},
        {"nodes", 2},
        {"ranks_per_node", 1},
        {"rounds", args.rounds()},
        {"login_shell", nodes.loginShellSeen()},
        {"poll_interval_ms", options.worker.pollIntervalMs},
        {"engine_ms", summary(engineMs)},
        {"ssh_loop_ms", summary(sshMs)},
        {"ratio_engine_over_ssh", std::round(ratio * 100) / 100},
        {"engine_milestones_ms", medians(engineMilestones)},
        {"engine_master_lead_ms", toJson(engineLead)},
        {"ssh_loop_master_lead_ms", toJson(sshLead)},
        {"engine_trainer_startup_ms", toJson(engineStartup)},
        {"ssh_loop_trainer_startup_ms", toJson(sshStartup)},
        {"ssh_loop_milestones_ms", medians(sshMilestones)},
        {"redeploy_connect_included_ms", summary(redeployIn)},
        {"redeploy_connect_excluded_ms", summary(redeployEx)},
        {"redeploy_calls_last_round", calls},
        {"ssh_check_ms", summary(sshCheckMs)},
        {"ssh_true_ms", summary(sshTrueMs)},
        {"trainer_help_ms", summary(helpMs)},
        {"trainer_solo_start_ms", summary(soloMs)},
        {"trainer_pair_together_start_ms", summary(togetherMs)},
        {"trainer_pair_rank0_first_start_ms", summary(rank0FirstMs)},
    };
}

} // namespace rankscope::bench
