// SPDX-License-Identifier: MIT
// Merged native stacks on a real hung run of the trainer, on the local transport (debug mode, Gloo): when the
// engine diagnoses the hang it takes every rank's stacks with gdb by itself, and the merged tree shows the
// hung rank apart (in the injected sleep) from the one waiting in Gloo/c10d; the tree is saved in the run
// store; `rankscope-cli stacks RUN` on the still-running run shows the same split. Where ptrace is refused
// (kernel.yama.ptrace_scope, a container without CAP_SYS_PTRACE) or gdb is missing, the test is skipped with
// the cause the engine reports.
#include "enginetestutil.h"
#include "fixtures/sshdfixture.h"

#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QScopeGuard>
#include <QTemporaryDir>

#include <algorithm>
#include <csignal>
#include <functional>
#include <optional>

using namespace rankscope;
using namespace rankscope::test;

namespace {

const QString kTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");
const QString kCli = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli");

QJsonObject hangJob(const QJsonArray& faults = {"--hang-at-step", "5", "--hang-rank", "1"},
                    const QString& heartbeatSeconds = QStringLiteral("0.5")) {
    QJsonArray extra{"--threads", "1", "--heartbeat-s", heartbeatSeconds};
    for (const QJsonValue& fault : faults)
        extra.append(fault);
    return QJsonObject{
        {"version", 1},
        {"name", "stacks"},
        {"mode", "debug"},
        {"master_port", freePort()},
        {"trainer", QJsonObject{{"dataset", "synthetic"},
                                {"model", "mlp"},
                                {"batch_size", 16},
                                {"backend", "gloo"},
                                {"device", "cpu"},
                                {"max_steps", 1000},
                                {"epochs", 1000},
                                {"extra_args", extra}}},
        {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"max_steps", 100000}, {"verbose", false}}}};
}

// The line of a rendered tree that holds `text`.
QString lineWith(const QString& rendered, const QString& text) {
    for (const QString& line : rendered.split(QLatin1Char('\n')))
        if (line.contains(text))
            return line;
    return {};
}

// The split a hang must show: rank 1 alone in the injected sleep, rank 0 alone in a labelled Gloo/c10d wait.
bool showsHungRankApart(const QString& rendered, QString* why) {
    const QString inject = lineWith(rendered, QStringLiteral("Trainer::injectFaults"));
    const QString sleep = lineWith(rendered, QStringLiteral("std::this_thread::sleep_for"));
    const QString reducer = lineWith(rendered, QStringLiteral("c10d::Reducer::finalize_backward"));
    const QString recv = lineWith(rendered, QStringLiteral("gloo::transport::tcp::UnboundBuffer::wait"));
    const QString trainStep = lineWith(rendered, QStringLiteral("Trainer::trainStep"));
    QStringList problems;
    if (!inject.trimmed().startsWith(QLatin1String("[rank 1] ")))
        problems << QStringLiteral("injectFaults: '%1'").arg(inject);
    if (!sleep.trimmed().startsWith(QLatin1String("[rank 1] ")) || !sleep.endsWith(QLatin1String("<-- sleep")))
        problems << QStringLiteral("sleep: '%1'").arg(sleep);
    if (!reducer.trimmed().startsWith(QLatin1String("[rank 0] ")) || !reducer.endsWith(QLatin1String("<-- c10d wait")))
        problems << QStringLiteral("reducer: '%1'").arg(reducer);
    if (!recv.trimmed().startsWith(QLatin1String("[rank 0] ")) || !recv.endsWith(QLatin1String("<-- gloo wait")))
        problems << QStringLiteral("gloo: '%1'").arg(recv);
    if (!trainStep.trimmed().startsWith(QLatin1String("[ranks 0-1] ")))
        problems << QStringLiteral("trainStep shared: '%1'").arg(trainStep);
    *why = problems.join(QStringLiteral("; ")) + QStringLiteral("\n") + rendered;
    return problems.isEmpty();
}

// Adds the step events `engine` delivers to `steps`.
void countSteps(remote::RunEngine& engine, int& steps) {
    QObject::connect(&engine, &remote::RunEngine::events, [&steps](const QVector<TrainerEvent>& events) {
        steps += int(std::count_if(events.begin(), events.end(),
                                   [](const TrainerEvent& e) { return e.type == TrainerEventType::Step; }));
    });
}

// A `gdb` of the test's own first on PATH while this lives: the local transport runs the capture's shell with this
// process's environment. `script` follows "#!/bin/sh".
struct GdbFirstOnPath {
    QByteArray path = qgetenv("PATH");
    bool installed = false;

    GdbFirstOnPath(const QString& dir, const QByteArray& script) {
        installed = QDir().mkpath(dir) && writeExecutable(dir + QStringLiteral("/gdb"), "#!/bin/sh\n" + script);
        qputenv("PATH", dir.toUtf8() + ':' + path);
    }
    ~GdbFirstOnPath() { qputenv("PATH", path); }
    GdbFirstOnPath(const GdbFirstOnPath&) = delete;
    GdbFirstOnPath& operator=(const GdbFirstOnPath&) = delete;
};

} // namespace

class tst_StacksE2E final : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    RunStore m_store{m_dir.filePath(QStringLiteral("store"))};

    remote::EngineOptions options() const {
        remote::EngineOptions o;
        o.localTrainer = kTrainer;
        o.sshConfigPath = QStringLiteral("none");
        return o;
    }

    // Launches a healthy 2-rank run (rank 0 a little slow), takes one capture by hand once it has made 10 steps, and
    // calls `check` with the engine, the capture's tree and the steps counted so far; the run is stopped after.
    void withOneCapture(const remote::EngineOptions& o,
                        const std::function<void(remote::RunEngine&, const StackTree&, const int& steps)>& check) {
        remote::RunEngine engine(&m_store, o);
        int steps = 0;
        countSteps(engine, steps);
        QSignalSpy captured(&engine, &remote::RunEngine::stacksCaptured);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(hangJob({"--slow-ms", "20", "--slow-rank", "0"})), RunMode::Debug, &error),
                 qPrintable(error));
        const auto stopRun = qScopeGuard([&engine, &finished] {
            if (engine.isActive()) {
                engine.stop();
                finished.wait(60000);
            }
        });
        QTRY_VERIFY_WITH_TIMEOUT(steps >= 10, 90000);
        QVERIFY(engine.captureStacks(&error));
        QTRY_VERIFY_WITH_TIMEOUT(!captured.isEmpty(), 60000);
        // The capture's own directory on the node went with it.
        QCOMPARE(captureDirectories(engine.record()), QStringList());
        check(engine, captured.front().at(0).value<StackTree>(), steps);
    }

    // The stack captures' directories (stacks.XXXXXX) in the run directory of the run's one node.
    static QStringList captureDirectories(const RunRecord& record) {
        if (record.nodes.size() != 1 || record.nodes.front().runDir.isEmpty())
            return {QStringLiteral("(no run directory)")};
        return QDir(record.nodes.front().runDir)
            .entryList({QStringLiteral("stacks.*")}, QDir::Dirs | QDir::NoDotAndDotDot);
    }

private slots:
    void initTestCase() {
        qRegisterMetaType<RunRecord>();
        qRegisterMetaType<StackTree>();
        QVERIFY(QFileInfo(kTrainer).isExecutable());
        QVERIFY(QFileInfo(kCli).isExecutable());
    }
    void cleanupTestCase() {
        stopRunsLeftIn(m_store, options());
        QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-f"), m_dir.path()});
    }

    void hangIsCapturedAutomaticallyAndByTheCli() {
        remote::RunEngine engine(&m_store, options());
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy captured(&engine, &remote::RunEngine::stacksCaptured);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(hangJob()), RunMode::Debug, &error), qPrintable(error));
        const auto hangSeen = [&] {
            for (const auto& call : diagnoses)
                for (const Diagnosis& d : call.front().value<QVector<Diagnosis>>())
                    if (d.kind == DiagnosisKind::Hang && !d.resolved)
                        return true;
            return false;
        };
        QTRY_VERIFY_WITH_TIMEOUT(hangSeen(), 90000);
        QTRY_COMPARE_WITH_TIMEOUT(captured.size(), 1, 120000);
        const StackTree tree = captured.front().at(0).value<StackTree>();
        const QString path = captured.front().at(1).toString();
        if (tree.isEmpty()) {
            engine.stop();
            QVERIFY(finished.wait(60000));
            QStringList causes;
            for (auto it = tree.errors().cbegin(); it != tree.errors().cend(); ++it)
                causes << QStringLiteral("rank %1: %2").arg(it.key()).arg(it.value());
            QSKIP(qPrintable(QStringLiteral("no stacks could be taken here: ") + causes.join(QStringLiteral("; "))));
        }
        QVERIFY2(tree.errors().isEmpty(), qPrintable(tree.render()));
        QCOMPARE(tree.runId, engine.record().id);
        QString why;
        QVERIFY2(showsHungRankApart(tree.render(), &why), qPrintable(why));

        // Saved in the run store, and it reads back as the same tree.
        QVERIFY2(path.startsWith(m_store.runDir(engine.record().id) + QStringLiteral("/stacks-")), qPrintable(path));
        const auto stored = StackTree::fromJson(QJsonDocument::fromJson(readAll(path)).object());
        QVERIFY(stored);
        QCOMPARE(stored->render(), tree.render());

        // The engine captured once for this hang, not on every diagnosis update.
        QTest::qWait(2000);
        QCOMPARE(captured.size(), 1);

        // The CLI, on the run that is still hung.
        QProcess cli;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("RANKSCOPE_HOME"), m_store.root());
        cli.setProcessEnvironment(env);
        cli.start(kCli, {QStringLiteral("stacks"), engine.record().id, QStringLiteral("--ssh-config"),
                         QStringLiteral("none")});
        QVERIFY(cli.waitForFinished(180000));
        const QString out = QString::fromUtf8(cli.readAllStandardOutput());
        const QString err = QString::fromUtf8(cli.readAllStandardError());
        QVERIFY2(cli.exitCode() == 0, qPrintable(out + err));
        QVERIFY2(out.startsWith(QStringLiteral("stacks of run %1 (saved to ").arg(engine.record().id)),
                 qPrintable(out));
        QVERIFY2(showsHungRankApart(out, &why), qPrintable(why));
        QStringList files =
            QDir(m_store.runDir(engine.record().id)).entryList({QStringLiteral("stacks-*.json")}, QDir::Files);
        QCOMPARE(files.size(), 2);

        // The run was only looked at: it is still running, and stops as usual.
        QVERIFY(engine.isActive());
        engine.stop();
        QVERIFY(finished.wait(60000));

        // Once it has ended there is nothing to take stacks of: the CLI shows the newest capture saved with it (the
        // one it took above), and `diagnose` points there.
        QProcess ended;
        ended.setProcessEnvironment(env);
        ended.start(kCli, {QStringLiteral("stacks"), engine.record().id});
        QVERIFY(ended.waitForFinished(60000));
        const QString endedOut = QString::fromUtf8(ended.readAllStandardOutput() + ended.readAllStandardError());
        QVERIFY2(ended.exitCode() == 0, qPrintable(endedOut));
        QVERIFY2(endedOut.startsWith(
                     QStringLiteral("run %1 has ended (stopped); its last stacks, taken at ").arg(engine.record().id)),
                 qPrintable(endedOut));
        QVERIFY2(showsHungRankApart(endedOut, &why), qPrintable(why));
        files.sort();
        QVERIFY2(endedOut.contains(m_store.runDir(engine.record().id) + QLatin1Char('/') + files.last()),
                 qPrintable(endedOut));
        // In JSON: that capture's tree, and where it is saved.
        QProcess endedJson;
        endedJson.setProcessEnvironment(env);
        endedJson.start(kCli, {QStringLiteral("stacks"), engine.record().id, QStringLiteral("--json")});
        QVERIFY(endedJson.waitForFinished(60000));
        QCOMPARE(endedJson.exitCode(), 0);
        const QJsonObject savedJson = QJsonDocument::fromJson(endedJson.readAllStandardOutput()).object();
        QCOMPARE(savedJson.value(QStringLiteral("path")).toString(),
                 m_store.runDir(engine.record().id) + QLatin1Char('/') + files.last());
        const auto savedTree = StackTree::fromJson(savedJson);
        QVERIFY(savedTree);
        QVERIFY2(showsHungRankApart(savedTree->render(), &why), qPrintable(savedTree->render()));
        QProcess diagnose;
        diagnose.setProcessEnvironment(env);
        diagnose.start(kCli, {QStringLiteral("diagnose"), engine.record().id});
        QVERIFY(diagnose.waitForFinished(60000));
        const QString diagnosed = QString::fromUtf8(diagnose.readAllStandardOutput());
        QVERIFY2(diagnosed.contains(QStringLiteral(": rankscope-cli stacks %1\n").arg(engine.record().id)),
                 qPrintable(diagnosed));
    }

    // gdb holds each rank of a healthy run for a moment, and its peer waits for it in the next collective: that is
    // the capture's doing, no hang (which would set off a capture of its own, and so on). Hangs are counted from the
    // capture on: before it, rank 0's first step (0.3 s asleep, plus the first iteration's set-up, on a slow VM)
    // can outlast two heartbeats of 0.2 s while rank 1 waits, which is what a hang looks like by then.
    void holdingAHealthyRunForItsStacksIsNoHang() {
        remote::RunEngine engine(&m_store, options());
        QVector<Diagnosis> hangs;
        bool capturing = false;
        connect(&engine, &remote::RunEngine::diagnoses, [&hangs, &capturing](const QVector<Diagnosis>& changed) {
            for (const Diagnosis& d : changed)
                if (d.kind == DiagnosisKind::Hang && capturing)
                    hangs.append(d);
        });
        int steps = 0;
        countSteps(engine, steps);
        QSignalSpy captured(&engine, &remote::RunEngine::stacksCaptured);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        // Rank 0 sleeps 0.3 s in every step, so rank 1 is mostly seen waiting inside a collective for it: the
        // seconds of the capture (gdb holds each rank, and the node is not read meanwhile) look like a hang
        // unless they are known to be the capture's.
        QVERIFY2(engine.launch(jobFrom(hangJob({"--slow-ms", "300", "--slow-rank", "0"}, QStringLiteral("0.2"))),
                               RunMode::Debug, &error),
                 qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(steps >= 16, 90000);
        QElapsedTimer capture;
        capture.start();
        // A capture that such an early "hang" set off has ended by now, or this one supersedes it: only the one
        // asked for here is counted.
        QVERIFY(engine.captureStacks(&error));
        capturing = true;
        const qsizetype capturesBefore = captured.size();
        QTRY_COMPARE_WITH_TIMEOUT(captured.size(), capturesBefore + 1, 120000);
        qInfo("the capture took %lld ms", capture.elapsed());
        const StackTree tree = captured.back().at(0).value<StackTree>();
        const int stepsAfterCapture = steps;
        QTRY_VERIFY_WITH_TIMEOUT(steps >= stepsAfterCapture + 12, 30000); // training goes on
        QTest::qWait(1500);
        engine.stop();
        QVERIFY(finished.wait(60000));
        if (tree.isEmpty())
            QSKIP("no stacks could be taken here: the ranks were never held");
        QVERIFY2(hangs.isEmpty(), qPrintable(hangs.value(0).message));
        QCOMPARE(captured.size(), capturesBefore + 1); // no capture of its own
    }

    // A debugger stops a rank to attach to it. One killed before it detaches (by its timeout, on a loaded node)
    // must not leave that stop behind: the run would wait for the stopped rank for good. The debugger here stops
    // the rank as an attach does, then never answers, and is killed by the capture's timeout of 2 s.
    void aDebuggerKilledMidCaptureLeavesNoRankStopped() {
        const GdbFirstOnPath gdb(m_dir.filePath(QStringLiteral("stopping-gdb")),
                                 "# gdb -nx -p PID ...: stopped as PTRACE_ATTACH stops it, and never detached\n"
                                 "kill -STOP \"$3\"\nexec sleep 60\n");
        QVERIFY(gdb.installed);

        remote::EngineOptions o = options();
        o.stackTimeoutSeconds = 2;
        o.captureStacksOnHang = false;
        withOneCapture(o, [this](remote::RunEngine& engine, const StackTree& tree, const int& steps) {
            QVERIFY2(tree.isEmpty() && tree.errors().size() == 2, qPrintable(tree.render())); // it timed out

            // Both ranks run on: neither is left stopped, and the training goes on.
            const QString runDir = engine.record().nodes.value(0).runDir;
            for (int rank : {0, 1}) {
                const QByteArray pid = readAll(runDir + QStringLiteral("/rank%1.pid").arg(rank)).trimmed();
                QVERIFY(!pid.isEmpty());
                QTRY_VERIFY2_WITH_TIMEOUT(
                    !readAll(QStringLiteral("/proc/%1/status").arg(QString::fromLatin1(pid))).contains("State:\tT"),
                    qPrintable(QStringLiteral("rank %1 (pid %2) is stopped").arg(rank).arg(pid)), 10000);
            }
            const int stepsAfterCapture = steps;
            QTRY_VERIFY_WITH_TIMEOUT(steps >= stepsAfterCapture + 10, 30000);

            // `rankscope-cli stacks` that gets no stack from any rank (a debugger that fails at once) says so, and
            // fails.
            const GdbFirstOnPath failing(m_dir.filePath(QStringLiteral("failing-gdb")), "exit 1\n");
            QVERIFY(failing.installed);
            QProcess cli;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment(); // with that gdb first on PATH
            env.insert(QStringLiteral("RANKSCOPE_HOME"), m_store.root());
            cli.setProcessEnvironment(env);
            cli.start(kCli, {QStringLiteral("stacks"), engine.record().id, QStringLiteral("--ssh-config"),
                             QStringLiteral("none")});
            QVERIFY(cli.waitForFinished(120000));
            const QByteArray err = cli.readAllStandardError();
            QVERIFY2(cli.exitCode() == 1, err.constData());
            QVERIFY2(err.contains("rankscope-cli stacks: no stacks from any rank"), err.constData());
        });
    }

    // A node's ranks are captured at once, not one after the other: on a loaded node gdb takes seconds per rank,
    // so eight ranks in turn took eight times as long, and the last rank's stacks were taken that much later than
    // the first's. The debugger here answers only once both ranks' debuggers have started (it gives up after
    // 20 s): one at a time, the first would give up, and its rank would have no stacks.
    void aNodesRanksAreCapturedAtOnce() {
        const QString started = m_dir.filePath(QStringLiteral("together-started"));
        QVERIFY(QDir().mkpath(started));
        const GdbFirstOnPath gdb(
            m_dir.filePath(QStringLiteral("together-gdb")),
            QStringLiteral("# gdb -nx -p PID ...\n"
                           "touch '%1'/\"$3\"\n"
                           "n=0\n"
                           "while [ \"$(ls '%1' | wc -l)\" -lt 2 ]; do\n"
                           "  n=$((n + 1)); [ $n -lt 200 ] || { echo 'alone' >&2; exit 1; }; sleep 0.1\n"
                           "done\n"
                           "cat '%2'\n")
                .arg(started, QStringLiteral(RANKSCOPE_SOURCE_DIR "/tests/data/stacks/gloo-hang-rank0.gdb.txt"))
                .toUtf8());
        QVERIFY(gdb.installed);

        remote::EngineOptions o = options();
        o.captureStacksOnHang = false;
        withOneCapture(o, [&started](remote::RunEngine& engine, const StackTree& tree, const int&) {
            QVERIFY2(tree.errors().isEmpty(), qPrintable(tree.render()));
            QCOMPARE(tree.ranks(), (QVector<int>{0, 1}));
            QCOMPARE(QDir(started).entryList(QDir::Files).size(), 2);
            // The outputs' directory in the run's is gone.
            const QString runDir = engine.record().nodes.value(0).runDir;
            QCOMPARE(QDir(runDir).entryList({QStringLiteral("stacks.*")}, QDir::Dirs), QStringList());
        });
    }

    // A rank stopped by a signal (SIGSTOP here; Ctrl-Z in the terminal that started it sends SIGTSTP) hangs its
    // peers like any hung rank, and is the one named, wherever its last heartbeat had it: in its own code, or (a beat
    // just before the stop, on a slow machine) inside the very collective rank 0 then waits in, where only its
    // silence tells it from a fault of the communication (tst_diagnostics pins both down). The capture the hang sets
    // off names it as stopped, with how to resume it, and leaves it stopped: the capture's SIGCONT, there for a
    // debugger that died attached, must not end the very stop being diagnosed.
    void aRankStoppedByASignalIsNamedAndLeftStopped() {
        remote::RunEngine engine(&m_store, options());
        int steps = 0;
        countSteps(engine, steps);
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy captured(&engine, &remote::RunEngine::stacksCaptured);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(hangJob({"--slow-ms", "20", "--slow-rank", "0"})), RunMode::Debug, &error),
                 qPrintable(error));
        QByteArray pid;
        const auto stopRun = qScopeGuard([&engine, &finished, &pid] {
            if (!pid.isEmpty())
                ::kill(pid.toInt(), SIGCONT);
            if (engine.isActive()) {
                engine.stop();
                finished.wait(60000);
            }
        });
        QTRY_VERIFY_WITH_TIMEOUT(steps >= 10, 90000);
        pid = readAll(engine.record().nodes.value(0).runDir + QStringLiteral("/rank1.pid")).trimmed();
        QVERIFY(pid.toInt() > 0);
        QCOMPARE(::kill(pid.toInt(), SIGSTOP), 0);
        const auto hungRank = [&]() -> int {
            for (const auto& call : diagnoses)
                for (const Diagnosis& d : call.front().value<QVector<Diagnosis>>())
                    if (d.kind == DiagnosisKind::Hang && !d.resolved && d.culprits == 1)
                        return d.ranks.front();
            return -1;
        };
        // What was found instead, should the hang not be found as it should be.
        const auto sayFindings = qScopeGuard([&diagnoses] {
            if (QTest::currentTestFailed())
                for (const auto& call : std::as_const(diagnoses))
                    for (const Diagnosis& d : call.front().value<QVector<Diagnosis>>())
                        qWarning("found: %s (culprits %d)", qPrintable(d.toString()), d.culprits);
        });
        QTRY_COMPARE_WITH_TIMEOUT(hungRank(), 1, 60000);
        QTRY_COMPARE_WITH_TIMEOUT(captured.size(), 1, 120000);
        const StackTree tree = captured.front().at(0).value<StackTree>();
        if (tree.isEmpty())
            QSKIP(qPrintable(QStringLiteral("no stacks could be taken here: ") + tree.render()));
        QVERIFY2(tree.notes().value(1).contains(QStringLiteral("was stopped by a signal before the capture")) &&
                     tree.notes().value(1).contains(QStringLiteral("kill -CONT ") + QString::fromLatin1(pid)),
                 qPrintable(tree.render()));
        QVERIFY2(!tree.notes().contains(0), qPrintable(tree.render()));
        QVERIFY2(tree.render().contains(QStringLiteral("rank 1: ")), qPrintable(tree.render()));
        // Still stopped after the capture, and so still the hang; resumed, the run goes on.
        const QString procStatus = QStringLiteral("/proc/%1/status").arg(QString::fromLatin1(pid));
        QTest::qWait(1000);
        QVERIFY2(readAll(procStatus).contains("State:\tT"), readAll(procStatus).constData());
        const int stepsStopped = steps;
        QCOMPARE(::kill(pid.toInt(), SIGCONT), 0);
        QTRY_VERIFY_WITH_TIMEOUT(steps >= stepsStopped + 10, 60000);
    }

    // Leaving a run (the CLI's Ctrl-C, closing the app) while a capture is under way does not wait for the
    // debugger, which on a loaded node takes many seconds per rank: the capture is given up, and nothing of it is
    // reported or saved. The debugger here is slow on purpose: a `gdb` first on PATH that never answers.
    void leavingDuringACaptureDoesNotWaitForIt() {
        const QString started = m_dir.filePath(QStringLiteral("slow-gdb-started"));
        std::optional<GdbFirstOnPath> gdb;
        gdb.emplace(m_dir.filePath(QStringLiteral("slow-gdb")),
                    QStringLiteral("touch '%1'\nwhile :; do sleep 1; done\n").arg(started).toUtf8());
        QVERIFY(gdb->installed);

        remote::EngineOptions slow = options();
        slow.stackTimeoutSeconds = 120;
        remote::RunEngine engine(&m_store, slow);
        QSignalSpy captured(&engine, &remote::RunEngine::stacksCaptured);
        QString error;
        QVERIFY2(engine.launch(jobFrom(hangJob()), RunMode::Debug, &error), qPrintable(error));
        const QString id = engine.record().id;
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(started), 90000); // the hang's own capture is in gdb
        QElapsedTimer leaving;
        leaving.start();
        engine.detach();
        // Not the capture's 120 s (and 15 more) per rank: the worker gives it up within its next read of the
        // command's output.
        QVERIFY2(leaving.elapsed() < 20000, qPrintable(QString::number(leaving.elapsed())));
        QTest::qWait(500); // what the worker might still have queued
        QCOMPARE(captured.size(), 0);
        QCOMPARE(QDir(m_store.runDir(id)).entryList({QStringLiteral("stacks-*.json")}, QDir::Files), QStringList());
        // Its shell was killed, so its directory on the node is still there, with the pid of that shell.
        const QStringList leftBehind = captureDirectories(engine.record());
        QCOMPARE(leftBehind.size(), 1);
        QVERIFY(QFileInfo::exists(engine.record().nodes.front().runDir + QLatin1Char('/') + leftBehind.front() +
                                  QStringLiteral("/pid")));

        // The run itself was left running, as a detach does; it is stopped from another engine, with the real gdb.
        gdb.reset();
        remote::EngineOptions quiet = options();
        quiet.captureStacksOnHang = false;
        remote::RunEngine stopper(&m_store, quiet);
        QSignalSpy finished(&stopper, &remote::RunEngine::finished);
        QVERIFY2(stopper.attach(id, &error), qPrintable(error));
        QVERIFY(stopper.isActive());
        stopper.stop();
        QVERIFY(finished.wait(60000));
        QCOMPARE(stopper.record().state, QStringLiteral("stopped"));
        // The stop swept it: nothing of the given-up capture is left in the run directory.
        QCOMPARE(captureDirectories(stopper.record()), QStringList());
    }

    // The sweep takes only the directories of captures whose shell is gone: another front end's capture that is
    // under way at the stop keeps its own, and so does one made a moment ago whose pid is not written yet.
    void theSweepLeavesACaptureThatIsUnderWay() {
        QFile resource(QStringLiteral(":/rankscope/remote/supervisor.sh"));
        QVERIFY(resource.open(QIODevice::ReadOnly));
        const QString supervisor = m_dir.filePath(QStringLiteral("sweep-supervisor.sh"));
        QFile copy(supervisor);
        QVERIFY(copy.open(QIODevice::WriteOnly) && copy.write(resource.readAll()) > 0);
        copy.close();
        const QString run = m_dir.filePath(QStringLiteral("sweep-run"));
        QVERIFY(QDir().mkpath(run));
        // Under way: a live shell's pid. Gone: the pid of a shell that ended. Made a moment ago: no pid yet. An older
        // one with no pid: its shell was killed before it wrote one.
        const QString setup =
            QStringLiteral("cd \"$1\" && mkdir stacks.live stacks.gone stacks.new stacks.old || exit 1\n"
                           "sleep 60 </dev/null >/dev/null 2>&1 &\n"
                           "echo $! >stacks.live/pid\n"
                           "sh -c 'echo $$' >stacks.gone/pid\n"
                           "touch -d '5 minutes ago' stacks.old\n"
                           "/bin/sh \"$2\" stop \"$1\" 1\n"
                           "kill $(cat stacks.live/pid)\n");
        QProcess sweep;
        sweep.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), setup, QStringLiteral("sh"), run, supervisor});
        QVERIFY(sweep.waitForFinished(30000));
        const QByteArray out = sweep.readAllStandardOutput();
        QVERIFY2(out.contains("left=0"), out.constData());
        QCOMPARE(QDir(run).entryList({QStringLiteral("stacks.*")}, QDir::Dirs | QDir::NoDotAndDotDot),
                 (QStringList{QStringLiteral("stacks.live"), QStringLiteral("stacks.new")}));
    }
};

QTEST_GUILESS_MAIN(tst_StacksE2E)
#include "tst_stacks_e2e.moc"
