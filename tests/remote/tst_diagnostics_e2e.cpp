// SPDX-License-Identifier: MIT
// The engine's live diagnosis on real runs of the trainer with its fault-injection flags, on the local
// transport (debug mode on this machine, Gloo): a hung rank is named within two heartbeat intervals, a slow
// rank is flagged as a straggler and the others are not, a failing rank is the root cause; and the stored
// runs are diagnosed the same way by `rankscope-cli diagnose`.
#include "enginetestutil.h"
#include "fixtures/sshdfixture.h"

#include "core/rankstatus.h"
#include "core/stacks.h"

#include <QDir>
#include <QJsonDocument>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <csignal>

using namespace rankscope;
using namespace rankscope::test;

namespace {

const QString kTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");
const QString kCli = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli");
constexpr double kHeartbeatSeconds = 0.5;

QJsonObject debugJob(const QString& name, int steps, const QJsonArray& faults, int procs = 2,
                     const QString& model = QStringLiteral("mlp")) {
    QJsonArray extra{"--threads", "1", "--heartbeat-s", QString::number(kHeartbeatSeconds)};
    for (const QJsonValue& fault : faults)
        extra.append(fault);
    return QJsonObject{{"version", 1},
                       {"name", name},
                       {"mode", "debug"},
                       {"master_port", freePort()},
                       {"trainer", QJsonObject{{"dataset", "synthetic"}, {"model", model}, {"batch_size", 16},
                                               {"backend", "gloo"}, {"device", "cpu"}, {"max_steps", steps},
                                               {"extra_args", extra}}},
                       {"debug",
                        QJsonObject{{"node", "local"}, {"procs", procs}, {"max_steps", steps}, {"verbose", false}}}};
}

} // namespace

class tst_DiagnosticsE2E final : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    RunStore m_store{m_dir.filePath(QStringLiteral("store"))};
    QString m_hangRun;

    remote::EngineOptions options() const {
        remote::EngineOptions o;
        o.localTrainer = kTrainer;
        o.sshConfigPath = QStringLiteral("none");
        return o;
    }
    // The CLI's environment: this test's store.
    QProcessEnvironment cliEnvironment() const {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("RANKSCOPE_HOME"), m_dir.filePath(QStringLiteral("store")));
        return env;
    }
    // Starts `rankscope-cli run` on a debug job named `name`; false when the job file cannot be written.
    bool startCliRun(QProcess& cli, const QString& name, int steps, const QJsonArray& faults, int procs = 2) const {
        const QString jobPath = m_dir.filePath(name + QStringLiteral(".json"));
        QFile job(jobPath);
        if (!job.open(QIODevice::WriteOnly) ||
            job.write(QJsonDocument(debugJob(name, steps, faults, procs)).toJson()) < 0)
            return false;
        job.close();
        cli.setProcessEnvironment(cliEnvironment());
        cli.start(kCli, {QStringLiteral("run"), jobPath});
        return true;
    }
    // The line `rankscope-cli runs` lists the (only) run of job `name` on.
    QString cliRunsLine(const QString& name) const {
        QProcess cli;
        cli.setProcessEnvironment(cliEnvironment());
        cli.start(kCli, {QStringLiteral("runs")});
        cli.waitForFinished(60000);
        for (const QString& line : QString::fromUtf8(cli.readAllStandardOutput()).split(QLatin1Char('\n')))
            if (line.section(QLatin1Char(' '), 1, 1, QString::SectionSkipEmpty) == name)
                return line;
        return {};
    }
    // `rankscope-cli diagnose RUN`, then `more`: what it printed on both streams.
    QString cliDiagnose(const QString& run, const QStringList& more = {}) const {
        QProcess cli;
        cli.setProcessEnvironment(cliEnvironment());
        cli.start(kCli, QStringList{QStringLiteral("diagnose"), run} + more);
        cli.waitForFinished(60000);
        return QString::fromUtf8(cli.readAllStandardOutput() + cli.readAllStandardError());
    }

    // The rank grid as a front end builds it from what the engine signalled: the findings, events and exits.
    static RankStatusTracker gridOf(const QSignalSpy& diagnoses, const QSignalSpy& events, const QSignalSpy& exits) {
        RankStatusTracker grid;
        for (const auto& call : diagnoses)
            grid.applyDiagnoses(call.front().value<QVector<Diagnosis>>());
        for (const auto& call : events)
            grid.addEvents(call.front().value<QVector<TrainerEvent>>());
        for (const auto& call : exits)
            grid.rankExited(call.at(0).toInt(), call.at(2).toInt(), call.at(1).toString(), call.at(3).toBool());
        return grid;
    }

    // `rankscope-cli stop RUN` beside the `run` that follows it: the follower takes the ranks' ends for the stop,
    // not for a failure of the waiting rank; the grid keeps the hung rank hung and shows the other stopped; the
    // stopping front end takes no stacks of ranks it is ending, but says the hang it found on catching up (it
    // began before the stop), as its summary lists it.
    void stopFromAnotherFrontEnd(remote::RunEngine& follower, const QSignalSpy& diagnoses) {
        QSignalSpy exits(&follower, &remote::RunEngine::rankExited);
        QSignalSpy events(&follower, &remote::RunEngine::events);
        QSignalSpy finished(&follower, &remote::RunEngine::finished);
        const QStringList capturesBefore =
            QDir(m_store.runDir(m_hangRun)).entryList({QStringLiteral("stacks-*.json")}, QDir::Files);
        QTest::qWait(1000); // the user reads it, then stops the run from another terminal
        remote::RunEngine stopper(&m_store, options());
        QSignalSpy stopperCaptures(&stopper, &remote::RunEngine::stacksCaptured);
        QSignalSpy stopperFinished(&stopper, &remote::RunEngine::finished);
        QSignalSpy stopperDiagnoses(&stopper, &remote::RunEngine::diagnoses);
        QString error;
        QVERIFY2(stopper.attach(m_hangRun, &error), qPrintable(error));
        stopper.stop();
        QVERIFY(finished.wait(60000));
        QVERIFY(stopperFinished.size() == 1 || stopperFinished.wait(60000));

        const RunRecord record = follower.record();
        QCOMPARE(record.state, QStringLiteral("stopped"));
        QCOMPARE(record.firstFailedRank, -1);
        QVERIFY(collected(diagnoses, DiagnosisKind::RootCause).isEmpty());
        QCOMPARE(record.exits.size(), 2);
        for (const RankExit& exit : record.exits)
            QVERIFY2(exit.status != 0 && exit.stopped, qPrintable(describeExitStatus(exit.status)));
        QCOMPARE(exits.size(), 2);
        // The grid as a front end builds it: the findings, the ranks' last words ("terminated: SIGTERM …"), exits.
        for (const auto& call : exits)
            QVERIFY(call.at(3).toBool());
        const RankStatusTracker grid = gridOf(diagnoses, events, exits);
        QCOMPARE(grid.rank(1)->state, RankLiveState::Hung);
        QCOMPARE(grid.rank(0)->state, RankLiveState::Stopped);
        QVERIFY2(
            grid.rank(0)->reason.startsWith(QLatin1String("stopped by the teardown: terminated: SIGTERM received")),
            qPrintable(grid.rank(0)->reason));

        // The hung rank says where the stop found it with the step number the diagnosis gives (--hang-at-step 6).
        QFile eventsFile(m_store.streamPath(m_hangRun, 1, RankStream::Events));
        QVERIFY(eventsFile.open(QIODevice::ReadOnly));
        const QByteArray said = eventsFile.readAll();
        QVERIFY2(said.contains("SIGTERM received at step 6 in phase forward"), said.right(600).constData());

        QCOMPARE(stopperCaptures.size(), 0);
        const QVector<Diagnosis> stopperHangs = collected(stopperDiagnoses, DiagnosisKind::Hang);
        QVERIFY(!stopperHangs.isEmpty());
        QCOMPARE(stopperHangs.front().ranks.front(), 1);
        QCOMPARE(QDir(m_store.runDir(m_hangRun)).entryList({QStringLiteral("stacks-*.json")}, QDir::Files),
                 capturesBefore);
        const auto stored = m_store.load(m_hangRun, &error);
        QVERIFY2(stored, qPrintable(error));
        QCOMPARE(stored->state, QStringLiteral("stopped"));
        QCOMPARE(stored->firstFailedRank, -1);
    }

private slots:
    void initTestCase() {
        qRegisterMetaType<RunRecord>();
        QVERIFY(QFileInfo(kTrainer).isExecutable());
    }
    void cleanupTestCase() {
        stopRunsLeftIn(m_store, options());
        QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-f"), m_dir.path()});
    }

    void hungRankIsNamedWithinTwoHeartbeats() {
        remote::RunEngine engine(&m_store, options());
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QString error;
        QVERIFY2(engine.launch(jobFrom(debugJob("hang", 1000, {"--hang-at-step", "6", "--hang-rank", "1"})),
                               RunMode::Debug, &error),
                 qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(!collected(diagnoses, DiagnosisKind::Hang).isEmpty(), 90000);
        const Diagnosis hang = collected(diagnoses, DiagnosisKind::Hang).front();
        QCOMPARE(hang.ranks.front(), 1);
        QVERIFY2(hang.message.startsWith(QLatin1String("rank 1 on localhost stuck at step 6 in phase forward")),
                 qPrintable(hang.message));
        QVERIFY2(hang.message.contains(QLatin1String("; rank 0 waiting in collective")), qPrintable(hang.message));

        // From the first heartbeat showing rank 0 waiting for the collective rank 1 never joins.
        double waitingSince = 0.0;
        for (const auto& call : events)
            for (const TrainerEvent& e : call.front().value<QVector<TrainerEvent>>())
                if (waitingSince == 0.0 && e.rank == 0 && e.type == TrainerEventType::Heartbeat && e.integer("step") == 5 &&
                    e.integer("collective_started") > e.integer("collective_finished"))
                    waitingSince = e.time;
        QVERIFY(waitingSince > 0.0);
        const double delay = hang.time - waitingSince;
        qInfo("hang diagnosed %.2f s (%.1f heartbeat intervals) after rank 0 was seen waiting", delay,
              delay / kHeartbeatSeconds);
        QVERIFY2(delay <= 2 * kHeartbeatSeconds + 0.1, qPrintable(QString::number(delay)));

        m_hangRun = engine.record().id;
        // The hang's own capture, before the stop.
        QSignalSpy captures(&engine, &remote::RunEngine::stacksCaptured);
        QTRY_VERIFY_WITH_TIMEOUT(captures.size() >= 1, 60000);
        stopFromAnotherFrontEnd(engine, diagnoses);
    }

    // A run left to itself (detached: nothing copies its files into the store) whose rank 1 hangs and whose rank 0
    // fails of waiting for it (its collective times out), attached to afterwards. That front end reads the history
    // in one go and sees the ranks only as they end, so the hang is found in the history replayed in time order:
    // it is said, and the root cause and the record's verdict name the hung rank, as `diagnose` does. Before, they
    // said rank 0's timeout alone, and `diagnose` said more than the run's own record.
    void aDetachedRunsHangIsNamedWhenAttachedAfterItsFailure() {
        QString error;
        QString id;
        QString runDir;
        {
            remote::RunEngine launcher(&m_store, options());
            QVERIFY2(launcher.launch(jobFrom(debugJob("detached-hang", 1000,
                                                      {"--hang-at-step", "6", "--hang-rank", "1", "--timeout-s", "4"})),
                                     RunMode::Debug, &error),
                     qPrintable(error));
            QSignalSpy launched(&launcher, &remote::RunEngine::launched);
            QVERIFY(launched.wait(60000));
            id = launcher.record().id;
            runDir = launcher.record().nodes.front().runDir;
            launcher.detach();
        }
        QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(runDir + QStringLiteral("/rank0.exit")), 90000); // rank 0 timed out

        remote::RunEngine attacher(&m_store, options());
        QSignalSpy diagnoses(&attacher, &remote::RunEngine::diagnoses);
        QSignalSpy finished(&attacher, &remote::RunEngine::finished);
        QVERIFY2(attacher.attach(id, &error), qPrintable(error));
        QVERIFY(finished.wait(60000));
        const QVector<Diagnosis> hangs = collected(diagnoses, DiagnosisKind::Hang);
        QVERIFY(!hangs.isEmpty());
        QCOMPARE(hangs.back().ranks.front(), 1);
        const QVector<Diagnosis> causes = collected(diagnoses, DiagnosisKind::RootCause);
        QVERIFY(!causes.isEmpty());
        const QString waited = QStringLiteral("; it was waiting on a hung rank: rank 1 on localhost stuck at step 6");
        QVERIFY2(causes.back().message.startsWith(QLatin1String("rank 0 on localhost failed first")) &&
                     causes.back().message.contains(waited),
                 qPrintable(causes.back().message));
        const auto stored = m_store.load(id, &error);
        QVERIFY2(stored, qPrintable(error));
        QCOMPARE(stored->state, QStringLiteral("failed"));
        QVERIFY2(stored->verdict.contains(waited), qPrintable(stored->verdict));
        QVERIFY2(cliDiagnose(id).contains(causes.back().message), qPrintable(cliDiagnose(id)));
    }

    // Three ranks of a model with buffers (BatchNorm), which the trainer broadcasts from rank 0 in every forward:
    // while rank 1 sleeps, rank 2 has its data and goes on to the next collective, and rank 0 is left sending in
    // this one. Rank 1 alone is at fault; rank 0, the lowest of the ranks behind, waits.
    void hungRankAmongThreeIsTheOneInNoCollective() {
        remote::RunEngine engine(&m_store, options());
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QString error;
        QVERIFY2(engine.launch(jobFrom(debugJob("hang3", 1000, {"--hang-at-step", "6", "--hang-rank", "1"}, 3,
                                                QStringLiteral("cnn"))),
                               RunMode::Debug, &error),
                 qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(!collected(diagnoses, DiagnosisKind::Hang).isEmpty(), 90000);
        const Diagnosis hang = collected(diagnoses, DiagnosisKind::Hang).front();
        QVERIFY2(hang.message.startsWith(QLatin1String("rank 1 on localhost stuck at step 6 in phase forward")),
                 qPrintable(hang.message));
        QCOMPARE(hang.culprits, 1);
        QCOMPARE(hang.ranks.size(), 3);
        QVERIFY2(hang.message.contains(QLatin1String("rank 0 waiting in collective")), qPrintable(hang.message));
        qInfo("%s", qPrintable(hang.message));
        // The rank grid, as a front end builds it, shows rank 1 hung and the others not.
        RankStatusTracker grid;
        for (const auto& call : events)
            grid.addEvents(call.front().value<QVector<TrainerEvent>>());
        for (const auto& call : diagnoses)
            grid.applyDiagnoses(call.front().value<QVector<Diagnosis>>());
        QCOMPARE(grid.rank(1)->state, RankLiveState::Hung);
        QVERIFY(grid.rank(0)->state != RankLiveState::Hung);
        QVERIFY(grid.rank(2)->state != RankLiveState::Hung);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        engine.stop();
        QVERIFY(finished.wait(60000));
        QCOMPARE(engine.record().state, QStringLiteral("stopped"));
    }

    // Three real replicas, and rank 2 changes one of its parameter values after step 3: the replica check at step
    // 5 names rank 2 as the replica apart from ranks 0-1, and so do the checksums the ranks end with.
    void divergedReplicaIsNamed() {
        remote::RunEngine engine(&m_store, options());
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QSignalSpy exits(&engine, &remote::RunEngine::rankExited);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(debugJob(
                                   "diverge", 12,
                                   {"--replica-check-every", "5", "--diverge-at-step", "3", "--diverge-rank", "2"}, 3)),
                               RunMode::Debug, &error),
                 qPrintable(error));
        QVERIFY(finished.wait(120000));
        QCOMPARE(engine.record().state, QStringLiteral("finished")); // a divergence is reported, not fatal
        QVector<Diagnosis> all;
        for (const auto& call : diagnoses)
            foldFindings(all, call.front().value<QVector<Diagnosis>>());
        QStringList keys;
        for (const Diagnosis& d : std::as_const(all)) {
            if (d.kind != DiagnosisKind::Divergence)
                continue;
            keys << d.key;
            QCOMPARE(d.ranks, (QVector<int>{2, 0, 1}));
            QCOMPARE(d.culprits, 1);
            QCOMPARE(d.host, QStringLiteral("localhost"));
            QVERIFY2(d.message.contains(QLatin1String("rank 2 on localhost (checksum ")) &&
                         d.message.contains(QLatin1String(") differs from ranks 0-1 (checksum ")),
                     qPrintable(d.message));
        }
        keys.sort();
        QCOMPARE(keys, (QStringList{"divergence:check", "divergence:end"}));
        const auto check = std::find_if(all.cbegin(), all.cend(),
                                        [](const Diagnosis& d) { return d.key == QLatin1String("divergence:check"); });
        QVERIFY2(check->message.startsWith(QLatin1String("replicas diverged at step 5: rank 2 on localhost")),
                 qPrintable(check->message));
        // The grid: the replica apart reads diverged, with the check as its reason; the others finished.
        const RankStatusTracker grid = gridOf(diagnoses, events, exits);
        QCOMPARE(grid.rank(2)->state, RankLiveState::Diverged);
        QCOMPARE(grid.rank(2)->reason, check->message);
        QCOMPARE(grid.rank(0)->state, RankLiveState::Finished);
        QCOMPARE(grid.rank(1)->state, RankLiveState::Finished);
    }

    // A replica apart, then a rank that fails, from `rankscope-cli run`. Every rank's replica_divergence event
    // (one line per rank and check) is left to the divergence finding, said once; the failure's own error is
    // printed. The root cause is the failure: an error the rank carried on after (the replica check's, not fatal)
    // is not what it failed of, and ranks 0 and 1, whose replica checks read the same, did not fail alike. The
    // stored run, diagnosed offline, says the same.
    void cliRunLeavesTheDivergenceToItsFindingAndBlamesTheFailure() {
        QProcess cli;
        cli.setProcessChannelMode(QProcess::MergedChannels);
        QVERIFY(startCliRun(cli, QStringLiteral("diverge-fail"), 12,
                            {"--replica-check-every", "5", "--diverge-at-step", "3", "--diverge-rank", "2",
                             "--fail-at-step", "8", "--fail-rank", "0"},
                            3));
        QVERIFY(cli.waitForFinished(120000));
        const QString out = QString::fromUtf8(cli.readAll());
        QCOMPARE(cli.exitCode(), 1);
        QVERIFY2(!out.contains(QLatin1String("error (replica_divergence)")), qPrintable(out));
        QCOMPARE(out.count(QLatin1String("diagnosis: divergence: replicas diverged at step 5: rank 2 on localhost")),
                 1);
        QVERIFY2(out.contains(QLatin1String("rank 0 error (injected): injected failure at step 8")), qPrintable(out));
        const QString rootCause = QStringLiteral("diagnosis: root-cause: rank 0 on localhost failed first: exit "
                                                 "status 1 (injected: injected failure at step 8");
        QVERIFY2(out.contains(rootCause), qPrintable(out));
        const QRegularExpression id(QStringLiteral("run (\\S+): failed\n"));
        const QString run = id.match(out).captured(1);
        QVERIFY2(!run.isEmpty(), qPrintable(out));
        const QString diagnosed = cliDiagnose(run);
        QVERIFY2(diagnosed.contains(QLatin1String("root-cause: rank 0 on localhost failed first: exit status 1 "
                                                  "(injected: injected failure at step 8")),
                 qPrintable(diagnosed));
    }

    // NCCL's watchdog, which cannot run here, as the engine sees a rank of it: a stand-in for the trainer (the local
    // node runs this machine's program) writes a real log's timeout line and desync report on stderr and dies by
    // SIGABRT, as PyTorch's watchdog ends the process, while its peer sleeps in its own code. Rank 0 failed of
    // waiting, a consequence: the root cause says what its watchdog said, where it said only "killed by SIGABRT",
    // and that it waited on rank 1, which the desync report blames and the hang finding holds at fault.
    void aRankTheWatchdogAbortedFailedOfWaiting() {
        const QString standIn = m_dir.filePath(QStringLiteral("nccl-watchdog-stand-in.sh"));
        QVERIFY(writeExecutable(
            standIn,
            "#!/bin/sh\n"
            "ulimit -c 0\n"
            "rank=0\n"
            "while [ $# -gt 0 ]; do [ \"$1\" = --rank ] && rank=$2; shift; done\n"
            "[ \"$rank\" = 0 ] || exec sleep 600\n"
            "sleep 1\n"
            "echo '[rank0]:[E318 07:39:53.792630246 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=610, OpType=ALLREDUCE, NumelIn=56320, "
            "NumelOut=56320, Timeout(ms)=600000) ran for 600086 milliseconds before timing out.' >&2\n"
            "printf '%s\\n' '[rank0]:[E318 07:39:53.793377708 ProcessGroupNCCL.cpp:1937] Rank 0' "
            "'         - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:' "
            "'             [1] finished collective #609, but didn'\\''t join collective #610 (count from 1)' "
            "'         - Snapshot of ranks'\\'' latest states:' >&2\n"
            "sleep 0.5\n"
            "kill -ABRT $$\n"));
        remote::EngineOptions o = options();
        o.localTrainer = standIn;
        remote::RunEngine engine(&m_store, o);
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(debugJob("watchdog", 100, {})), RunMode::Debug, &error), qPrintable(error));
        QVERIFY(finished.wait(60000));
        QCOMPARE(engine.record().state, QStringLiteral("failed"));
        QCOMPARE(
            engine.record().summary,
            QStringLiteral("rank 0 on localhost failed first: killed by SIGABRT (collective: NCCL's watchdog timed "
                           "out in ALLREDUCE (SeqNum 610) after 600086 ms (timeout 600000 ms))"));
        const QVector<Diagnosis> hangs = collected(diagnoses, DiagnosisKind::Hang);
        QVERIFY(!hangs.isEmpty());
        QCOMPARE(hangs.front().key, QStringLiteral("hang:watchdog"));
        QCOMPARE(hangs.front().ranks, (QVector<int>{1, 0}));
        QCOMPARE(hangs.front().culprits, 1);
        QVERIFY2(hangs.front().message.startsWith(QLatin1String(
                     "rank 1 on localhost is behind, as PyTorch's desync report says: \"[1] finished "
                     "collective #609, but didn't join collective #610 (count from 1)\"; NCCL's watchdog")),
                 qPrintable(hangs.front().message));
        const QVector<Diagnosis> causes = collected(diagnoses, DiagnosisKind::RootCause);
        QVERIFY(!causes.isEmpty());
        QVERIFY2(causes.back().message.contains(QLatin1String("; it was waiting on a hung rank: rank 1 on localhost is "
                                                              "behind")),
                 qPrintable(causes.back().message));
    }

    // The stored run, offline: the same hang, from the CLI.
    void storedHangIsDiagnosedByTheCli() {
        QVERIFY(!m_hangRun.isEmpty());
        const QString out = cliDiagnose(m_hangRun);
        QVERIFY2(out.contains(QLatin1String("hang: rank 1 on localhost stuck at step 6")), qPrintable(out));
    }

    // The same stored run as it would read on NCCL, which cannot run here: PyTorch's watchdog timeout (a real log's
    // line) in rank 0's stderr, arrived as the run ended. The engine reads each rank's stderr for it, at the time
    // its bytes arrived, and the hang that the heartbeats found names it. Last of the tests of this run: it changes
    // the stored stream.
    void watchdogTimeoutInARanksLogJoinsTheHang() {
        QVERIFY(!m_hangRun.isEmpty());
        QString error;
        const auto record = m_store.load(m_hangRun, &error);
        QVERIFY2(record && record->ended.isValid(), qPrintable(error));
        const QByteArray line =
            "\n[rank0]:[E318 07:39:53.792630246 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=610, OpType=ALLREDUCE, NumelIn=56320, NumelOut=56320, "
            "Timeout(ms)=600000) ran for 600086 milliseconds before timing out.\n";
        const double arrived = static_cast<double>(record->ended.toMSecsSinceEpoch()) / 1000.0 - 0.05;
        QVERIFY2(m_store.appendStream(m_hangRun, 0, RankStream::Err, m_store.streamSize(m_hangRun, 0, RankStream::Err),
                                      line, &error, nullptr, arrived),
                 qPrintable(error));
        const QString out = cliDiagnose(m_hangRun);
        const QRegularExpression joined(QStringLiteral(
            "hang: rank 1 on localhost stuck at step 6 [^\n]*; rank 0 waiting in collective #\\d+; NCCL's watchdog "
            "timed out on rank 0 on localhost in ALLREDUCE \\(SeqNum 610\\) after 600086 ms \\(timeout 600000 "
            "ms\\)\n"));
        QVERIFY2(joined.match(out).hasMatch(), qPrintable(out));
        QVERIFY2(!out.contains(QLatin1String("hang:watchdog")), qPrintable(out));
    }

    void slowRankIsTheOnlyStraggler() {
        remote::RunEngine engine(&m_store, options());
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(debugJob("slow", 200, {"--slow-rank", "1", "--slow-ms", "40"})), RunMode::Debug,
                               &error),
                 qPrintable(error));
        QVERIFY(finished.wait(120000));
        const QVector<Diagnosis> stragglers = collected(diagnoses, DiagnosisKind::Straggler);
        QVERIFY(!stragglers.isEmpty());
        for (const Diagnosis& d : stragglers)
            QCOMPARE(d.ranks, QVector<int>{1});
        QVERIFY2(stragglers.front().message.startsWith(QLatin1String("rank 1 on localhost is a straggler")),
                 qPrintable(stragglers.front().message));
        QVERIFY(collected(diagnoses, DiagnosisKind::Hang).isEmpty()); // a slow rank is not a hung one
    }

    // `rankscope-cli run` into a file (no terminal) reports progress every 10 s, and only what moved: once a rank
    // hangs, the ranks' lines stop changing and are not printed again (before, every 10 s for as long as the hang
    // lasted). What it says about the hang arrives while the run hangs, the merged stacks of the main threads to
    // their last line (their tail waited in stdout's buffer until the run ended). Ctrl-C then stops the run.
    void cliInAFileReportsAStuckRunOnce() {
        QProcess cli;
        cli.setProcessChannelMode(QProcess::MergedChannels);
        QVERIFY(startCliRun(cli, QStringLiteral("stuck-cli"), 1000, {"--hang-at-step", "3", "--hang-rank", "1"}));
        QByteArray out;
        QTRY_VERIFY2_WITH_TIMEOUT((out += cli.readAll()).contains("diagnosis: hang: rank 1 on localhost"),
                                  out.constData(), 60000);
        const QRegularExpression savedTo(
            QStringLiteral("stacks of every rank's main thread, merged \\(saved to (\\S+)\\):\n"));
        QTRY_VERIFY2_WITH_TIMEOUT(savedTo.match(QString::fromUtf8(out += cli.readAll())).hasMatch(), out.constData(),
                                  30000);
        QFile saved(savedTo.match(QString::fromUtf8(out)).captured(1));
        QVERIFY2(saved.open(QIODevice::ReadOnly), qPrintable(saved.fileName()));
        const std::optional<StackTree> tree = StackTree::fromJson(QJsonDocument::fromJson(saved.readAll()).object());
        QVERIFY(tree && !tree->isEmpty());
        // The main threads, where each rank is; the helper threads are saved, and named by how many.
        const QByteArray rendered = tree->render(true).toUtf8();
        QTRY_VERIFY2_WITH_TIMEOUT((out += cli.readAll()).contains(rendered), (out + "\n---\n" + rendered).constData(),
                                  5000);
        QVERIFY2(!out.contains("runLoop"), out.constData());
        QVERIFY2(out.contains(QStringLiteral("the ranks' %1 other threads as well: rankscope-cli stacks ")
                                  .arg(tree->helperThreads())
                                  .toUtf8()),
                 out.constData());
        QVERIFY(tree->helperThreads() > 0);
        QVERIFY(!tree->find(QStringLiteral("ProcessGroupGloo::runLoop")).isEmpty());
        QCOMPARE(cli.state(), QProcess::Running);
        QTest::qWait(25000); // two report periods and more with nothing moving
        ::kill(static_cast<pid_t>(cli.processId()), SIGINT);
        QVERIFY(cli.waitForFinished(60000));
        out += cli.readAll();
        QStringList rank0;
        QStringList rank1;
        for (const QByteArray& line : out.split('\n')) {
            if (line.startsWith("rank   0 "))
                rank0.append(QString::fromUtf8(line));
            if (line.startsWith("rank   1 "))
                rank1.append(QString::fromUtf8(line));
        }
        QVERIFY2(!rank0.isEmpty(), out.constData());
        QVERIFY2(rank0.last().contains(QLatin1String("step 2/")), out.constData()); // rank 0 waits in step 3
        QVERIFY2(rank0.count(rank0.last()) == 1, out.constData());
        // The hung rank's line says so, as its tile in the app does; the rank waiting for it does not.
        QVERIFY2(!rank1.isEmpty() && rank1.last().endsWith(QLatin1String(" img/s  HUNG")), out.constData());
        QVERIFY2(!rank0.last().contains(QLatin1String("HUNG")), out.constData());
        QVERIFY2(out.contains("stopped by the user"), out.constData());
        // The run was stopped while rank 1 hung: its listing says so after the stop, as the CLI's last line did.
        const QByteArray hang = "hang: rank 1 on localhost stuck at step 3";
        const QByteArray last = out.trimmed().split('\n').constLast();
        QVERIFY2(last.startsWith("rankscope-cli run: stopped by the user; " + hang), out.constData());
        const QString listed = cliRunsLine(QStringLiteral("stuck-cli"));
        QVERIFY2(listed.contains(QLatin1String(" stopped ")) &&
                     listed.contains(QLatin1String("stopped by the user; ") + QLatin1String(hang)),
                 qPrintable(listed));
    }

    // `rankscope-cli run` says a finding as it happens, and again under the summary at the end, as it last stood:
    // the live line may be screens away by then (a stack tree prints dozens of lines).
    void cliSummaryRepeatsTheStandingFindings() {
        QProcess cli;
        QVERIFY(startCliRun(cli, QStringLiteral("slow-cli"), 200, {"--slow-rank", "1", "--slow-ms", "40"}));
        QVERIFY(cli.waitForFinished(120000));
        const QString out = QString::fromUtf8(cli.readAllStandardOutput() + cli.readAllStandardError());
        QVERIFY2(cli.exitCode() == 0, qPrintable(out));
        QVERIFY2(out.contains(QLatin1String("diagnosis: straggler: rank 1 on localhost")), qPrintable(out));
        const qsizetype table = out.indexOf(QLatin1String("final loss"));
        const qsizetype findings =
            out.indexOf(QLatin1String("\nfindings:\n  straggler: rank 1 on localhost is a straggler"));
        QVERIFY2(table > 0 && findings > table, qPrintable(out));
        QVERIFY2(!out.mid(findings).contains(QLatin1String("rank 0 on localhost is a straggler")), qPrintable(out));
    }

    // `rankscope-cli run`'s last line, the one a user reads first, gives the whole verdict: rank 0 failed first,
    // of waiting on the hung rank 1. It used to stop at rank 0's timeout, the hang only in the findings above it.
    void cliLastLineNamesTheHungRankAFailureWaitedOn() {
        QProcess cli;
        QVERIFY(startCliRun(cli, QStringLiteral("hang-fail-cli"), 1000,
                            {"--hang-at-step", "4", "--hang-rank", "1", "--timeout-s", "4"}));
        QVERIFY(cli.waitForFinished(120000));
        const QByteArray err = cli.readAllStandardError();
        const QString out = QString::fromUtf8(cli.readAllStandardOutput() + err);
        QVERIFY2(cli.exitCode() != 0, qPrintable(out));
        const QString last = QString::fromUtf8(err.trimmed()).split(QLatin1Char('\n')).constLast();
        QVERIFY2(last.startsWith(QLatin1String("rankscope-cli run: rank 0 on localhost failed first")),
                 qPrintable(out));
        QVERIFY2(last.contains(QLatin1String("it was waiting on a hung rank: rank 1 on localhost stuck at step 4")),
                 qPrintable(out));
        // `runs` lists the run by the same verdict, not by rank 0's timeout alone, and the record keeps it.
        const QString listed = cliRunsLine(QStringLiteral("hang-fail-cli"));
        QVERIFY2(listed.endsWith(last.section(QLatin1String("rankscope-cli run: "), 1)),
                 qPrintable(listed + "\n" + last));
        const QString run = listed.section(QLatin1Char(' '), 0, 0);
        const std::optional<RunRecord> record = m_store.load(run);
        QVERIFY(record);
        QVERIFY2(record->verdict.startsWith(record->summary + QLatin1String("; it was waiting on a hung rank: ")),
                 qPrintable(record->verdict));
    }

    // A debug run whose rank 1 hangs: rank 0's collective times out (4 s) and it fails. The hung rank is ended
    // then, as in a submitted run, instead of holding the run open until its own timeout or a Ctrl-C; the root
    // cause names rank 0, which failed first, and the hang it was waiting on.
    void hungPeerOfAFailedRankIsEndedAndNamed() {
        remote::RunEngine engine(&m_store, options());
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(debugJob("hang-fail", 1000,
                                                {"--hang-at-step", "4", "--hang-rank", "1", "--timeout-s", "4"})),
                               RunMode::Debug, &error),
                 qPrintable(error));
        QVERIFY(finished.wait(60000));
        const RunRecord record = engine.record();
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.firstFailedRank, 0);
        QVERIFY(record.exits.value(1).stopped);
        const QVector<Diagnosis> causes = collected(diagnoses, DiagnosisKind::RootCause);
        QCOMPARE(causes.size(), 1);
        QCOMPARE(causes.front().ranks, QVector<int>{0});
        QVERIFY2(causes.front().message.contains(
                     QLatin1String("; it was waiting on a hung rank: rank 1 on localhost stuck at step 4")),
                 qPrintable(causes.front().message));
    }

    // A failing rank's error (its event and its stderr line) reaches the front ends before its exit, as it happened:
    // `run` printed "rank 0 on localhost ended: exit 1" and then the error it ended of, which the node's worker read
    // in the same pass, after the exit. Ranks 0 and 2 time out waiting on the hung rank 1 at once and exit at once;
    // the teardown then ends rank 1, whose end comes before the teardown's report (it came after).
    void aRanksErrorComesBeforeItsExit() {
        remote::RunEngine engine(&m_store, options());
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QHash<int, QStringList> seen; // per rank
        connect(&engine, &remote::RunEngine::events, this, [&seen](const QVector<TrainerEvent>& events) {
            for (const TrainerEvent& event : events)
                if (event.type == TrainerEventType::Error)
                    seen[event.rank].append(QStringLiteral("error event"));
        });
        connect(&engine, &remote::RunEngine::logLines, this, [&seen](const QVector<RankLogLine>& lines) {
            for (const RankLogLine& line : lines)
                if (line.text.startsWith(QStringLiteral("[rank %1] error: ").arg(line.rank)))
                    seen[line.rank].append(QStringLiteral("error line"));
        });
        connect(&engine, &remote::RunEngine::rankExited, this,
                [&seen](int rank) { seen[rank].append(QStringLiteral("exit")); });
        QStringList order; // exits and the teardown's report
        connect(&engine, &remote::RunEngine::rankExited, this,
                [&order](int rank) { order.append(QStringLiteral("exit %1").arg(rank)); });
        connect(&engine, &remote::RunEngine::stopped, this, [&order] { order.append(QStringLiteral("stopped")); });
        QString error;
        QVERIFY2(engine.launch(jobFrom(debugJob("error-then-exit", 1000,
                                                {"--hang-at-step", "4", "--hang-rank", "1", "--timeout-s", "4"}, 3)),
                               RunMode::Debug, &error),
                 qPrintable(error));
        QVERIFY(finished.wait(120000));
        QCOMPARE(engine.record().state, QStringLiteral("failed"));
        for (const int rank : {0, 2}) {
            const QStringList& said = seen[rank];
            QVERIFY2(said.count(QStringLiteral("error event")) == 1 && said.count(QStringLiteral("error line")) == 1 &&
                         said.count(QStringLiteral("exit")) == 1 && said.constLast() == QLatin1String("exit"),
                     qPrintable(QStringLiteral("rank %1: ").arg(rank) + said.join(QLatin1String(", "))));
        }
        QVERIFY2(order.size() == 4 && order.constLast() == QLatin1String("stopped"),
                 qPrintable(order.join(QLatin1String(", "))));
    }

    // A rank that leaves the training loop early (--leave-at-step: as one whose inputs ran out first) ends well; its
    // peer, left in the collective it never enters, fails of it (Gloo closes the connection when the rank's process
    // is gone). The root cause is the peer's failure, and it names the rank that had left and where.
    void aRankThatLeftTheLoopEarlyIsNamedInTheRootCause() {
        remote::RunEngine engine(&m_store, options());
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        // --linger-s holds rank 1 after its good end, as a rank slow to free what it held is, until rank 0's
        // failure brings the teardown: which must not make its end a stop.
        QVERIFY2(engine.launch(jobFrom(debugJob("leave", 200,
                                                {"--leave-at-step", "6", "--leave-rank", "1", "--timeout-s", "10",
                                                 "--linger-s", "60"})),
                               RunMode::Debug, &error),
                 qPrintable(error));
        QVERIFY(finished.wait(120000));
        QCOMPARE(engine.record().exits.value(1).status, 0);
        QVERIFY(!engine.record().exits.value(1).stopped);
        QCOMPARE(engine.record().exits.value(0).status, 1);
        const QVector<Diagnosis> causes = collected(diagnoses, DiagnosisKind::RootCause);
        QCOMPARE(causes.size(), 1);
        QCOMPARE(causes.front().ranks, QVector<int>{0});
        // Of the steps the job gives rank 0 (its epochs of synthetic data, under max_steps).
        const QRegularExpression left(
            QStringLiteral("; rank 1 had ended well before it \\(after 5 steps, of the \\d+ "
                           "rank 0 was to take\\): a rank that leaves the training loop early"));
        QVERIFY2(causes.front().message.contains(left), qPrintable(causes.front().message));
        QVERIFY2(engine.record().headline().contains(left), qPrintable(engine.record().headline()));
        const QString out = cliDiagnose(engine.record().id);
        QVERIFY2(out.contains(left), qPrintable(out));
    }

    void failingRankIsTheRootCause() {
        remote::RunEngine engine(&m_store, options());
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(debugJob("fail", 200, {"--fail-at-step", "4", "--fail-rank", "1", "--timeout-s", "5"})),
                               RunMode::Debug, &error),
                 qPrintable(error));
        QVERIFY(finished.wait(120000));
        const QVector<Diagnosis> causes = collected(diagnoses, DiagnosisKind::RootCause);
        QCOMPARE(causes.size(), 1);
        QCOMPARE(causes.front().ranks, QVector<int>{1});
        QVERIFY2(causes.front().message.contains(QLatin1String("rank 1")), qPrintable(causes.front().message));
        // The ranks ended in error, without checksums: the failure is no divergence of replicas.
        QVERIFY(collected(diagnoses, DiagnosisKind::Divergence).isEmpty());
        // What rank 1 said last, from its stored streams: its error last.
        const QString said = QStringLiteral("[rank 1] error: injected failure at step 4 (--fail-at-step)");
        QVERIFY(!causes.front().lastLines.isEmpty());
        QCOMPARE(causes.front().lastLines.back().text, said);
        QCOMPARE(causes.front().lastLines.back().stream, RankStream::Err);
        const QString out = cliDiagnose(engine.record().id);
        QVERIFY2(out.contains(QLatin1String("root-cause: rank 1")), qPrintable(out));
        QVERIFY2(
            out.contains(
                QStringLiteral("\n  rank 1 said last (rankscope-cli logs %1 --rank 1):\n").arg(engine.record().id)) &&
                out.contains(QStringLiteral("\n    [err] ") + said + QLatin1Char('\n')),
            qPrintable(out));
        // The same finding in JSON, with the lines it quotes; a run seen to end is known to its end (no known_until).
        const QString json = cliDiagnose(engine.record().id, {QStringLiteral("--json")});
        const QJsonObject object = QJsonDocument::fromJson(json.toUtf8()).object();
        QCOMPARE(object.value(QStringLiteral("run")).toString(), engine.record().id);
        QVERIFY2(!object.contains(QStringLiteral("known_until")), qPrintable(json));
        QJsonObject cause;
        for (const QJsonValue& found : object.value(QStringLiteral("diagnoses")).toArray())
            if (found.toObject().value(QStringLiteral("kind")).toString() == QLatin1String("root-cause"))
                cause = found.toObject();
        QCOMPARE(cause.value(QStringLiteral("ranks")).toArray(), QJsonArray{1});
        QCOMPARE(cause.value(QStringLiteral("last_lines")).toArray().last().toObject().value(QStringLiteral("text")),
                 QJsonValue(said));
    }
};

QTEST_GUILESS_MAIN(tst_DiagnosticsE2E)
#include "tst_diagnostics_e2e.moc"
