// SPDX-License-Identifier: MIT
#include "runcommands.h"

#include "cli.h"
#include "runmonitor.h"

#include "core/arrivalorder.h"
#include "core/jobspec.h"
#include "core/linesplitter.h"
#include "core/rankplan.h"
#include "core/runstore.h"
#include "remote/runengine.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSocketNotifier>
#include <QTextStream>

#include <cmath>
#include <csignal>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

namespace rankscope::cli {

namespace {

int g_signalPipe[2] = {-1, -1};

void onSignal(int signal) {
    const char byte = static_cast<char>(signal);
    [[maybe_unused]] const auto written = ::write(g_signalPipe[1], &byte, 1);
}

} // namespace

// Ctrl-C (and SIGTERM) reach the event loop as a socket notification: nothing else is safe in a handler.
void installInterruptHandler(const std::function<void(int)>& onInterrupt) {
    if (g_signalPipe[0] < 0 && ::socketpair(AF_UNIX, SOCK_STREAM, 0, g_signalPipe) != 0)
        return;
    auto* notifier = new QSocketNotifier(g_signalPipe[0], QSocketNotifier::Read, QCoreApplication::instance());
    QObject::connect(notifier, &QSocketNotifier::activated, notifier, [onInterrupt] {
        char byte = 0;
        [[maybe_unused]] const auto n = ::read(g_signalPipe[0], &byte, 1);
        onInterrupt(static_cast<unsigned char>(byte));
    });
    struct sigaction action {};
    action.sa_handler = onSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

namespace {

// A time the engine keeps as Unix seconds, in this machine's local time.
QString localTime(double unixSeconds, const QString& format) {
    return QDateTime::fromMSecsSinceEpoch(qint64(unixSeconds * 1000.0)).toString(format);
}

remote::EngineOptions engineOptions(const ConnectionFlags& flags) {
    remote::EngineOptions options;
    options.knownHostsPath = flags.knownHosts;
    options.sshConfigPath = flags.sshConfig;
    options.acceptNewHostKeys = flags.acceptNewHostKeys;
    options.passphrase = askSecret;
    options.password = askSecret;
    return options;
}

void printError(const QString& command, const QString& message) {
    QTextStream(stderr) << "rankscope-cli " << command << ": " << message << '\n';
}

// What a signal to the following command does to the run.
enum class OnInterrupt {
    Stop,         // Ctrl-C and SIGTERM stop it (run: it started the ranks, and leaves none behind)
    StopOnCtrlC,  // Ctrl-C stops it, SIGTERM leaves it running (attach: `timeout 60 attach` only watches)
    LeaveRunning, // stop: already stopping it
};

bool isTerminal() {
    return isatty(fileno(stdout)) != 0;
}

// Attaches `monitor`'s engine to a stored run with the monitor listening already, so that the progress lines and the
// final table start from what the store holds, not from nothing.
bool attachMonitored(remote::RunEngine& engine, RunMonitor& monitor, const QString& id, QString* error) {
    monitor.setReplaying(true);
    const bool attached = engine.attach(id, error);
    monitor.setReplaying(false);
    return attached;
}

// Runs the event loop until the monitor reports the end. Ctrl-C stops the run; a second one stops waiting for that.
int follow(remote::RunEngine& engine, RunMonitor& monitor, OnInterrupt onInterrupt) {
    int interrupts = 0;
    bool stopping = onInterrupt == OnInterrupt::LeaveRunning; // `stop` has asked for it already
    installInterruptHandler([&](int signal) {
        ++interrupts;
        const bool stops =
            onInterrupt == OnInterrupt::Stop || (onInterrupt == OnInterrupt::StopOnCtrlC && signal == SIGINT);
        const QString id = engine.record().id;
        if (interrupts == 1 && stops) {
            std::fprintf(stderr,
                         "\nstopping the run on every node: SIGTERM to every rank, SIGKILL after %d s to what is left "
                         "(Ctrl-C again to stop waiting)\n",
                         engine.stopGraceSeconds());
            stopping = true;
            engine.stop();
            return;
        }
        engine.detach();
        // The ranks were told to end already: what is left of the run is left as it is, not running as it was.
        if (stopping)
            std::fprintf(stderr,
                         "\nleft run %s while it stops: rankscope-cli stop %s finishes that and checks that no "
                         "process of it is left\n",
                         qPrintable(id), qPrintable(id));
        else
            std::fprintf(stderr, "\nleft run %s running: rankscope-cli attach %s\n", qPrintable(id), qPrintable(id));
        QCoreApplication::exit(kExitRunFailed);
    });
    QObject::connect(&monitor, &RunMonitor::done, QCoreApplication::instance(),
                     [](int code) { QCoreApplication::exit(code); });
    return QCoreApplication::exec();
}

QString resolveRun(RunStore& store, const QString& command, const QString& run) {
    QString error;
    const QString id = store.resolveId(run, &error);
    if (id.isEmpty())
        printError(command, error);
    return id;
}

} // namespace

std::optional<QString> askSecret(const QString& prompt) {
    FILE* tty = std::fopen("/dev/tty", "r+");
    if (!tty)
        return std::nullopt;
    std::fprintf(tty, "%s", qPrintable(prompt));
    std::fflush(tty);
    termios old{};
    const bool isTerminal = tcgetattr(fileno(tty), &old) == 0;
    if (isTerminal) {
        termios silent = old;
        silent.c_lflag &= static_cast<tcflag_t>(~ECHO);
        tcsetattr(fileno(tty), TCSAFLUSH, &silent);
    }
    char buffer[1024] = {};
    const bool ok = std::fgets(buffer, sizeof buffer, tty) != nullptr;
    if (isTerminal)
        tcsetattr(fileno(tty), TCSAFLUSH, &old);
    std::fprintf(tty, "\n");
    std::fclose(tty);
    QString secret = QString::fromUtf8(buffer).chopped(buffer[0] && buffer[std::strlen(buffer) - 1] == '\n' ? 1 : 0);
    std::fill(std::begin(buffer), std::end(buffer), '\0');
    if (!ok)
        return std::nullopt;
    return secret;
}

std::optional<CommandJob> loadCommandJob(const QString& command, const QString& jobPath, const QString& mode,
                                         int* exitCode) {
    std::optional<RunMode> asked;
    if (mode == QLatin1String("debug"))
        asked = RunMode::Debug;
    else if (mode == QLatin1String("submit"))
        asked = RunMode::Submit;
    else if (!mode.isEmpty()) {
        printError(command, QStringLiteral("--mode must be debug or submit, not '%1'").arg(mode));
        *exitCode = kExitUsage;
        return std::nullopt;
    }
    // The job is checked for the mode it will run in.
    const JobParseResult job = loadJobFile(jobPath, asked);
    if (!job.ok()) {
        for (const JobIssue& issue : job.issues)
            QTextStream(stderr) << jobPath << ": " << issue.toString() << '\n';
        *exitCode = kExitInvalidJob;
        return std::nullopt;
    }
    return CommandJob{*job.job, job.job->mode};
}

int runRunCommand(const QString& jobPath, const QString& mode, bool detach, const ConnectionFlags& flags,
                  std::optional<int> debugRank) {
    int exitCode = kExitOk;
    const std::optional<CommandJob> job = loadCommandJob(QStringLiteral("run"), jobPath, mode, &exitCode);
    if (!job)
        return exitCode;
    if (const int world = planRanks(job->job, job->mode).worldSize;
        debugRank && world > 0 && (*debugRank < 0 || *debugRank >= world)) {
        printError(QStringLiteral("run"),
                   QStringLiteral("--debug-rank %1: the job has %2 rank(s) in %3 mode (0-%4)")
                       .arg(*debugRank)
                       .arg(world)
                       .arg(job->mode == RunMode::Debug ? QStringLiteral("debug") : QStringLiteral("submit"))
                       .arg(world - 1));
        return kExitUsage;
    }
    RunStore store;
    remote::RunEngine engine(&store, engineOptions(flags));
    RunMonitor monitor(&engine, isTerminal());
    remote::LaunchOptions launchOptions;
    launchOptions.debugRank = debugRank;
    QString error;
    if (!engine.launch(job->job, job->mode, launchOptions, &error)) {
        printError(QStringLiteral("run"), error);
        return kExitLaunchFailed;
    }
    if (detach) {
        QObject::connect(&engine, &remote::RunEngine::launched, QCoreApplication::instance(), [&](const QString& id) {
            engine.detach();
            std::printf("run %s is running detached: rankscope-cli attach %s\n", qPrintable(id), qPrintable(id));
            QCoreApplication::exit(kExitOk);
        });
    }
    const int code = follow(engine, monitor, OnInterrupt::Stop);
    // The last line, the one read first: the whole verdict, with the hung rank a failure waited on.
    if (const QString verdict = monitor.verdict(engine.record()); code != kExitOk && !verdict.isEmpty())
        printError(QStringLiteral("run"), verdict);
    return code;
}

int runAttachCommand(const QString& run, const ConnectionFlags& flags) {
    RunStore store;
    const QString id = resolveRun(store, QStringLiteral("attach"), run);
    if (id.isEmpty())
        return kExitUsage;
    remote::RunEngine engine(&store, engineOptions(flags));
    RunMonitor monitor(&engine, isTerminal());
    QString error;
    if (!attachMonitored(engine, monitor, id, &error)) {
        printError(QStringLiteral("attach"), error);
        return kExitLaunchFailed;
    }
    return follow(engine, monitor, OnInterrupt::StopOnCtrlC);
}

int runStacksCommand(const QString& run, bool json, const ConnectionFlags& flags) {
    RunStore store;
    const QString id = resolveRun(store, QStringLiteral("stacks"), run);
    if (id.isEmpty())
        return kExitUsage;
    if (const auto record = store.load(id); record && record->endSeen()) {
        // No process to take stacks of: the newest capture saved with the run (by a hang, or an earlier `stacks`).
        QString path;
        const auto saved = store.latestStacks(id, &path);
        if (!saved) {
            printError(QStringLiteral("stacks"),
                       QStringLiteral("run %1 has ended (%2): no process to take stacks of, and none were saved")
                           .arg(id, record->state));
            return kExitRunFailed;
        }
        if (json) {
            QJsonObject object = saved->toJson();
            object.insert("path", path);
            std::printf("%s", QJsonDocument(object).toJson().constData());
        } else {
            const QString at = localTime(saved->capturedAt, QStringLiteral("yyyy-MM-dd HH:mm:ss"));
            std::printf("run %s has ended (%s); its last stacks, taken at %s (%s):\n%s", qPrintable(id),
                        qPrintable(record->state), qPrintable(at), qPrintable(path), qPrintable(saved->render()));
        }
        return kExitOk;
    }
    remote::EngineOptions options = engineOptions(flags);
    options.captureStacksOnHang = false; // this command captures once, itself
    remote::RunEngine engine(&store, options);
    QString error;
    if (!engine.attach(id, &error)) {
        printError(QStringLiteral("stacks"), error);
        return kExitLaunchFailed;
    }
    QObject::connect(&engine, &remote::RunEngine::stacksError, [](const QString& message) {
        printError(QStringLiteral("stacks"), message);
    });
    QObject::connect(&engine, &remote::RunEngine::stacksCaptured, QCoreApplication::instance(),
                     [&](const StackTree& tree, const QString& path) {
                         if (json) {
                             QJsonObject object = tree.toJson();
                             object.insert("path", path);
                             std::printf("%s", QJsonDocument(object).toJson().constData());
                         } else {
                             std::printf("stacks of run %s%s:\n%s", qPrintable(id),
                                         path.isEmpty() ? "" : qPrintable(QStringLiteral(" (saved to %1)").arg(path)),
                                         qPrintable(tree.render()));
                         }
                         std::fflush(stdout);
                         engine.detach();
                         QCoreApplication::exit(tree.isEmpty() ? kExitRunFailed : kExitOk);
                     });
    QObject::connect(&engine, &remote::RunEngine::finished, QCoreApplication::instance(),
                     [&](const RunRecord& record) {
                         printError(QStringLiteral("stacks"), QStringLiteral("run %1 ended (%2) before its stacks "
                                                                             "were taken")
                                                                  .arg(id, record.state));
                         QCoreApplication::exit(kExitRunFailed);
                     });
    engine.captureStacks(); // queued behind each worker's attach, so it runs once connected
    return QCoreApplication::exec();
}

int runStopCommand(const QString& run, const ConnectionFlags& flags) {
    RunStore store;
    const QString id = resolveRun(store, QStringLiteral("stop"), run);
    if (id.isEmpty())
        return kExitUsage;
    if (const auto record = store.load(id); record && record->endSeen()) {
        // Nothing runs: the stored record stays as it ended.
        QTextStream(stdout)
            << QStringLiteral("run %1 has already ended (%2): nothing to stop\n").arg(id, record->state);
        return kExitOk;
    }
    remote::RunEngine engine(&store, engineOptions(flags));
    RunMonitor monitor(&engine, isTerminal());
    QString error;
    if (!attachMonitored(engine, monitor, id, &error)) {
        printError(QStringLiteral("stop"), error);
        return kExitLaunchFailed;
    }
    engine.stop();
    int left = -1;
    QObject::connect(&engine, &remote::RunEngine::stopped, [&left](int processesLeft) { left = processesLeft; });
    follow(engine, monitor, OnInterrupt::LeaveRunning);
    return left == 0 ? kExitOk : kExitRunFailed;
}

int runDiagnoseCommand(const QString& run, bool json) {
    RunStore store;
    const QString id = resolveRun(store, QStringLiteral("diagnose"), run);
    if (id.isEmpty())
        return kExitUsage;
    // The stored run replayed offline through the engine's own diagnosis, as of the moment it ended.
    remote::RunEngine engine(&store, remote::EngineOptions{});
    QVector<Diagnosis> found;
    QObject::connect(&engine, &remote::RunEngine::diagnoses,
                     [&found](const QVector<Diagnosis>& changed) { foldFindings(found, changed); });
    QString error;
    if (!engine.open(id, &error)) {
        printError(QStringLiteral("diagnose"), error);
        return kExitUsage;
    }
    if (json) {
        QJsonArray array;
        for (const Diagnosis& d : std::as_const(found))
            array.append(d.toJson());
        QJsonObject object{{"run", id}, {"diagnoses", array}};
        if (const double until = engine.openedKnownUntil(); std::isfinite(until)) // not seen to end: as of when
            object.insert("known_until",
                          QDateTime::fromMSecsSinceEpoch(qint64(until * 1000.0), Qt::UTC).toString(Qt::ISODateWithMs));
        std::printf("%s", QJsonDocument(object).toJson().constData());
        return kExitOk;
    }
    if (const double until = engine.openedKnownUntil(); std::isfinite(until)) {
        // Not seen to end: say how old this machine's copy is, and how to bring it up to date.
        const QString at = localTime(until, QStringLiteral("HH:mm:ss"));
        std::printf("run %s: %s, as of %s in this machine's copy (rankscope-cli attach %s brings it up to date)\n",
                    qPrintable(id), qPrintable(engine.record().state), qPrintable(at), qPrintable(id));
    }
    if (found.isEmpty())
        std::printf("run %s: nothing to report (no failure, hang, straggler or divergence)\n", qPrintable(id));
    for (const Diagnosis& d : std::as_const(found))
        std::printf("%s\n%s", qPrintable(d.toString()), qPrintable(lastLinesBlock(d, id)));
    if (const auto stacks = store.latestStacks(id)) // taken when a hang was diagnosed, or by `stacks`
        std::printf("stacks taken at %s: rankscope-cli stacks %s\n",
                    qPrintable(localTime(stacks->capturedAt, QStringLiteral("HH:mm:ss"))), qPrintable(id));
    return kExitOk;
}

int runRunsCommand(bool json) {
    RunStore store;
    const QVector<RunRecord> runs = store.list();
    if (json) {
        QJsonArray array;
        for (const RunRecord& run : runs)
            array.append(run.toJson());
        std::fwrite(QJsonDocument(array).toJson().constData(), 1, QJsonDocument(array).toJson().size(), stdout);
        return kExitOk;
    }
    QTextStream out(stdout);
    out << QStringLiteral("%1 %2 %3 %4 %5 %6\n")
               .arg(QStringLiteral("ID"), -21)
               .arg(QStringLiteral("NAME"), -20)
               .arg(QStringLiteral("MODE"), -7)
               .arg(QStringLiteral("STATE"), -9)
               .arg(QStringLiteral("RANKS"), 5)
               .arg(QStringLiteral("SUMMARY"));
    for (const RunRecord& run : runs)
        out << QStringLiteral("%1 %2 %3 %4 %5 %6\n")
                   .arg(run.id, -21)
                   .arg(run.name.left(20), -20)
                   .arg(run.mode, -7)
                   .arg(run.state, -9)
                   .arg(run.worldSize, 5)
                   .arg(run.headline());
    if (runs.isEmpty())
        out << "(no runs in " << store.root() << ")\n";
    return kExitOk;
}

int runLogsCommand(const QString& run, std::optional<int> rank, const QString& stream, bool followLogs,
                   const ConnectionFlags& flags) {
    RunStore store;
    const QString id = resolveRun(store, QStringLiteral("logs"), run);
    if (id.isEmpty())
        return kExitUsage;
    const auto record = store.load(id);
    if (!record)
        return kExitUsage;
    QVector<RankStream> streams;
    for (const QString& name : stream.split(QLatin1Char(','))) {
        const bool all = name == QLatin1String("all");
        bool known = all;
        for (const RankStream s : kRankStreams) {
            if (all || name == rankStreamSuffix(s)) {
                known = true;
                if (!streams.contains(s))
                    streams << s;
            }
        }
        if (!known) {
            printError(QStringLiteral("logs"),
                       QStringLiteral("--stream %1: each must be out, err, events or all").arg(name));
            return kExitUsage;
        }
    }
    if (rank && (*rank < 0 || *rank >= record->worldSize)) {
        printError(QStringLiteral("logs"),
                   QStringLiteral("--rank %1: run %2 has ranks 0-%3").arg(*rank).arg(id).arg(record->worldSize - 1));
        return kExitUsage;
    }
    const bool prefix = !rank || streams.size() > 1;
    if (!followLogs) {
        qint64 shown = 0;
        QVector<int> ranks;
        for (int r = 0; r < record->worldSize; ++r)
            if (!rank || r == *rank)
                ranks.append(r);
        // Several streams: their lines interleaved as they arrived on this machine, each once it is whole.
        QHash<QPair<int, int>, LineSplitter> splitters; // (rank, stream): holds its line whose end has not come yet
        visitStoredPieces(store, id, ranks, streams, [&](const StoredPiece& piece, QByteArrayView bytes, bool last) {
            shown += bytes.size();
            if (!prefix) {
                std::fwrite(bytes.data(), 1, static_cast<size_t>(bytes.size()), stdout);
                return;
            }
            LineSplitter& splitter = splitters[{piece.rank, static_cast<int>(piece.stream)}];
            QVector<LinePiece> lines = splitter.feed(bytes);
            if (last)
                lines += splitter.finish();
            for (const LinePiece& line : std::as_const(lines)) {
                std::printf("[rank %d %s] ", piece.rank, qPrintable(rankStreamSuffix(piece.stream)));
                std::fwrite(line.bytes.constData(), 1, static_cast<size_t>(line.bytes.size()), stdout);
                std::fputc('\n', stdout);
            }
        });
        std::fflush(stdout);
        // Silence is never left unexplained: an empty answer, or a copy that may be behind the run, is said so.
        if (!record->endSeen())
            printError(QStringLiteral("logs"),
                       QStringLiteral("run %1 is %2: this is this machine's copy, as far as it was last followed "
                                      "(--follow, or rankscope-cli attach %1, brings it up to date)")
                           .arg(id, record->state));
        else if (shown == 0)
            printError(QStringLiteral("logs"),
                       QStringLiteral("run %1: nothing in %2 of %3")
                           .arg(id, stream, rank ? QStringLiteral("rank %1").arg(*rank) : QStringLiteral("any rank")));
        return kExitOk;
    }
    // --follow: attach to the run; the engine replays what is stored, then delivers new lines as they come.
    remote::EngineOptions options = engineOptions(flags);
    options.captureStacksOnHang = false; // a view of the logs puts no debugger on the ranks (run and attach do)
    remote::RunEngine engine(&store, options);
    // The events file's lines are shown as the rank wrote them, in its order: read from the store's copy, which the
    // engine has appended to before it says what the bytes held.
    QHash<int, qint64> eventsShown; // per rank: bytes of its events file shown
    const auto showEvents = [&](int r) {
        QFile file(store.streamPath(id, r, RankStream::Events));
        qint64& shown = eventsShown[r];
        if (!file.open(QIODevice::ReadOnly) || !file.seek(shown))
            return;
        const QByteArray bytes = file.readAll();
        const qsizetype end = bytes.lastIndexOf('\n');
        if (end < 0)
            return;
        shown += end + 1;
        for (const QByteArray& line : bytes.left(end).split('\n')) {
            if (prefix)
                std::printf("[rank %d events] ", r);
            std::fwrite(line.data(), 1, static_cast<size_t>(line.size()), stdout);
            std::fputc('\n', stdout);
        }
    };
    const bool withEvents = streams.contains(RankStream::Events);
    QObject::connect(&engine, &remote::RunEngine::logLines, [&](const QVector<RankLogLine>& lines) {
        QSet<int> eventsOf;
        for (const RankLogLine& line : lines) {
            if ((rank && line.rank != *rank) || !streams.contains(line.stream))
                continue;
            if (line.stream == RankStream::Events) {
                eventsOf.insert(line.rank);
                continue;
            }
            if (prefix)
                std::printf("[rank %d %s] ", line.rank, qPrintable(rankStreamSuffix(line.stream)));
            std::printf("%s\n", line.text.toUtf8().constData());
        }
        for (const int r : std::as_const(eventsOf))
            showEvents(r);
        std::fflush(stdout);
    });
    QObject::connect(&engine, &remote::RunEngine::events, [&](const QVector<TrainerEvent>& events) {
        if (!withEvents)
            return;
        QSet<int> ranks;
        for (const TrainerEvent& event : events)
            if (!rank || event.rank == *rank)
                ranks.insert(event.rank);
        for (const int r : std::as_const(ranks))
            showEvents(r);
        std::fflush(stdout);
    });
    QString error;
    if (!engine.attach(id, &error)) {
        printError(QStringLiteral("logs"), error);
        return kExitLaunchFailed;
    }
    installInterruptHandler([&engine](int) {
        engine.detach();
        QCoreApplication::exit(kExitOk);
    });
    QObject::connect(&engine, &remote::RunEngine::finished, QCoreApplication::instance(),
                     [] { QCoreApplication::exit(kExitOk); });
    return QCoreApplication::exec();
}

} // namespace rankscope::cli
