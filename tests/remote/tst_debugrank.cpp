// SPDX-License-Identifier: MIT
// One rank of a real 2-rank Gloo run started under gdbserver, reached by a real `gdb --batch` at the address
// the engine hands out: on the local transport (gdbserver's own port), through the SSH forward to a private
// sshd on loopback, and across a network namespace (gdbserver listens on the node's own loopback, which this
// machine cannot reach but through the forward). gdb breaks in the trainer's step function, reads the step
// number twice (the peer takes part in the step between), then detaches or the run is stopped under it; the
// run ends with no process left, gdbserver included, and the forward closed. Also: a debug rank outside the
// job is refused, the CLI prints the address and a gdb command line, and the SFTP copy of a node's file.
#include "core/deploymanifest.h"
#include "enginetestutil.h"
#include "fixtures/netnsfixture.h"
#include "fixtures/sshdfixture.h"
#include "remote/localtransport.h"
#include "remote/portforwarder.h"
#include "remote/sshtransport.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

using namespace rankscope;
using namespace rankscope::test;

namespace {

const QString kTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");
const QString kCli = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli");

QJsonObject trainerJson(int maxSteps, int epochs = 1) {
    const QJsonArray extra{"--threads", "1", "--heartbeat-s", "0.5"};
    return QJsonObject{{"dataset", "synthetic"}, {"model", "mlp"},    {"epochs", epochs}, {"max_steps", maxSteps},
                       {"batch_size", 16},       {"backend", "gloo"}, {"device", "cpu"},  {"extra_args", extra}};
}

QJsonObject localJob(int maxSteps) {
    return QJsonObject{
        {"version", 1},
        {"name", "debug-rank-local"},
        {"mode", "debug"},
        {"master_port", freePort()},
        {"trainer", trainerJson(maxSteps)},
        {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"max_steps", maxSteps}, {"verbose", false}}}};
}

// gdb in batch mode as the engine's command line sets it up, then `commands`, each an -ex.
QStringList gdbArguments(const remote::DebugServer& server, const QStringList& commands) {
    QStringList arguments{"--batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off"};
    if (!server.sysroot.isEmpty())
        arguments << "-ex" << QStringLiteral("set sysroot %1").arg(server.sysroot);
    if (!server.buildSourceDir.isEmpty())
        arguments << "-ex" << QStringLiteral("set substitute-path %1 %2").arg(server.buildSourceDir, server.sourceDir);
    arguments << "-ex" << QStringLiteral("target remote %1").arg(server.address);
    for (const QString& command : commands)
        arguments << "-ex" << command;
    return arguments << server.program;
}

// Break in the step function, read the step number, sleep there (the peer waits in its collective), read it
// once more at the next step, then `last` (detach, or continue with no breakpoint).
QStringList breakAndReadStep(const QString& last, int sleepSeconds = 0) {
    QStringList commands{"break Trainer::trainStep", "continue", "print m_state.globalStep", "info source"};
    if (sleepSeconds > 0)
        commands << QStringLiteral("shell sleep %1").arg(sleepSeconds);
    return commands << "continue"
                    << "print m_state.globalStep"
                    << "delete" << last;
}

// What a gdb session must show: the breakpoint hit in trainStep, step 0 then step 1 read, the file found.
void checkGdbOutput(const QString& output, const remote::DebugServer& server) {
    QVERIFY2(output.contains(QRegularExpression(QStringLiteral("Breakpoint 1, .*Trainer::trainStep"))),
             qPrintable(output));
    QVERIFY2(output.contains(QLatin1String("$1 = 0")), qPrintable(output));
    QVERIFY2(output.contains(QLatin1String("$2 = 1")), qPrintable(output));
    QVERIFY2(output.contains(QStringLiteral("Located in %1/src/training.cpp").arg(server.sourceDir)),
             qPrintable(output));
}

// Processes of a run still alive on this machine (the nodes share its process table), gdbserver included.
QString leftovers(const QString& runId) {
    QProcess pgrep;
    pgrep.start(QStringLiteral("pgrep"), {QStringLiteral("-af"), runId});
    pgrep.waitForFinished(5000);
    return QString::fromUtf8(pgrep.readAllStandardOutput()).trimmed();
}

// gdbserver (on every interface, whatever host it is given) no longer listens once the engine connected to it
// from loopback: nobody else can take the rank. `run` runs a command where gdbserver runs.
template <typename Run> void checkClaimed(const QString& runDir, Run run) {
    std::optional<int> port;
    for (const QByteArray& line : readAll(runDir + "/rank1.err").split('\n'))
        port = port ? port : remote::gdbserverPort(line);
    QVERIFY(port);
    const QByteArray local = ":" + QByteArray::number(*port) + " ";
    // gdbserver closes its listener once it has accepted the engine's connection, a moment after the engine's
    // connect returned (on a loaded machine the connection was seen waiting in its queue, Recv-Q 1).
    CommandResult listening;
    const auto stillListens = [&] {
        listening = run({"ss", "-ltnH"});
        return !listening.succeeded() || listening.output.contains(local);
    };
    QTRY_VERIFY2_WITH_TIMEOUT(!stillListens(), listening.output.constData(), 15000);
    const CommandResult connected = run({"ss", "-tnH", "state", "established"});
    QVERIFY2(connected.output.contains("127.0.0.1" + local), connected.output.constData());
}

// A socket of 127.0.0.1 and its port: a listener (listen=true) or a connection to `port`.
int loopbackSocket(bool listen, int* port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(listen ? 0 : *port));
    socklen_t length = sizeof address;
    const bool ok = listen ? ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                                 ::listen(fd, 4) == 0 &&
                                 ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0
                           : ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    if (listen)
        *port = ntohs(address.sin_port);
    return ok ? fd : (::close(fd), -1);
}

bool acceptsConnections(const QString& address) {
    const int port = address.section(QLatin1Char(':'), 1).toInt();
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(static_cast<uint16_t>(port));
    const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
    ::close(fd);
    return connected;
}

// The local addresses ("127.0.0.1:4242") of the sockets this process listens on, as `ss` lists them.
QStringList ownListeners() {
    const CommandResult listed = runCommand(QStringLiteral("ss"), {QStringLiteral("-ltnpH")});
    const QString mine = QStringLiteral("pid=%1,").arg(::getpid());
    QStringList local;
    for (const QString& line : QString::fromUtf8(listed.output).split(QLatin1Char('\n'), Qt::SkipEmptyParts))
        if (line.contains(mine))
            local << line.simplified().section(QLatin1Char(' '), 3, 3);
    return local;
}

// The local transport, with the file it is asked for cut to `cutTo` bytes once its first chunk was read: a node's
// file that shrinks while it is copied (a trainer rebuilt under the copy).
class ShrinkingFile final : public remote::Transport {
public:
    ShrinkingFile(QString path, qint64 cutTo) : m_path(std::move(path)), m_cutTo(cutTo) {}

    QString host() const override { return m_local.host(); }
    bool isLocal() const override { return true; }
    void connect() override { m_local.connect(); }
    void disconnect() override { m_local.disconnect(); }
    bool isConnected() const override { return m_local.isConnected(); }
    remote::ExecResult exec(const QString& command, const QByteArray& input, std::chrono::milliseconds timeout,
                            remote::CommandEffect effect) override {
        return m_local.exec(command, input, timeout, effect);
    }
    void writeFile(const QString& path, const QByteArray& data, int mode) override {
        m_local.writeFile(path, data, mode);
    }
    void uploadFile(const QString& localPath, const QString& remotePath, int mode) override {
        m_local.uploadFile(localPath, remotePath, mode);
    }
    QByteArray readFrom(const QString& path, qint64 offset, qint64 maxBytes) override {
        const QByteArray chunk = m_local.readFrom(path, offset, maxBytes);
        if (path == m_path && !std::exchange(m_cut, true))
            QFile::resize(path, m_cutTo);
        return chunk;
    }
    std::optional<QByteArray> readWhole(const QString& path) override { return m_local.readWhole(path); }
    std::optional<qint64> fileSize(const QString& path) override { return m_local.fileSize(path); }
    void makeDirectories(const QString& path) override { m_local.makeDirectories(path); }
    QString homeDirectory() override { return m_local.homeDirectory(); }

private:
    remote::LocalTransport m_local;
    QString m_path;
    qint64 m_cutTo = 0;
    bool m_cut = false;
};

// `finished` spies on the engine from its launch: the run may end while a gdb session is being waited for.
RunRecord waitForEnd(QSignalSpy& finished, int timeoutMs) {
    if (finished.isEmpty())
        finished.wait(timeoutMs);
    return finished.isEmpty() ? RunRecord() : finished.front().front().value<RunRecord>();
}

remote::DebugServer waitForServer(QSignalSpy& ready, QSignalSpy& errors, int timeoutMs = 90000) {
    [[maybe_unused]] const bool seen =
        QTest::qWaitFor([&] { return !ready.isEmpty() || !errors.isEmpty(); }, timeoutMs);
    return ready.isEmpty() ? remote::DebugServer() : ready.front().front().value<remote::DebugServer>();
}

} // namespace

class tst_DebugRank final : public QObject {
    Q_OBJECT

private:
    remote::EngineOptions engineOptions(const QString& knownHosts = {}) const {
        remote::EngineOptions options;
        options.knownHostsPath = knownHosts;
        options.sshConfigPath = QStringLiteral("none");
        options.localTrainer = kTrainer;
        return options;
    }
    static remote::LaunchOptions debugRank(int rank) {
        remote::LaunchOptions options;
        options.debugRank = rank;
        return options;
    }
    // A gdb session run to its end while the event loop turns (the engine keeps following meanwhile).
    static QString runGdb(const QStringList& arguments, int timeoutMs = 120000) {
        QProcess gdb;
        gdb.setProcessChannelMode(QProcess::MergedChannels);
        gdb.start(QStringLiteral("gdb"), arguments);
        if (!QTest::qWaitFor([&] { return gdb.state() == QProcess::NotRunning; }, timeoutMs))
            return QStringLiteral("gdb did not finish within %1 ms: %2")
                .arg(timeoutMs)
                .arg(QString::fromUtf8(gdb.readAll()));
        return QString::fromUtf8(gdb.readAll());
    }
    bool hangBlamesTheDebugger(const QSignalSpy& diagnoses) const {
        for (const auto& call : diagnoses)
            for (const Diagnosis& d : call.front().value<QVector<Diagnosis>>())
                if (d.kind == DiagnosisKind::Hang && d.message.contains(QLatin1String("rank 1 is under the debugger")))
                    return true;
        return false;
    }
    // The SSH cases: a 2-rank job on `nodes`, rank 1 debugged; gdb detaches after reading two steps and the
    // run finishes, or (stopUnderGdb) the run is stopped while gdb is still attached.
    void debugOverSsh(const QJsonArray& nodes, const QString& knownHosts, const QString& name, bool stopUnderGdb,
                      const NetnsFixture* netns = nullptr, const QJsonObject& launcher = {}) {
        QJsonObject job{{"version", 1},
                        {"name", name},
                        {"mode", "submit"},
                        {"deploy", "binary"},
                        {"master_port", freePort()},
                        {"nodes", nodes},
                        // A run stopped under gdb must outlast the stop: an epoch of the synthetic data is 128
                        // steps, gone in about a second once gdb lets the rank go on, and a stop that comes after
                        // the run's end finds it finished.
                        {"trainer", stopUnderGdb ? trainerJson(100000, 1000) : trainerJson(4)}};
        for (auto it = launcher.begin(); it != launcher.end(); ++it)
            job.insert(it.key(), it.value());
        RunStore store(m_dir.filePath(QStringLiteral("store-") + name));
        remote::RunEngine engine(&store, engineOptions(knownHosts));
        QSignalSpy ready(&engine, &remote::RunEngine::debugServerReady);
        QSignalSpy errors(&engine, &remote::RunEngine::debugServerError);
        QSignalSpy stopped(&engine, &remote::RunEngine::stopped);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, debugRank(1), &error), qPrintable(error));
        const remote::DebugServer server = waitForServer(ready, errors);
        QVERIFY2(errors.isEmpty(), qPrintable(errors.value(0).value(0).toString()));
        QCOMPARE(server.rank, 1);
        QCOMPARE(server.program, kTrainer); // the node runs a copy of this machine's binary
        QCOMPARE(server.sysroot, QStringLiteral("/"));
        QVERIFY2(server.address.startsWith(QLatin1String("127.0.0.1:")), qPrintable(server.address));
        const QString runId = engine.record().id;
        const int node = engine.record().nodeOfRank(1);
        const QString runDir = engine.record().nodes[node].runDir;
        QVERIFY(readAll(runDir + "/rank1.cmd").contains("gdbserver"));
        QVERIFY(!readAll(runDir + "/rank0.cmd").contains("gdbserver"));
        if (netns) // the node's gdbserver is claimed through the forward, from the node's own loopback
            checkClaimed(runDir, [&](const QStringList& command) { return netns->exec(node, command); });
        else
            checkClaimed(runDir, [](const QStringList& command) { return runCommand(command[0], command.mid(1)); });

        if (!stopUnderGdb) {
            const QString output = runGdb(gdbArguments(server, breakAndReadStep("detach")));
            checkGdbOutput(output, server);
            const RunRecord record = waitForEnd(finished, 120000);
            QCOMPARE(record.state, QStringLiteral("finished"));
            for (const RankExit& exit : record.exits)
                QCOMPARE(exit.status, 0);
        } else {
            QSignalSpy events(&engine, &remote::RunEngine::events);
            QProcess gdb;
            gdb.setProcessChannelMode(QProcess::MergedChannels);
            gdb.start(QStringLiteral("gdb"), gdbArguments(server, breakAndReadStep("continue")));
            QTRY_VERIFY_WITH_TIMEOUT(steppedTo(events, 1, 4), 90000); // gdb let it go on: it trains under gdb
            QCOMPARE(gdb.state(), QProcess::Running);
            engine.stop();
            QTRY_VERIFY_WITH_TIMEOUT(!stopped.isEmpty(), 60000);
            QCOMPARE(stopped.front().front().toInt(), 0);
            QTRY_VERIFY_WITH_TIMEOUT(gdb.state() == QProcess::NotRunning, 30000); // the remote end went away
            checkGdbOutput(QString::fromUtf8(gdb.readAll()), server);
            QCOMPARE(waitForEnd(finished, 60000).state, QStringLiteral("stopped"));
        }
        QCOMPARE(engine.debugServer().has_value(), false);
        QTRY_COMPARE_WITH_TIMEOUT(leftovers(runId), QString(), 10000);
        QVERIFY2(!acceptsConnections(server.address), qPrintable(server.address)); // the forward is gone
    }

    SshdFixture m_sshd;
    QTemporaryDir m_dir;

private slots:
    void initTestCase() {
        qRegisterMetaType<RunRecord>();
        QVERIFY(QFileInfo(kTrainer).isExecutable());
        if (QStandardPaths::findExecutable(QStringLiteral("gdb")).isEmpty() ||
            QStandardPaths::findExecutable(QStringLiteral("gdbserver")).isEmpty())
            QSKIP("gdb and gdbserver are needed (Debian: apt install gdb gdbserver)");
        QString error;
        QVERIFY2(m_sshd.start(&error), qPrintable(error));
    }
    void cleanupTestCase() { QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-f"), m_dir.path()}); }

    // The debugger's facts apart from a run: the gdb command line (the sysroot first, the source path substituted
    // only where it moved, words quoted only where a shell needs it), the JSON the bridge sends, and gdbserver's
    // port line.
    void gdbCommandLineAndPortLine() {
        remote::DebugServer server;
        server.rank = 1;
        server.host = QStringLiteral("gpu-b");
        server.address = QStringLiteral("127.0.0.1:40213");
        server.program = QStringLiteral("/w/run dir/rankscope-trainer");
        server.sourceDir = QStringLiteral("/src/rankscope");
        server.buildSourceDir = server.sourceDir;
        QCOMPARE(remote::gdbCommandLine(server),
                 QStringLiteral("gdb -q -ex 'target remote 127.0.0.1:40213' '/w/run dir/rankscope-trainer'"));
        QJsonObject json = server.toJson();
        QVERIFY(!json.contains("sysroot"));
        QCOMPARE(json.value("build_source_dir").toString(), server.sourceDir);
        server.program = QStringLiteral("/w/rankscope-trainer");
        server.buildSourceDir = QStringLiteral("/build/rankscope");
        server.sysroot = QStringLiteral("/");
        QCOMPARE(remote::gdbCommandLine(server),
                 QStringLiteral("gdb -q -ex 'set sysroot /' -ex 'set substitute-path /build/rankscope /src/rankscope' "
                                "-ex 'target remote 127.0.0.1:40213' /w/rankscope-trainer"));
        json = server.toJson();
        QCOMPARE(json.value("sysroot").toString(), QStringLiteral("/"));
        QCOMPARE(json.value("build_source_dir").toString(), QStringLiteral("/build/rankscope"));
        server.buildSourceDir.clear();
        QVERIFY(!server.toJson().contains("build_source_dir"));

        QCOMPARE(remote::gdbserverPort("Listening on port 40213"), std::optional<int>(40213));
        QCOMPARE(remote::gdbserverPort("Listening on port 40213\r"), std::optional<int>(40213));
        QCOMPARE(remote::gdbserverPort("Listening on port 0"), std::nullopt);
        QCOMPARE(remote::gdbserverPort("Listening on port 70000"), std::nullopt);
        QCOMPARE(remote::gdbserverPort("warning: Listening on port 40213 was refused"), std::nullopt);
    }

    // A rank under gdbserver ends with its program's status, not gdbserver's: an exit status as it is, a signal
    // as 128+N, as the supervisor reads any rank's; the environment is the rank's. Real gdbserver and gdb; the
    // program a shell script.
    void aDebuggedRanksStatusIsItsProgramsOwn_data() {
        QTest::addColumn<QString>("program");
        QTest::addColumn<int>("status");
        QTest::newRow("exit 3, from the rank's environment") << "exit $RANKSCOPE_TEST_STATUS" << 3;
        QTest::newRow("SIGKILL") << "kill -9 $$" << 128 + 9;
    }

    void aDebuggedRanksStatusIsItsProgramsOwn() {
        QFETCH(QString, program);
        QFETCH(int, status);
        if (QStandardPaths::findExecutable(QStringLiteral("gdbserver")).isEmpty())
            QSKIP("gdbserver is not installed");
        QTemporaryDir runDir;
        QVERIFY(runDir.isValid());
        // A script file: gdbserver without a shell takes no argument with a blank in it.
        QFile script(runDir.filePath(QStringLiteral("program.sh")));
        QVERIFY(script.open(QIODevice::WriteOnly) && script.write(program.toUtf8() + '\n') > 0);
        script.close();
        QProcess rank;
        rank.setStandardErrorFile(runDir.filePath(QStringLiteral("rank1.err")));
        rank.start(QStringLiteral("/bin/sh"),
                   {QStringLiteral("-c"),
                    remote::debugRankScript(runDir.path(), 1, QStringLiteral("/bin/sh"), {script.fileName()},
                                            {{QStringLiteral("RANKSCOPE_TEST_STATUS"), "3"}})});
        QVERIFY(rank.waitForStarted());
        std::optional<int> port;
        QElapsedTimer waited;
        waited.start();
        while (!port && waited.elapsed() < 30000) {
            for (const QByteArray& line : readAll(runDir.filePath(QStringLiteral("rank1.err"))).split('\n'))
                port = port ? port : remote::gdbserverPort(line);
            QTest::qWait(50);
        }
        QVERIFY2(port, readAll(runDir.filePath(QStringLiteral("rank1.err"))).constData());
        QProcess gdb;
        gdb.start(QStringLiteral("gdb"),
                  {"--batch", "-nx", "-ex", QStringLiteral("target remote 127.0.0.1:%1").arg(*port), "-ex", "continue",
                   "/bin/sh"});
        QVERIFY(gdb.waitForFinished(60000));
        QVERIFY(rank.waitForFinished(30000));
        QCOMPARE(rank.exitStatus(), QProcess::NormalExit);
        QVERIFY2(rank.exitCode() == status,
                 qPrintable(QStringLiteral("status %1; %2")
                                .arg(rank.exitCode())
                                .arg(QString::fromUtf8(readAll(runDir.filePath(QStringLiteral("rank1.err")))))));
    }

    void debugRankOutsideTheJobIsRefused() {
        RunStore store(m_dir.filePath(QStringLiteral("store-bad")));
        remote::RunEngine engine(&store, engineOptions());
        for (const int rank : {2, -1}) {
            QString error;
            QVERIFY(!engine.launch(jobFrom(localJob(4)), RunMode::Debug, debugRank(rank), &error));
            QVERIFY2(error.startsWith(QStringLiteral("debug rank %1 is not a rank of this job").arg(rank)),
                     qPrintable(error));
            QVERIFY2(error.contains(QLatin1String("(0-1)")), qPrintable(error));
            QVERIFY(!engine.isActive());
        }
        QVERIFY(store.list().isEmpty());

        // gdbserver starts the trainer without a shell and refuses an argument with a blank: said before anything
        // starts, naming the argument.
        QJsonObject job = localJob(4);
        QJsonObject trainer = job.value("trainer").toObject();
        trainer.insert("extra_args", QJsonArray{"--threads", "1", "--checkpoint-dir", "/w/check points"});
        job.insert("trainer", trainer);
        QString error;
        QVERIFY(!engine.launch(jobFrom(job), RunMode::Debug, debugRank(1), &error));
        QVERIFY2(error.startsWith(QLatin1String("debug rank 1: gdbserver cannot hand the trainer an argument with a "
                                                "blank in it: '/w/check points'")),
                 qPrintable(error));
        QVERIFY(!engine.isActive());
        QVERIFY(store.list().isEmpty());
    }

    // This machine: gdbserver's own address; rank 0 waits in its collective while rank 1 sits at a breakpoint,
    // and the hang the engine sees says that rank 1 is under the debugger. Detached, the run finishes.
    void localRankUnderGdb() {
        RunStore store(m_dir.filePath(QStringLiteral("store-local")));
        remote::RunEngine engine(&store, engineOptions());
        QSignalSpy ready(&engine, &remote::RunEngine::debugServerReady);
        QSignalSpy errors(&engine, &remote::RunEngine::debugServerError);
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(localJob(5)), RunMode::Debug, debugRank(1), &error), qPrintable(error));
        const remote::DebugServer server = waitForServer(ready, errors);
        QVERIFY2(errors.isEmpty(), qPrintable(errors.value(0).value(0).toString()));
        QCOMPARE(server.rank, 1);
        QCOMPARE(server.host, QStringLiteral("localhost"));
        QCOMPARE(server.program, kTrainer);
        QVERIFY(QFileInfo(server.sourceDir + "/src/training.cpp").isFile());
        QVERIFY2(server.gdbCommand.startsWith(QLatin1String("gdb -q -ex 'set sysroot /' ")),
                 qPrintable(server.gdbCommand));
        QVERIFY2(server.gdbCommand.endsWith(QStringLiteral("-ex 'target remote %1' %2").arg(server.address, kTrainer)),
                 qPrintable(server.gdbCommand));
        QCOMPARE(engine.debugServer()->address, server.address);
        QCOMPARE(engine.record().debugRank, 1);
        const QString runDir = engine.record().nodes.front().runDir;
        QVERIFY(readAll(runDir + "/rank0.cmd").contains("'--timeout-s' '86400'")); // the peers wait a day
        checkClaimed(runDir, [](const QStringList& command) { return runCommand(command[0], command.mid(1)); });

        QProcess gdb;
        gdb.setProcessChannelMode(QProcess::MergedChannels);
        gdb.start(QStringLiteral("gdb"), gdbArguments(server, breakAndReadStep("detach", 6)));
        QTRY_VERIFY_WITH_TIMEOUT(hangBlamesTheDebugger(diagnoses), 60000);
        QTRY_VERIFY_WITH_TIMEOUT(gdb.state() == QProcess::NotRunning, 120000);
        checkGdbOutput(QString::fromUtf8(gdb.readAll()), server);

        const RunRecord record = waitForEnd(finished, 120000);
        QCOMPARE(record.state, QStringLiteral("finished"));
        QCOMPARE(record.exits.value(1).status, 0); // the trainer's own status, after gdbserver let it go
        int steps = 0;
        QVERIFY(stepsAreContiguous(readAll(store.streamPath(record.id, 1, RankStream::Events)), &steps));
        QCOMPARE(steps, 5);
        QCOMPARE(store.load(record.id)->debugRank, 1);
        QTRY_COMPARE_WITH_TIMEOUT(leftovers(record.id), QString(), 10000);
    }

    // A node over SSH (the loopback sshd): the address is a forward through the engine's own session.
    // The run is stopped while gdb is attached: gdbserver and the trainer end, gdb sees the remote end go.
    void sshNodeRankStoppedUnderGdb() {
        const QJsonObject node = m_sshd.nodeJson(QStringLiteral("loop"), m_dir.filePath(QStringLiteral("work")), 2);
        debugOverSsh(QJsonArray{node}, m_sshd.knownHostsPath(), QStringLiteral("loop"), true);
    }

    // A trainer built on the node (here: its build cache seeded with this machine's binary, so nothing is
    // compiled) is copied into the run store for its symbols; the command maps the node's source folder to
    // this machine's, and gdb reads the node's libraries unless told otherwise.
    void nodeBuiltTrainerIsCopiedForItsSymbols() {
        QString error;
        const auto sources = DeployManifest::fromDirectory(QStringLiteral(":/rankscope/trainer"), &error);
        QVERIFY2(sources, qPrintable(error));
        const QString work = m_dir.filePath(QStringLiteral("work-built"));
        const QString build = work + QStringLiteral("/trainer/build-") + QString::fromLatin1(sources->hash().left(16));
        QVERIFY(QDir().mkpath(build + QStringLiteral("/bin")));
        QVERIFY(QFile::copy(kTrainer, build + QStringLiteral("/bin/rankscope-trainer")));
        QFile ok(build + QStringLiteral("/ok"));
        QVERIFY(ok.open(QIODevice::WriteOnly));
        ok.close();
        const QJsonObject node = m_sshd.nodeJson(QStringLiteral("loop"), work, 2);
        const QJsonObject job{{"version", 1},
                              {"name", "built"},
                              {"mode", "submit"},
                              {"deploy", "build"},
                              {"master_port", freePort()},
                              {"nodes", QJsonArray{node}},
                              {"trainer", trainerJson(4)}};
        RunStore store(m_dir.filePath(QStringLiteral("store-built")));
        remote::RunEngine engine(&store, engineOptions(m_sshd.knownHostsPath()));
        QSignalSpy ready(&engine, &remote::RunEngine::debugServerReady);
        QSignalSpy errors(&engine, &remote::RunEngine::debugServerError);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, debugRank(1), &error), qPrintable(error));
        remote::DebugServer server = waitForServer(ready, errors);
        QVERIFY2(errors.isEmpty(), qPrintable(errors.value(0).value(0).toString()));
        QCOMPARE(server.program, store.runDir(engine.record().id) + QStringLiteral("/debug/rankscope-trainer"));
        QCOMPARE(readAll(server.program), readAll(kTrainer));
        QCOMPARE(server.buildSourceDir, work + QStringLiteral("/trainer/src"));
        QCOMPARE(server.sysroot, QString());
        QVERIFY2(server.gdbCommand.contains(
                     QStringLiteral("-ex 'set substitute-path %1 %2'").arg(server.buildSourceDir, server.sourceDir)),
                 qPrintable(server.gdbCommand));
        server.sysroot = QStringLiteral("/"); // this node is this machine: spare reading LibTorch through the forward
        checkGdbOutput(runGdb(gdbArguments(server, breakAndReadStep("detach"))), server);
        QCOMPARE(waitForEnd(finished, 120000).state, QStringLiteral("finished"));
    }

    // The torchrun launcher starts the node's ranks, rank 1 through the same rank1.cmd: under gdbserver.
    void torchrunRankUnderGdb() {
        const QString torchrun = QStringLiteral("/usr/bin/torchrun");
        if (!QFileInfo(torchrun).isExecutable())
            QSKIP("no /usr/bin/torchrun (Debian's python3-torch) on this machine");
        const QJsonObject node =
            m_sshd.nodeJson(QStringLiteral("loop"), m_dir.filePath(QStringLiteral("work-torchrun")), 2);
        debugOverSsh(QJsonArray{node}, m_sshd.knownHostsPath(), QStringLiteral("torchrun"), false, nullptr,
                     QJsonObject{{"launcher", "torchrun"}, {"torchrun", torchrun}});
    }

    // Two namespace nodes, one rank each: rank 1's gdbserver is on n1's loopback, reached through the forward.
    void namespaceNodeRankUnderGdb() {
        if (const QString reason = NetnsFixture::skipReason(); !reason.isEmpty())
            QSKIP(qPrintable(reason));
        NetnsFixture nodes;
        QString error;
        QVERIFY2(nodes.start(2, &error), qPrintable(error));
        QJsonArray nodeList;
        for (int i = 0; i < 2; ++i)
            nodeList.append(
                nodes.nodeJson(i, QStringLiteral("n%1").arg(i), m_dir.filePath(QStringLiteral("netns%1").arg(i)), 1));
        debugOverSsh(nodeList, nodes.knownHostsPath(), QStringLiteral("netns"), false, &nodes);
    }

    // `rankscope-cli run JOB --debug-rank R` prints the address and a gdb command line that works.
    void cliPrintsTheAddressAndGdbCommand() {
        const QString jobPath = m_dir.filePath(QStringLiteral("cli-job.json"));
        QFile file(jobPath);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QJsonDocument(localJob(3)).toJson());
        file.close();
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("RANKSCOPE_HOME"), m_dir.filePath(QStringLiteral("cli-home")));

        for (const QString& bad : {QStringLiteral("2"), QStringLiteral("7"), QStringLiteral("one")}) { // ranks 0-1
            QProcess cli;
            cli.setProcessEnvironment(environment);
            cli.start(kCli, {"run", jobPath, "--debug-rank", bad, "--ssh-config", "none"});
            QVERIFY(cli.waitForFinished(30000));
            QCOMPARE(cli.exitCode(), 2);
            const QString err = QString::fromUtf8(cli.readAllStandardError());
            QVERIFY2(err.contains(QStringLiteral("--debug-rank")) && err.contains(bad), qPrintable(err));
        }

        QProcess cli;
        cli.setProcessEnvironment(environment);
        cli.start(kCli, {"run", jobPath, "--debug-rank", "1", "--ssh-config", "none"});
        QByteArray out;
        const QRegularExpression command(QStringLiteral("^\\s*(gdb -q .*target remote (127\\.0\\.0\\.1:\\d+).*)$"),
                                         QRegularExpression::MultilineOption);
        QTRY_VERIFY_WITH_TIMEOUT((out += cli.readAllStandardOutput(), command.match(QString::fromUtf8(out)).hasMatch()),
                                 90000);
        const QRegularExpressionMatch match = command.match(QString::fromUtf8(out));
        QVERIFY2(out.contains("rank 1 on localhost waits for a debugger at " + match.captured(2).toUtf8()), out);
        // The printed command line, run by a shell with batch commands added after `target remote`, reaches the rank.
        const QString target = QStringLiteral("'target remote %1'").arg(match.captured(2));
        QString line = match.captured(1);
        line.replace(QLatin1String("gdb -q "), QLatin1String("gdb -q --batch -nx "))
            .replace(target, target + QLatin1String(" -ex 'break Trainer::trainStep' -ex continue "
                                                    "-ex 'print m_state.globalStep' -ex delete -ex detach"));
        QProcess shell;
        shell.setProcessChannelMode(QProcess::MergedChannels);
        shell.start(QStringLiteral("/bin/sh"), {"-c", line});
        QTRY_VERIFY_WITH_TIMEOUT(shell.state() == QProcess::NotRunning, 120000);
        const QString gdbOutput = QString::fromUtf8(shell.readAll());
        QVERIFY2(gdbOutput.contains(QLatin1String("$1 = 0")), qPrintable(gdbOutput));
        QTRY_VERIFY_WITH_TIMEOUT(cli.state() == QProcess::NotRunning, 120000);
        out += cli.readAllStandardOutput();
        QVERIFY2(cli.exitCode() == 0, out + cli.readAllStandardError());
    }

    // The forwarder on its own, against a stand-in gdbserver (one connection, echoing): it listens on loopback
    // only; a debugger that comes before gdbserver's port is known is turned away; it connects the moment the port
    // is known, before any debugger; the first debugger is piped through, a second is turned away; gdbserver's end
    // of the session reaches the debugger; a port nobody listens on (as when something else took gdbserver's one
    // connection) is reported.
    void forwarderClaimsTheOneConnection() {
        int serverPort = 0;
        const int listener = loopbackSocket(true, &serverPort);
        QVERIFY(listener >= 0);
        std::atomic<int> accepted{0};
        std::thread server([&] { // accepts one connection and echoes it, like gdbserver --once, until EOF or a kill
            const int connection = ::accept(listener, nullptr, nullptr);
            ++accepted;
            char buffer[256];
            ssize_t n = 0;
            while ((n = ::recv(connection, buffer, sizeof buffer, 0)) > 0 &&
                   !QByteArray::fromRawData(buffer, n).contains("$k#6b"))
                ::send(connection, buffer, static_cast<size_t>(n), MSG_NOSIGNAL);
            ::close(connection); // after a kill packet: gdbserver ends the session first
        });
        const auto stopServer = qScopeGuard([&] {
            ::shutdown(listener, SHUT_RDWR);
            server.join();
            ::close(listener);
        });

        QThread thread;
        auto* forwarder = new remote::PortForwarder(std::make_unique<remote::LocalTransport>());
        forwarder->moveToThread(&thread);
        connect(&thread, &QThread::finished, forwarder, &QObject::deleteLater);
        QSignalSpy ready(forwarder, &remote::PortForwarder::ready);
        QSignalSpy progress(forwarder, &remote::PortForwarder::progress);
        const QStringList listenedBefore = ownListeners();
        thread.start();
        const auto stopThread = qScopeGuard([&] {
            forwarder->requestStop();
            thread.quit();
            thread.wait();
        });
        QMetaObject::invokeMethod(
            forwarder, [forwarder] { forwarder->run({}, {}); }, Qt::QueuedConnection);
        // It listens at once, on 127.0.0.1 alone (gdbserver's session is nobody else's): found as the listener this
        // process has now and had not before.
        QString address;
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                for (const QString& local : ownListeners())
                    if (!listenedBefore.contains(local))
                        address = local;
                return !address.isEmpty();
            }(),
            5000);
        QVERIFY2(address.startsWith(QLatin1String("127.0.0.1:")), qPrintable(address));
        int earlyPort = address.section(QLatin1Char(':'), -1).toInt();
        const int early = loopbackSocket(false, &earlyPort);
        QVERIFY(early >= 0);
        const timeval patience{10, 0}; // a debugger that is never answered fails the test instead of hanging it
        QCOMPARE(::setsockopt(early, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience), 0);
        char reply[64] = {};
        QCOMPARE(::recv(early, reply, sizeof reply, 0), 0); // no gdbserver to pipe to yet: closed at once
        ::close(early);
        QTRY_VERIFY_WITH_TIMEOUT(!progress.isEmpty(), 5000);
        QVERIFY2(progress.back().front().toString().contains(QLatin1String("before gdbserver listened")),
                 qPrintable(progress.back().front().toString()));
        QVERIFY(ready.isEmpty()); // no port yet: nothing to claim
        forwarder->setTargetPort(serverPort);
        QTRY_COMPARE_WITH_TIMEOUT(ready.size(), 1, 10000);
        // Claimed before any debugger came. The forwarder's connect returns once the kernel has the connection
        // queued; the stand-in's accept (and its count) may come a moment later, on its own thread.
        QTRY_COMPARE_WITH_TIMEOUT(accepted.load(), 1, 5000);
        int localPort = ready.front().front().toInt();
        QCOMPARE(localPort, earlyPort);

        const int debugger = loopbackSocket(false, &localPort);
        QVERIFY(debugger >= 0);
        QCOMPARE(::setsockopt(debugger, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience), 0);
        QCOMPARE(::send(debugger, "$qSupported#37", 14, 0), 14);
        QCOMPARE(::recv(debugger, reply, 14, MSG_WAITALL), 14);
        QCOMPARE(QByteArray(reply, 14), QByteArray("$qSupported#37"));
        const qsizetype saidBefore = progress.size();
        const int second = loopbackSocket(false, &localPort);
        QVERIFY(second >= 0);
        QCOMPARE(::setsockopt(second, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience), 0);
        QCOMPARE(::recv(second, reply, sizeof reply, 0), 0); // closed at once
        ::close(second);
        // Said just after the forwarder closed it: the debugger may read the close first.
        QTRY_VERIFY_WITH_TIMEOUT(progress.size() > saidBefore, 5000);
        QVERIFY2(progress.back().front().toString().contains(QLatin1String("a second debugger was turned away")),
                 qPrintable(progress.back().front().toString()));
        // gdbserver ends the session (a kill): the debugger reads its end, as it would from gdbserver itself.
        QCOMPARE(::send(debugger, "$k#6b", 5, 0), 5);
        QCOMPARE(::recv(debugger, reply, sizeof reply, 0), 0);
        ::close(debugger);
        QTRY_VERIFY_WITH_TIMEOUT(!acceptsConnections(QStringLiteral("127.0.0.1:%1").arg(localPort)), 5000);

        remote::PortForwarder refused(std::make_unique<remote::LocalTransport>());
        QSignalSpy failed(&refused, &remote::PortForwarder::failed);
        int unused = 0;
        ::close(loopbackSocket(true, &unused)); // a port that was free a moment ago: nothing listens there
        refused.setTargetPort(unused);
        refused.run({}, {}); // here, on this thread: it fails at once
        QCOMPARE(failed.size(), 1);
        QVERIFY2(failed.front().front().toString().contains(QLatin1String("did something else connect first")),
                 qPrintable(failed.front().front().toString()));
    }

    // A forwarder stopped while its SSH session still connects (a node that accepts and never speaks) ends without
    // a failure: the run was stopped, nothing went wrong with the debugger's way to its rank.
    void aForwarderStoppedWhileItConnectsSaysNoFailure() {
        int silentPort = 0;
        const int silent = loopbackSocket(true, &silentPort); // the kernel accepts; nobody sends a banner
        QVERIFY(silent >= 0);
        const auto closeSilent = qScopeGuard([silent] { ::close(silent); });
        remote::SshOptions options;
        options.host = QStringLiteral("127.0.0.1");
        options.port = silentPort;
        options.user = m_sshd.userName();
        options.identityFile = m_sshd.userKeyPath();
        options.knownHostsPath = m_sshd.knownHostsPath();
        options.sshConfigPath = QStringLiteral("none");
        options.connectTimeout = std::chrono::seconds(2);
        QThread thread;
        auto* forwarder = new remote::PortForwarder(std::make_unique<remote::SshTransport>(options));
        forwarder->moveToThread(&thread);
        connect(&thread, &QThread::finished, forwarder, &QObject::deleteLater);
        QSignalSpy failed(forwarder, &remote::PortForwarder::failed);
        std::atomic<bool> returned{false};
        thread.start();
        // Joined on every way out, a failed check's too: the queued run() holds `returned` until it returns.
        const auto join = qScopeGuard([&] {
            thread.quit();
            thread.wait();
        });
        QMetaObject::invokeMethod(
            forwarder,
            [forwarder, &returned] {
                forwarder->run({}, {});
                returned = true;
            },
            Qt::QueuedConnection);
        QTest::qWait(300);
        forwarder->requestStop();
        QTRY_VERIFY_WITH_TIMEOUT(returned.load(), 30000); // once its connect gave up (2 s)
        QVERIFY2(failed.isEmpty(), qPrintable(failed.value(0).value(0).toString()));
    }

    // A node's file that shrinks while it is copied (the trainer rebuilt under the copy) is reported, and no half of
    // it is left where the whole was due.
    void aNodeFileThatShrinksIsNotCopiedHalf() {
        QByteArray data(6 * 1024 * 1024, 'x');
        const QString source = m_dir.filePath(QStringLiteral("node-trainer-shrinking"));
        QFile file(source);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(data);
        file.close();
        ShrinkingFile transport(source, 5 * 1024 * 1024);
        transport.connect();
        const std::atomic<bool> stop{false};
        const QString copy = m_dir.filePath(QStringLiteral("copied-shrinking/rankscope-trainer"));
        try {
            remote::PortForwarder::fetchFile(transport, source, copy, stop);
            QFAIL("a file that shrank while it was copied was taken whole");
        } catch (const remote::TransportError& error) {
            QVERIFY2(error.message().contains(
                         QStringLiteral("ended after %1 of %2 bytes").arg(5 * 1024 * 1024).arg(data.size())),
                     qPrintable(error.message()));
        }
        QVERIFY(!QFileInfo::exists(copy));
    }

    // The copy of a node's file that a debugged rank's trainer, built on its node, takes to get here.
    void nodeFileIsCopiedWhole() {
        QByteArray data(5 * 1024 * 1024 + 12345, Qt::Uninitialized);
        for (char& byte : data)
            byte = static_cast<char>(QRandomGenerator::global()->bounded(256));
        const QString source = m_dir.filePath(QStringLiteral("node-trainer"));
        QFile file(source);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(data);
        file.close();
        remote::SshOptions options;
        options.host = m_sshd.host();
        options.port = m_sshd.port();
        options.user = m_sshd.userName();
        options.identityFile = m_sshd.userKeyPath();
        options.knownHostsPath = m_sshd.knownHostsPath();
        options.sshConfigPath = QStringLiteral("none");
        remote::SshTransport transport(options);
        transport.connect();
        const std::atomic<bool> stop{false};
        const QString copy = m_dir.filePath(QStringLiteral("copied/rankscope-trainer"));
        remote::PortForwarder::fetchFile(transport, source, copy, stop);
        QCOMPARE(readAll(copy), data);
        QVERIFY_THROWS_EXCEPTION(remote::TransportError,
                                 remote::PortForwarder::fetchFile(transport, source + "-missing", copy + "2", stop));
        QVERIFY(!QFileInfo::exists(copy + "2"));
    }
};

QTEST_GUILESS_MAIN(tst_DebugRank)
#include "tst_debugrank.moc"
