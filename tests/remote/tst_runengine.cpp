// SPDX-License-Identifier: MIT
// The run engine on this machine: the local transport, and SSH to a private sshd on loopback. Real trainer
// runs (Gloo on CPU), a real supervisor, real files.
#include "enginetestutil.h"
#include "fixtures/sshdfixture.h"

#include "core/rankstatus.h"

#include <QProcess>
#include <QScopeGuard>
#include <QTemporaryDir>

#include <rankscope/event_schema.h>

#include <algorithm>
#include <cmath>
#include <csignal>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <tuple>

using namespace rankscope;
using namespace rankscope::test;

namespace {

const QString kTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");

QJsonObject trainerJson(int maxSteps, const QJsonArray& extra = {}, int epochs = 1) {
    return QJsonObject{{"dataset", "synthetic"}, {"model", "mlp"},    {"epochs", epochs}, {"max_steps", maxSteps},
                       {"batch_size", 16},       {"backend", "gloo"}, {"device", "cpu"},  {"extra_args", extra}};
}

} // namespace

class tst_RunEngine final : public QObject {
    Q_OBJECT

private:
    QJsonObject loopbackNode(const QString& name) const {
        return m_sshd.nodeJson(name, m_dir.filePath(QStringLiteral("work dir 'of' $node")), 2);
    }
    remote::EngineOptions engineOptions(const QString& knownHosts = {}) const {
        remote::EngineOptions options;
        options.knownHostsPath = knownHosts.isEmpty() ? m_sshd.knownHostsPath() : knownHosts;
        options.sshConfigPath = QStringLiteral("none");
        options.localTrainer = kTrainer;
        return options;
    }
    // A node whose supervisor's pulse stops is lost after 3 s, not 15: for the tests that kill one.
    remote::EngineOptions quickToLoseNodes() const {
        remote::EngineOptions options = engineOptions();
        options.worker.lostAfterMs = 3000;
        return options;
    }
    static RunRecord waitForEnd(remote::RunEngine& engine, int timeoutMs) {
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        if (finished.isEmpty())
            finished.wait(timeoutMs);
        return finished.isEmpty() ? RunRecord() : finished.front().front().value<RunRecord>();
    }

    // Submits `job` and waits for its end: a launch that fails ends within a minute.
    static RunRecord launchThatFails(remote::RunEngine& engine, const QJsonObject& job) {
        QString error;
        if (!engine.launch(jobFrom(job), RunMode::Submit, &error))
            qWarning("%s", qPrintable(error));
        return waitForEnd(engine, 60000);
    }

    // A two-rank run saved in `store` as running, with no events yet: its id, or empty when it cannot be saved.
    static QString newStoredRun(RunStore& store, const QString& name) {
        RunRecord record;
        record.id = store.newRunId();
        record.name = name;
        record.mode = QStringLiteral("debug");
        record.state = QStringLiteral("running");
        record.created = QDateTime::currentDateTimeUtc();
        record.worldSize = 2;
        record.nodes = {{QStringLiteral("local"), QStringLiteral("localhost"), true, QStringLiteral("/r"), {0, 1}}};
        return store.save(record) ? record.id : QString();
    }
    // A stored run opened offline: how many hangs its replayed diagnosis reports. `knownUntil`: where the replay
    // stopped (RunEngine::openedKnownUntil).
    int hangsWhenOpened(RunStore& store, const QString& id, double* knownUntil = nullptr) const {
        remote::RunEngine engine(&store, engineOptions());
        int found = 0;
        connect(&engine, &remote::RunEngine::diagnoses, [&found](const QVector<Diagnosis>& changed) {
            found += int(std::count_if(changed.begin(), changed.end(),
                                       [](const Diagnosis& d) { return d.kind == DiagnosisKind::Hang; }));
        });
        QString error;
        if (!engine.open(id, &error))
            qWarning("%s", qPrintable(error));
        if (knownUntil)
            *knownUntil = engine.openedKnownUntil();
        return found;
    }

    SshdFixture m_sshd;
    QTemporaryDir m_dir;

private slots:
    // A failed check must not leave its run behind: end every process started from this test's directory.
    void cleanupTestCase() { QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-f"), m_dir.path()}); }

    void initTestCase() {
        qRegisterMetaType<RunRecord>();
        QString error;
        QVERIFY2(m_sshd.start(&error), qPrintable(error));
        QVERIFY(QFileInfo(kTrainer).isExecutable());
    }

    void localDebugRunIsStoredByteForByte() {
        RunStore store(m_dir.filePath(QStringLiteral("store-local")));
        remote::RunEngine engine(&store, engineOptions());
        QJsonObject job{{"version", 1},
                        {"name", "local"},
                        {"mode", "debug"},
                        {"master_port", freePort()},
                        // A line a step, a step every 50 ms or more: both ranks speak throughout the run.
                        {"trainer", trainerJson(12, {"--log-every", "1", "--slow-ms", "50", "--slow-rank", "1"})},
                        {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"max_steps", 12}}}};
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Debug, &error), qPrintable(error));
        const RunRecord record = waitForEnd(engine, 120000);
        QCOMPARE(record.state, QStringLiteral("finished"));
        QCOMPARE(record.exits.size(), 2);
        QVERIFY(record.nodes.front().local);
        QString mismatch;
        QVERIFY2(storeMatchesNodes(store, record, &mismatch), qPrintable(mismatch));
        for (int rank = 0; rank < 2; ++rank) {
            int steps = 0;
            QVERIFY(stepsAreContiguous(readAll(store.streamPath(record.id, rank, RankStream::Events)), &steps));
            QCOMPARE(steps, 12);
        }
        QCOMPARE(store.list().front().id, record.id);
        QCOMPARE(store.list().front().state, QStringLiteral("finished"));

        // Opened from the store, the ranks' lines come as they arrived, each with its time: not rank 0's whole log
        // before rank 1's.
        remote::RunEngine reader(&store, engineOptions());
        QVector<RankLogLine> lines;
        connect(&reader, &remote::RunEngine::logLines, [&lines](const QVector<RankLogLine>& some) { lines += some; });
        QVERIFY2(reader.open(record.id, &error), qPrintable(error));
        QVERIFY2(lines.size() >= 24, qPrintable(QString::number(lines.size())));
        qint64 firstOf1 = -1;
        qint64 lastOf0 = -1;
        for (qsizetype i = 0; i < lines.size(); ++i) {
            QVERIFY2(lines[i].receivedAt > 0.0, qPrintable(lines[i].text));
            if (i > 0)
                QVERIFY2(lines[i].receivedAt >= lines[i - 1].receivedAt, qPrintable(lines[i].text));
            if (lines[i].rank == 1 && firstOf1 < 0)
                firstOf1 = i;
            if (lines[i].rank == 0)
                lastOf0 = i;
        }
        QVERIFY2(firstOf1 >= 0 && firstOf1 < lastOf0, qPrintable(QStringLiteral("%1 %2").arg(firstOf1).arg(lastOf0)));
    }

    // A rank stopped by a signal (SIGSTOP; Ctrl-Z in its terminal sends SIGTSTP) when the run is stopped is
    // continued after the teardown's SIGTERM, as a shell's kill does for a stopped job: it ends by that SIGTERM,
    // saying so, not by the SIGKILL at the end of the grace period.
    void aRankStoppedByASignalEndsByTheStopsSigterm() {
        RunStore store(m_dir.filePath(QStringLiteral("store-sigstop")));
        remote::EngineOptions options = engineOptions();
        options.captureStacksOnHang = false;
        options.stopGraceSeconds = 20;
        remote::RunEngine engine(&store, options);
        QSignalSpy events(&engine, &remote::RunEngine::events);
        const QJsonObject job{{"version", 1},
                              {"name", "sigstop"},
                              {"mode", "debug"},
                              {"master_port", freePort()},
                              {"trainer", trainerJson(0, {}, 1000)},
                              {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"max_steps", 0}}}};
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Debug, &error), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(steppedTo(events, 1, 5), 60000);
        const QByteArray pid = readAll(engine.record().nodes.value(0).runDir + QStringLiteral("/rank1.pid")).trimmed();
        QVERIFY(pid.toInt() > 0);
        QCOMPARE(::kill(pid.toInt(), SIGSTOP), 0);
        QTest::qWait(500);
        engine.stop();
        const RunRecord record = waitForEnd(engine, 60000);
        QCOMPARE(record.state, QStringLiteral("stopped"));
        QCOMPARE(describeExitStatus(record.exits.value(1).status), describeExitStatus(128 + SIGTERM));
        QVERIFY(record.exits.value(1).stopped);
        QVERIFY2(readAll(store.streamPath(record.id, 1, RankStream::Events)).contains("\"kind\":\"terminated\""),
                 "rank 1 did not say it was told to stop");
    }

    // Every rank of the real trainer fails at start-up the same way (its data is missing): the run's verdict names
    // them all as failing alike, not whichever rank's error came first by milliseconds, and so does the
    // diagnosis replayed from the store.
    void ranksThatCannotReadTheirDataFailAlike() {
        RunStore store(m_dir.filePath(QStringLiteral("store-alike")));
        QJsonObject trainer = trainerJson(5);
        trainer.insert("dataset", "fashion-mnist");
        trainer.insert("data_dir", m_dir.filePath(QStringLiteral("no such data")));
        const QJsonObject job{{"version", 1},       {"name", "no-data"},
                              {"mode", "debug"},    {"master_port", freePort()},
                              {"trainer", trainer}, {"debug", QJsonObject{{"node", "local"}, {"procs", 3}}}};
        QString id;
        {
            remote::RunEngine engine(&store, engineOptions());
            QString error;
            QVERIFY2(engine.launch(jobFrom(job), RunMode::Debug, &error), qPrintable(error));
            const RunRecord record = waitForEnd(engine, 120000);
            id = record.id;
            QCOMPARE(record.state, QStringLiteral("failed"));
            QVERIFY(record.firstFailedRank >= 0);
            QVector<int> ranks = QVector<int>{record.firstFailedRank} + record.failedAlike;
            std::sort(ranks.begin(), ranks.end());
            QCOMPARE(ranks, (QVector<int>{0, 1, 2}));
            QVERIFY2(
                record.summary.startsWith(
                    QStringLiteral("every rank (0-2) failed alike, first rank %1 on ").arg(record.firstFailedRank)),
                qPrintable(record.summary));
            QVERIFY2(record.summary.contains(QLatin1String("(data: ")), qPrintable(record.summary));
        }
        remote::RunEngine reader(&store, engineOptions());
        QVector<Diagnosis> found;
        connect(&reader, &remote::RunEngine::diagnoses,
                [&found](const QVector<Diagnosis>& changed) { found += changed; });
        QString error;
        QVERIFY2(reader.open(id, &error), qPrintable(error));
        const auto cause = std::find_if(found.cbegin(), found.cend(),
                                        [](const Diagnosis& d) { return d.kind == DiagnosisKind::RootCause; });
        QVERIFY(cause != found.cend());
        QCOMPARE(cause->culprits, 3);
        QCOMPARE(cause->ranks.size(), 3);
    }

    // A run attached to again after a while detached: this machine's copy of each rank stops where it was last
    // followed, and its stillness since then is no hang. (It was reported at once, and the stack capture it set off
    // stopped the healthy ranks in gdb.)
    void attachedRunIsNoHangBeforeItIsCaughtUp() {
        RunStore store(m_dir.filePath(QStringLiteral("store-reattach")));
        // Over SSH: the copy stays stale while the session is set up, several of the diagnosis' ticks.
        const QJsonObject job{{"version", 1},
                              {"name", "reattach"},
                              {"mode", "submit"},
                              {"deploy", "binary"},
                              {"master_port", freePort()},
                              {"nodes", QJsonArray{loopbackNode("loop")}},
                              {"trainer", trainerJson(60, {"--slow-rank", "0", "--slow-ms", "150"})}};
        QString id;
        {
            remote::RunEngine engine(&store, engineOptions());
            QSignalSpy events(&engine, &remote::RunEngine::events);
            QString error;
            QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
            QTRY_VERIFY_WITH_TIMEOUT(steppedTo(events, 0, 15), 60000); // with heartbeats (one a second)
            id = engine.record().id;
            engine.detach();
        }
        QTest::qWait(2000); // the ranks go on; heartbeat intervals pass unseen
        remote::RunEngine engine(&store, engineOptions());
        QVector<Diagnosis> found;
        connect(&engine, &remote::RunEngine::diagnoses,
                [&found](const QVector<Diagnosis>& changed) { found += changed; });
        // The node answers slowly (its sshd stopped for 3 s): the copy stays stale for many diagnosis ticks.
        const qint64 sshd = m_sshd.processId();
        QVERIFY(sshd > 1);
        QCOMPARE(::kill(static_cast<pid_t>(sshd), SIGSTOP), 0);
        QString error;
        const bool attached = engine.attach(id, &error);
        QTest::qWait(3000);
        ::kill(static_cast<pid_t>(sshd), SIGCONT);
        QVERIFY2(attached, qPrintable(error));
        const RunRecord record = waitForEnd(engine, 120000);
        QCOMPARE(record.state, QStringLiteral("finished"));
        for (const Diagnosis& d : std::as_const(found))
            QVERIFY2(d.kind != DiagnosisKind::Hang, qPrintable(d.toString()));
    }

    // A run that ended keeps its stored end when it is attached to again (to read its logs) or stopped late.
    void endedRunKeepsItsEndWhenAttachedOrStopped() {
        RunStore store(m_dir.filePath(QStringLiteral("store-ended")));
        QJsonObject job{{"version", 1},
                        {"name", "ended"},
                        {"mode", "debug"},
                        {"master_port", freePort()},
                        {"trainer", trainerJson(4)},
                        {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"max_steps", 4}}}};
        QString runId;
        {
            remote::RunEngine engine(&store, engineOptions());
            QString error;
            QVERIFY2(engine.launch(jobFrom(job), RunMode::Debug, &error), qPrintable(error));
            runId = waitForEnd(engine, 120000).id;
        }
        const auto stored = store.load(runId);
        QVERIFY(stored && stored->ended.isValid());
        QCOMPARE(stored->state, QStringLiteral("finished"));
        QTest::qWait(1100); // an end written again would be a later time
        for (const bool stopToo : {false, true}) {
            remote::RunEngine engine(&store, engineOptions());
            QString error;
            QVERIFY2(engine.attach(runId, &error), qPrintable(error));
            if (stopToo)
                engine.stop();
            const RunRecord record = waitForEnd(engine, 60000);
            QCOMPARE(record.state, QStringLiteral("finished"));
            QCOMPARE(record.ended, stored->ended);
            QCOMPARE(store.load(runId)->ended, stored->ended);
            QCOMPARE(store.load(runId)->state, QStringLiteral("finished"));
            QCOMPARE(store.load(runId)->summary, stored->summary);
            QVERIFY(!store.stopRequestedAt(runId).isValid());
        }
    }

    // A run not seen to end (detached, never attached to again) is diagnosed from this machine's copy only as far
    // as every rank's copy goes: a rank whose copy stops sooner is not taken for hung. A hang inside the copy is.
    void runNotSeenToEndIsDiagnosedUpToItsCopy() {
        RunStore store(m_dir.filePath(QStringLiteral("store-copy")));
        const auto storedRun = [&store](const QString& recording, int cutRank1AfterStep) {
            const QString id = newStoredRun(store, recording);
            for (int rank = 0; rank < 2 && !id.isEmpty(); ++rank) {
                QByteArray bytes = readAll(
                    QStringLiteral(RANKSCOPE_SOURCE_DIR "/tests/data/events/%1-rank%2.out").arg(recording).arg(rank));
                if (rank == 1 && cutRank1AfterStep > 0) {
                    const QByteArray step = QByteArrayLiteral("\"type\":\"step\",");
                    qsizetype at = 0;
                    for (int n = 0; n < cutRank1AfterStep && at >= 0; ++n)
                        at = bytes.indexOf(step, at + 1);
                    bytes.truncate(bytes.indexOf('\n', at) + 1);
                }
                if (!store.appendStream(id, rank, RankStream::Events, 0, bytes))
                    return QString();
            }
            return id;
        };
        // A healthy run whose rank 1 was copied up to its step 6 only, rank 0 to its end.
        const QString cut = storedRun(QStringLiteral("recorded-ok"), 6);
        QVERIFY(!cut.isEmpty());
        double knownUntil = 0;
        QCOMPARE(hangsWhenOpened(store, cut, &knownUntil), 0);
        QVERIFY(std::isfinite(knownUntil));
        const QByteArray rank1 = readAll(store.streamPath(cut, 1, RankStream::Events));
        const QByteArray lastLine =
            rank1.left(rank1.size() - 1).mid(rank1.left(rank1.size() - 1).lastIndexOf('\n') + 1);
        const TrainerEventResult last = decodeTrainerEvent(lastLine.mid(qsizetype(schema::kLinePrefix.size())));
        QVERIFY(last.event);
        QCOMPARE(knownUntil, last.event->time);
        // The recorded hang, copied whole but not seen to end: still a hang.
        const QString hung = storedRun(QStringLiteral("recorded-hang"), 0);
        QVERIFY(!hung.isEmpty());
        QVERIFY(hangsWhenOpened(store, hung) > 0);
    }

    // Ranks being ended stop moving by design: a hang first seen after the stop was asked for is not reported, in a
    // stored run's replay (and live, by the same rule). Without the stop, the same stillness is a hang.
    void stillnessAfterTheStopIsNotAHang() {
        RunStore store(m_dir.filePath(QStringLiteral("store-ending")));
        // Both ranks of the healthy recording up to their step 6, then 10 s inside one collective, beating.
        const auto stored = [&store](bool stopped) {
            auto record = store.load(newStoredRun(store, QStringLiteral("ending")));
            if (!record)
                return QString();
            double last = 0;
            QByteArray kept[2];
            qint64 finished[2] = {0, 0};
            for (int rank = 0; rank < 2; ++rank) {
                const QList<QByteArray> lines =
                    readAll(QStringLiteral(RANKSCOPE_SOURCE_DIR "/tests/data/events/recorded-ok-rank%1.out").arg(rank))
                        .split('\n');
                for (const QByteArray& line : lines) {
                    const TrainerEventResult decoded =
                        decodeTrainerEvent(line.mid(qsizetype(schema::kLinePrefix.size())));
                    if (!decoded.event)
                        continue;
                    if (decoded.event->type == TrainerEventType::Step &&
                        decoded.event->integer(schema::step::kStep) > 6)
                        break;
                    if (decoded.event->type == TrainerEventType::Heartbeat)
                        finished[rank] = decoded.event->integer(schema::heartbeat::kCollectiveFinished);
                    last = std::max(last, decoded.event->time);
                    kept[rank] += line + '\n';
                }
            }
            const qint64 collective = std::max(finished[0], finished[1]);
            for (int rank = 0; rank < 2; ++rank) {
                for (int beat = 1; beat <= 20; ++beat)
                    kept[rank] += QStringLiteral("@rankscope {\"v\":\"1.0\",\"type\":\"heartbeat\",\"rank\":%1,"
                                                 "\"time\":%2,\"phase\":\"backward\",\"step\":6,"
                                                 "\"collective_started\":%3,\"collective_finished\":%4}\n")
                                      .arg(rank)
                                      .arg(last + beat * 0.5, 0, 'f', 3)
                                      .arg(collective + 1)
                                      .arg(collective)
                                      .toUtf8();
                if (!store.appendStream(record->id, rank, RankStream::Events, 0, kept[rank]))
                    return QString();
            }
            if (stopped) {
                const QDateTime stopAt = QDateTime::fromMSecsSinceEpoch(qint64((last + 0.2) * 1000), Qt::UTC);
                store.markStopRequested(record->id, stopAt);
                record->state = QStringLiteral("stopped");
                record->ended = stopAt.addSecs(12);
                for (int rank = 0; rank < 2; ++rank)
                    record->exits.insert(rank, RankExit{128 + 15, stopAt.addSecs(11), true});
            }
            return store.save(*record) ? record->id : QString();
        };
        const QString still = stored(false);
        QVERIFY(!still.isEmpty());
        QVERIFY(hangsWhenOpened(store, still) > 0);
        const QString ending = stored(true);
        QVERIFY(!ending.isEmpty());
        QCOMPARE(hangsWhenOpened(store, ending), 0);
    }

    void sshRunReattachedLosesAndRepeatsNothing() {
        RunStore store(m_dir.filePath(QStringLiteral("store-reattach")));
        QJsonObject job{{"version", 1},
                        {"name", "reattach"},
                        {"mode", "submit"},
                        {"deploy", "binary"},
                        {"master_port", freePort()},
                        {"nodes", QJsonArray{loopbackNode("loop")}},
                        {"trainer", trainerJson(60, QJsonArray{"--slow-rank", "0", "--slow-ms", "100"})}};
        QString runId;
        {
            remote::RunEngine engine(&store, engineOptions());
            QSignalSpy events(&engine, &remote::RunEngine::events);
            QString error;
            QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
            // Leave once the ranks are stepping: like closing the app, or a dropped link.
            QTRY_VERIFY_WITH_TIMEOUT(steppedTo(events, -1, 5), 60000);
            runId = engine.record().id;
            engine.detach();
        }
        QTest::qWait(1500); // the run goes on without anyone attached
        remote::RunEngine engine(&store, engineOptions());
        QString error;
        QVERIFY2(engine.attach(runId, &error), qPrintable(error));
        const RunRecord record = waitForEnd(engine, 120000);
        QCOMPARE(record.state, QStringLiteral("finished"));
        QString mismatch;
        QVERIFY2(storeMatchesNodes(store, record, &mismatch), qPrintable(mismatch));
        for (int rank = 0; rank < 2; ++rank) {
            int steps = 0;
            QVERIFY(stepsAreContiguous(readAll(store.streamPath(record.id, rank, RankStream::Events)), &steps));
            QCOMPARE(steps, 60);
        }
    }

    void nodeThatCannotBeFollowedIsNotStopped() {
        RunStore store(m_dir.filePath(QStringLiteral("store-unfollowed")));
        QJsonObject job{{"version", 1},
                        {"name", "unfollowed"},
                        {"deploy", "binary"},
                        {"master_port", freePort()},
                        {"nodes", QJsonArray{loopbackNode("loop")}},
                        {"trainer", trainerJson(0, QJsonArray{"--slow-rank", "0", "--slow-ms", "50"}, 1000)}};
        QString runId;
        {
            remote::RunEngine engine(&store, engineOptions());
            QSignalSpy launched(&engine, &remote::RunEngine::launched);
            QString error;
            QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
            QTRY_VERIFY_WITH_TIMEOUT(!launched.isEmpty(), 60000);
            runId = engine.record().id;
            engine.detach();
        }
        // Reattaching with a known_hosts that disagrees with the node: refused, and the run left alone.
        const QString wrong = m_dir.filePath(QStringLiteral("changed_known_hosts"));
        QVERIFY(m_sshd.writeKnownHosts(wrong, false));
        remote::RunEngine engine(&store, engineOptions(wrong));
        QString error;
        QVERIFY2(engine.attach(runId, &error), qPrintable(error));
        const RunRecord record = waitForEnd(engine, 30000);
        QCOMPARE(record.state, QStringLiteral("lost"));
        QVERIFY2(record.summary.contains(QLatin1String("host-key-changed")), qPrintable(record.summary));
        QProcess pgrep;
        pgrep.start(QStringLiteral("pgrep"), {QStringLiteral("-f"), runId});
        pgrep.waitForFinished();
        QVERIFY(!pgrep.readAllStandardOutput().isEmpty()); // still training

        remote::RunEngine stopper(&store, engineOptions());
        QVERIFY2(stopper.attach(runId, &error), qPrintable(error));
        QSignalSpy stopped(&stopper, &remote::RunEngine::stopped);
        stopper.stop();
        QCOMPARE(waitForEnd(stopper, 60000).state, QStringLiteral("stopped"));
        QCOMPARE(stopped.value(0).value(0).toInt(), 0);
    }

    // The culprit's exit can be read after a peer's death started the teardown (what netns CI saw: rank 0 died of
    // SIGPIPE first). Its own error came before the teardown, so it failed by itself: it is the root cause and its
    // exit is not one the teardown caused.
    void lateExitOfTheCulpritIsNotTakenForTheTeardowns() {
        const QString fake = m_dir.filePath(QStringLiteral("late culprit.sh"));
        QVERIFY(writeExecutable(
            fake, "#!/bin/sh\n"
                  "rank=0; events=\n"
                  "while [ $# -gt 0 ]; do case \"$1\" in --rank) rank=$2;; --events) events=$2;; esac; shift; done\n"
                  "if [ \"$rank\" = 1 ]; then\n"
                  "  printf '@rankscope {\"v\":\"1.0\",\"type\":\"error\",\"rank\":1,\"time\":%s,"
                  "\"kind\":\"injected\",\"message\":\"its own error\",\"fatal\":true}\\n' "
                  "\"$(date +%s.%N | cut -c1-14)\" >>\"$events\"\n"
                  // It exits by itself, a little after the teardown's SIGTERM: its exit is read after it began.
                  "  trap 'sleep 0.5; exit 1' TERM\n"
                  "  sleep 30 & wait $!\n"
                  "  exit 1\n"
                  "fi\n"
                  "sleep 1; kill -PIPE $$\n"));
        QJsonObject job{{"version", 1},
                        {"name", "late-culprit"},
                        {"mode", "submit"},
                        {"deploy", "binary"},
                        {"master_port", freePort()},
                        {"nodes", QJsonArray{loopbackNode("loop")}},
                        {"trainer", trainerJson(1)}};
        RunStore store(m_dir.filePath(QStringLiteral("store-late")));
        remote::EngineOptions options = engineOptions();
        options.localTrainer = fake;
        options.failureGraceSeconds = 1;
        remote::RunEngine engine(&store, options);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
        const RunRecord record = waitForEnd(engine, 90000);
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.exits.value(0).signal(), 13); // SIGPIPE, seen first
        QVERIFY2(record.exits.value(1).status != 0, qPrintable(describeExitStatus(record.exits.value(1).status)));
        QVERIFY(!record.exits.value(1).stopped);
        QCOMPARE(record.firstFailedRank, 1);
        QVERIFY2(record.summary.contains(QLatin1String("its own error")), qPrintable(record.summary));
    }

    void metacharactersReachTheTrainerUnchanged() {
        // The "trainer" here prints what it received, NUL-separated, so every byte can be compared.
        const QString dumper = m_dir.filePath(QStringLiteral("dump args.sh"));
        QVERIFY(writeExecutable(dumper, "#!/bin/sh\nprintf '%s\\0' \"$@\"\nprintf 'ENV=%s\\0' \"$RS_WEIRD\"\n"));
        const QStringList weird = {"a b",         "it's",   "$HOME", "x;touch /tmp/rankscope-pwned",
                                   "`id`",        "l1\nl2", "*",     "\"q\"",
                                   "back\\slash", "$(id)"};
        const QString weirdEnv = QStringLiteral("$(touch /tmp/rankscope-pwned) 'x' \"y\" `z` ;&|<>");
        QJsonObject job{{"version", 1},
                        {"name", "quoting"},
                        {"mode", "submit"},
                        {"deploy", "binary"},
                        {"master_port", freePort()},
                        {"env", QJsonObject{{"RS_WEIRD", weirdEnv}}},
                        {"nodes", QJsonArray{loopbackNode("loop")}},
                        {"trainer", trainerJson(1, QJsonArray::fromStringList(weird))}};
        RunStore store(m_dir.filePath(QStringLiteral("store-quoting")));
        remote::EngineOptions options = engineOptions();
        options.localTrainer = dumper;
        remote::RunEngine engine(&store, options);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
        const RunRecord record = waitForEnd(engine, 60000);
        QCOMPARE(record.state, QStringLiteral("finished"));
        const QByteArray out = readAll(store.streamPath(record.id, 1, RankStream::Out));
        QVERIFY2(out.contains((weird.join(QChar(0)) + QChar(0)).toUtf8()), out.constData());
        QVERIFY(out.endsWith(("ENV=" + weirdEnv + QChar(0)).toUtf8()));
        QVERIFY(!QFile::exists(QStringLiteral("/tmp/rankscope-pwned")));
    }

    // NCCL's lines on a rank's stdout become network findings while the run goes on; a Gloo job whose ranks
    // get no NCCL_DEBUG (none in its env, not a verbose debug run) is spared the parsing. (No GPU here: a stand-in
    // prints what NCCL prints.)
    void ncclWarningsOnStdoutBecomeFindings() {
        const QString fake = m_dir.filePath(QStringLiteral("nccl says.sh"));
        QVERIFY(writeExecutable(
            fake, "#!/bin/sh\n"
                  "rank=0\n"
                  "while [ $# -gt 0 ]; do [ \"$1\" = --rank ] && rank=$2; shift; done\n"
                  "printf 'gpu-a:%s:%s [0] NCCL INFO NCCL version 2.18.1+cuda12.1\\n' $$ $$\n"
                  "printf 'gpu-a:%s:%s [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\\n' $$ $$\n"
                  "sleep 1.5\n"));
        const auto runWith = [&](const QJsonObject& env, bool verbose = false) {
            QJsonObject job{{"version", 1},
                            {"name", "nccl-lines"},
                            {"mode", "debug"},
                            {"env", env},
                            {"trainer", trainerJson(1)},
                            {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"verbose", verbose}}}};
            RunStore store(m_dir.filePath(QStringLiteral("store-nccl")));
            remote::EngineOptions options = engineOptions();
            options.localTrainer = fake;
            remote::RunEngine engine(&store, options);
            QSignalSpy found(&engine, &remote::RunEngine::diagnoses);
            QSignalSpy facts(&engine, &remote::RunEngine::ncclFacts);
            QString error;
            if (!engine.launch(jobFrom(job), RunMode::Debug, &error))
                qWarning("%s", qPrintable(error));
            const RunRecord record = waitForEnd(engine, 60000);
            QVector<Diagnosis> all;
            for (const auto& call : found)
                all += call.front().value<QVector<Diagnosis>>();
            const QVector<RankNcclFacts> lastFacts =
                facts.isEmpty() ? QVector<RankNcclFacts>() : facts.last().front().value<QVector<RankNcclFacts>>();
            return std::make_tuple(record, all, lastFacts);
        };
        const auto [record, findings, perRank] = runWith(QJsonObject{{"NCCL_DEBUG", "WARN"}});
        QCOMPARE(record.state, QStringLiteral("finished"));
        // The last word on the warning: both ranks printed it. Said again only when that changed (a check that came
        // between the two ranks' lines said it of the first rank alone, 0 or 1: the two run at once), not at every
        // check.
        const auto warning = std::find_if(findings.rbegin(), findings.rend(), [](const Diagnosis& d) {
            return d.kind == DiagnosisKind::Network && d.key.startsWith(QLatin1String("nccl:warn:"));
        });
        QVERIFY2(warning != findings.rend(), qPrintable(QStringLiteral("%1 findings").arg(findings.size())));
        QCOMPARE(warning->ranks, (QVector<int>{0, 1}));
        QVERIFY2(warning->message.contains(QLatin1String("Failed to open libibverbs.so[.1] [misc/ibvwrap.cc:63]")),
                 qPrintable(warning->message));
        QStringList said;
        for (const Diagnosis& d : findings)
            if (d.key == warning->key)
                said.append(d.message);
        QVERIFY2(said.size() == 1 || (said.size() == 2 && said.front() != said.back() &&
                                      (said.front().contains(QLatin1String("rank(s) 0 (")) ||
                                       said.front().contains(QLatin1String("rank(s) 1 (")))),
                 qPrintable(said.join(QLatin1Char('\n'))));
        // The same lines, per rank, for the NCCL panel: both ranks' version and warning.
        QCOMPARE(perRank.size(), 2);
        for (int rank = 0; rank < 2; ++rank) {
            QCOMPARE(perRank[rank].rank, rank);
            QCOMPARE(perRank[rank].host, QStringLiteral("gpu-a"));
            QCOMPARE(perRank[rank].versions, QStringList{QStringLiteral("2.18.1")});
            QCOMPARE(perRank[rank].warnings,
                     QStringList{QStringLiteral("Failed to open libibverbs.so[.1] [misc/ibvwrap.cc:63]")});
        }

        const auto [plain, none, noFacts] = runWith(QJsonObject{});
        QVERIFY(noFacts.isEmpty());
        QCOMPARE(plain.state, QStringLiteral("finished"));
        QVERIFY(std::none_of(none.begin(), none.end(),
                             [](const Diagnosis& d) { return d.kind == DiagnosisKind::Network; }));

        // A verbose debug run gives its ranks NCCL_DEBUG=INFO itself: their lines are read, Gloo or not.
        const auto [verboseRun, verboseFindings, verboseFacts] = runWith(QJsonObject{}, true);
        QCOMPARE(verboseRun.state, QStringLiteral("finished"));
        QCOMPARE(verboseFacts.size(), 2);
        QCOMPARE(verboseFacts[1].versions, QStringList{QStringLiteral("2.18.1")});
    }

    void eventsAndLogLinesAreNeverMistakenForEachOther() {
        // A "trainer" that prints an event-looking line on stdout and writes a plain line into its events file.
        const QString fake = m_dir.filePath(QStringLiteral("two streams.sh"));
        QVERIFY(writeExecutable(
            fake, "#!/bin/sh\n"
                  "while [ \"$1\" != --events ]; do shift; done\n"
                  "echo '@rankscope {\"v\":\"1.0\",\"type\":\"heartbeat\",\"rank\":9,\"time\":1,\"phase\":\"init\","
                  "\"step\":0,\"collective_started\":0,\"collective_finished\":0}'\n"
                  "printf '%s\\n' '@rankscope {\"v\":\"1.0\",\"type\":\"heartbeat\",\"rank\":0,\"time\":2,"
                  "\"phase\":\"init\",\"step\":0,\"collective_started\":0,\"collective_finished\":0}' "
                  "'not an event' >\"$2\"\n"));
        QJsonObject job{{"version", 1},
                        {"name", "streams"},
                        {"mode", "debug"},
                        {"trainer", trainerJson(1)},
                        {"debug", QJsonObject{{"node", "local"}, {"procs", 1}, {"verbose", false}}}};
        RunStore store(m_dir.filePath(QStringLiteral("store-streams")));
        remote::EngineOptions options = engineOptions();
        options.localTrainer = fake;
        remote::RunEngine engine(&store, options);
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QSignalSpy lines(&engine, &remote::RunEngine::logLines);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Debug, &error), qPrintable(error));
        QCOMPARE(waitForEnd(engine, 60000).state, QStringLiteral("finished"));
        QVector<TrainerEvent> all;
        for (const auto& call : events)
            all += call.front().value<QVector<TrainerEvent>>();
        QCOMPARE(all.size(), 1); // only the events file's event
        QCOMPARE(all.front().rank, 0);
        QStringList outLines;
        QStringList eventFileLines;
        for (const auto& call : lines)
            for (const RankLogLine& line : call.front().value<QVector<RankLogLine>>())
                (line.stream == RankStream::Out ? outLines : eventFileLines) << line.text;
        QCOMPARE(outLines.size(), 1); // the event-looking line on stdout stays a log line
        QVERIFY(outLines.front().startsWith(QLatin1String("@rankscope {")));
        QCOMPARE(eventFileLines, QStringList{QStringLiteral("not an event")});
    }

    void silentNodeIsReportedLost() {
        // Everything of the run dies at once, supervisor included, as when a node reboots: no exit status is
        // ever written, and the supervisor's pulse stops.
        RunStore store(m_dir.filePath(QStringLiteral("store-lost")));
        remote::RunEngine engine(&store, quickToLoseNodes());
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QJsonObject job{{"version", 1},
                        {"name", "lost"},
                        {"deploy", "binary"},
                        {"master_port", freePort()},
                        {"nodes", QJsonArray{loopbackNode("loop")}},
                        {"trainer", trainerJson(0, QJsonArray{"--slow-rank", "0", "--slow-ms", "50"}, 1000)}};
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(events.size() > 5, 60000);
        QTest::qWait(2500); // at least one pulse seen
        QCOMPARE(QProcess::execute(QStringLiteral("pkill"),
                                   {QStringLiteral("-9"), QStringLiteral("-f"), engine.record().id}),
                 0);
        const RunRecord record = waitForEnd(engine, 60000);
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.exits.value(0).status, kLostExitStatus);
        QCOMPARE(record.exits.value(1).status, kLostExitStatus);
        QVERIFY2(record.summary.contains(QLatin1String("lost")), qPrintable(record.summary));
    }

    // The peer's end is read first (its collective failed), the culprit's after the teardown began (its own error
    // came before it): the peer is judged again once the culprit is known, stopped, and the front ends are told
    // (rankExitJudged), so a grid that showed it failed shows it stopped.
    void aPeerSeenBeforeItsCulpritIsJudgedAgain() {
        const QString fake = m_dir.filePath(QStringLiteral("peer first.sh"));
        QVERIFY(writeExecutable(
            fake, "#!/bin/sh\n"
                  "rank=0; events=\n"
                  "while [ $# -gt 0 ]; do case \"$1\" in --rank) rank=$2;; --events) events=$2;; esac; shift; done\n"
                  "say() { printf '@rankscope {\"v\":\"1.0\",\"type\":\"error\",\"rank\":%s,\"time\":%s,"
                  "\"kind\":\"%s\",\"message\":\"%s\",\"fatal\":true}\\n' "
                  "\"$rank\" \"$(date +%s.%N | cut -c1-14)\" \"$1\" \"$2\" >>\"$events\"; }\n"
                  "if [ \"$rank\" = 1 ]; then\n"
                  "  say injected 'its own error'\n"
                  "  trap 'sleep 0.5; exit 1' TERM\n"
                  "  sleep 30 & wait $!\n"
                  "  exit 1\n"
                  "fi\n"
                  "sleep 1; say collective 'all-reduce failed: Connection reset by peer'; exit 1\n"));
        const QJsonObject job{{"version", 1},
                              {"name", "peer-first"},
                              {"mode", "submit"},
                              {"deploy", "binary"},
                              {"master_port", freePort()},
                              {"nodes", QJsonArray{loopbackNode("loop")}},
                              {"trainer", trainerJson(1)}};
        RunStore store(m_dir.filePath(QStringLiteral("store-peer-first")));
        remote::EngineOptions options = engineOptions();
        options.localTrainer = fake;
        options.failureGraceSeconds = 1;
        remote::RunEngine engine(&store, options);
        QSignalSpy exited(&engine, &remote::RunEngine::rankExited);
        QSignalSpy judged(&engine, &remote::RunEngine::rankExitJudged);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
        const RunRecord record = waitForEnd(engine, 90000);
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.firstFailedRank, 1);
        QVERIFY(!record.exits.value(1).stopped);
        QVERIFY(record.exits.value(0).stopped);
        QVERIFY(!exited.isEmpty());
        QCOMPARE(exited.front().at(0).toInt(), 0); // the peer's end, read first
        QCOMPARE(exited.front().at(3).toBool(), false);
        QCOMPARE(judged.size(), 1);
        QCOMPARE(judged.front().at(0).toInt(), 0);
        QCOMPARE(judged.front().at(3).toBool(), true);
    }

    // Rank 1 is killed (SIGKILL, as the OOM killer does) and its peer's collective fails at once; on a busy node the
    // supervisor notes the peer's exit first, which starts the teardown, and the killed rank's some time after. Its
    // SIGKILL came before the teardown could send one: it is the culprit, not a rank the teardown ended. The node's
    // lateness is made here by stopping the supervisor's watcher of rank 1 until the teardown has begun.
    void aSigkillNotedAfterTheTeardownBeganIsTheCulprit() {
        const QString fake = m_dir.filePath(QStringLiteral("noted late.sh"));
        QVERIFY(writeExecutable(
            fake, "#!/bin/sh\n"
                  "rank=0; events=\n"
                  "while [ $# -gt 0 ]; do case \"$1\" in --rank) rank=$2;; --events) events=$2;; esac; shift; done\n"
                  "[ \"$rank\" = 1 ] && exec sleep 60\n"
                  "while [ ! -e \"$(dirname \"$events\")/peer-killed\" ]; do sleep 0.05; done\n"
                  "printf '@rankscope {\"v\":\"1.0\",\"type\":\"error\",\"rank\":0,\"time\":%s,"
                  "\"kind\":\"collective\",\"message\":\"Connection closed by peer\",\"fatal\":true}\\n' "
                  "\"$(date +%s.%N | cut -c1-14)\" >>\"$events\"\n"
                  "exit 1\n"));
        const QJsonObject job{{"version", 1},
                              {"name", "noted-late"},
                              {"mode", "submit"},
                              {"deploy", "binary"},
                              {"master_port", freePort()},
                              {"nodes", QJsonArray{loopbackNode("loop")}},
                              {"trainer", trainerJson(1)}};
        RunStore store(m_dir.filePath(QStringLiteral("store-noted-late")));
        remote::EngineOptions options = engineOptions();
        options.localTrainer = fake;
        remote::RunEngine engine(&store, options);
        QSignalSpy exited(&engine, &remote::RunEngine::rankExited);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(!engine.record().nodes.value(0).runDir.isEmpty(), 60000);
        const QString runDir = engine.record().nodes.value(0).runDir;
        pid_t rank1 = 0;
        QTRY_VERIFY_WITH_TIMEOUT((rank1 = pid_t(readAll(runDir + QStringLiteral("/rank1.pid")).trimmed().toInt())) > 0,
                                 60000);
        // The watcher is the rank's parent: /proc/PID/stat's fourth field, after the command's closing parenthesis.
        const QByteArray stat = readAll(QStringLiteral("/proc/%1/stat").arg(rank1));
        const pid_t watcher = pid_t(stat.mid(stat.lastIndexOf(')') + 2).split(' ').value(1).toInt());
        QVERIFY2(watcher > 1, stat.constData());
        QCOMPARE(::kill(watcher, SIGSTOP), 0);
        QCOMPARE(::kill(rank1, SIGKILL), 0);
        QVERIFY(writeExecutable(runDir + QStringLiteral("/peer-killed"), {}));
        QTRY_VERIFY_WITH_TIMEOUT(!exited.isEmpty(), 60000); // rank 0's exit: the teardown has begun
        QCOMPARE(exited.front().at(0).toInt(), 0);
        QCOMPARE(::kill(watcher, SIGCONT), 0);
        const RunRecord record = waitForEnd(engine, 60000);
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.exits.value(1).signal(), SIGKILL);
        QVERIFY(!record.exits.value(1).stopped);
        QVERIFY(record.exits.value(0).stopped); // its collective failed with the dead peer
        QCOMPARE(record.firstFailedRank, 1);
        QVERIFY2(record.summary.contains(QLatin1String("killed by SIGKILL")), qPrintable(record.summary));
    }

    // One node dies whole (its supervisor too) while the other's rank fails in the collective it shared with it:
    // the lost rank is the cause. It is lost from when it was last seen alive, not from when the silence was long
    // enough to say so, which came after the peer's failure had started the teardown.
    void aNodeThatDiesIsTheCauseOfItsPeersCollectiveError() {
        RunStore store(m_dir.filePath(QStringLiteral("store-node-dies")));
        remote::RunEngine engine(&store, quickToLoseNodes());
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QJsonObject a = loopbackNode("a");
        QJsonObject b = loopbackNode("b");
        a.insert("procs", 1);
        b.insert("procs", 1);
        const QJsonObject job{{"version", 1},
                              {"name", "node-dies"},
                              {"deploy", "binary"},
                              {"master_port", freePort()},
                              {"nodes", QJsonArray{a, b}},
                              {"trainer", trainerJson(0, QJsonArray{"--slow-rank", "0", "--slow-ms", "50"}, 1000)}};
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(steppedTo(events, 1, 5), 60000);
        QTest::qWait(2500); // at least one pulse of node b seen
        // Everything of node b's run directory (…/runs/ID/node1): a pattern without the work dir's metacharacters.
        QVERIFY(!engine.record().nodes.value(1).runDir.isEmpty());
        const QString nodeB = QStringLiteral("%1/node1").arg(engine.record().id);
        QCOMPARE(QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-9"), QStringLiteral("-f"), nodeB}), 0);
        const RunRecord record = waitForEnd(engine, 60000);
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.exits.value(1).status, kLostExitStatus);
        QCOMPARE(record.firstFailedRank, 1);
        QVERIFY(record.exits.value(0).stopped); // its collective failed with the lost node: no failure of its own
        QVERIFY2(record.summary.startsWith(QLatin1String("rank 1 on ")) &&
                     record.summary.contains(QLatin1String("lost")),
                 qPrintable(record.summary));
    }

    // One rank killed (SIGKILL, as the OOM killer does) in a submitted run of two nodes over SSH: its node's
    // supervisor ends its sibling at once (SIGTERM), the other node's ranks fail in their collective with it, and the
    // engine's teardown comes tens of milliseconds later. Which of these came before the teardown is a race; none is
    // a failure of its own. The run has one failed rank, the killed one, live as in the store.
    void oneKilledRankIsTheOnlyOneFailed() {
        RunStore store(m_dir.filePath(QStringLiteral("store-one-killed")));
        remote::RunEngine engine(&store, engineOptions());
        QSignalSpy events(&engine, &remote::RunEngine::events);
        RankStatusTracker live; // as the grid and the bridge follow it
        const auto exited = [&live](int rank, const QString& host, int status, bool stopped) {
            live.rankExited(rank, status, host, stopped);
        };
        connect(&engine, &remote::RunEngine::rankExited, exited);
        connect(&engine, &remote::RunEngine::rankExitJudged, exited);
        connect(&engine, &remote::RunEngine::events,
                [&live](const QVector<TrainerEvent>& batch) { live.addEvents(batch); });
        const QJsonObject job{{"version", 1},
                              {"name", "one-killed"},
                              {"deploy", "binary"},
                              {"master_port", freePort()},
                              {"nodes", QJsonArray{loopbackNode("a"), loopbackNode("b")}},
                              {"trainer", trainerJson(0, {}, 1000)}};
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(steppedTo(events, 3, 20), 60000);
        QFile pidFile(engine.record().nodes.value(1).runDir + QStringLiteral("/rank3.pid"));
        QVERIFY2(pidFile.open(QIODevice::ReadOnly), qPrintable(pidFile.fileName()));
        const pid_t pid = pid_t(pidFile.readAll().trimmed().toInt());
        QVERIFY(pid > 0);
        QCOMPARE(::kill(pid, SIGKILL), 0);
        const RunRecord record = waitForEnd(engine, 60000);
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.firstFailedRank, 3);
        QCOMPARE(record.exits.value(3).signal(), SIGKILL);
        QVERIFY(!record.exits.value(3).stopped);
        for (int rank = 0; rank < 3; ++rank) {
            QVERIFY2(record.exits.value(rank).status != 0, qPrintable(QString::number(rank)));
            QVERIFY2(record.exits.value(rank).stopped,
                     qPrintable(QStringLiteral("rank %1: %2, %3")
                                    .arg(rank)
                                    .arg(describeExitStatus(record.exits.value(rank).status),
                                         live.rank(rank) ? live.rank(rank)->reason : QString())));
            QCOMPARE(live.rank(rank)->state, RankLiveState::Stopped);
        }
        QCOMPARE(live.rank(3)->state, RankLiveState::Failed);
        const std::optional<RunRecord> stored = store.load(record.id);
        QVERIFY(stored);
        for (int rank = 0; rank < 4; ++rank)
            QCOMPARE(stored->exits.value(rank).stopped, rank != 3);
    }

    // Something listens on the master port already (another run's store): the launch fails before any rank starts,
    // naming the port, instead of ranks joining the other run's rendezvous or failing in theirs.
    void aMasterPortInUseStopsTheLaunch() {
        // A listener of this test's own, on a port the kernel picks.
        const int other = ::socket(AF_INET, SOCK_STREAM, 0);
        QVERIFY(other >= 0);
        const auto closeOther = qScopeGuard([other] { ::close(other); });
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_ANY);
        socklen_t length = sizeof address;
        QVERIFY(::bind(other, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 && ::listen(other, 1) == 0 &&
                ::getsockname(other, reinterpret_cast<sockaddr*>(&address), &length) == 0);
        const int port = ntohs(address.sin_port);
        RunStore store(m_dir.filePath(QStringLiteral("store-port-in-use")));
        remote::RunEngine engine(&store, engineOptions());
        QSignalSpy exited(&engine, &remote::RunEngine::rankExited);
        const QJsonObject job{{"version", 1},
                              {"name", "port-in-use"},
                              {"deploy", "binary"},
                              {"master_port", port},
                              {"nodes", QJsonArray{loopbackNode("loop")}},
                              {"trainer", trainerJson(5)}};
        const RunRecord record = launchThatFails(engine, job);
        QVERIFY(engine.launchFailed());
        QCOMPARE(record.state, QStringLiteral("failed"));
        QVERIFY2(record.summary.contains(QStringLiteral("master port %1 is already in use").arg(port)),
                 qPrintable(record.summary));
        QVERIFY(exited.isEmpty()); // no rank was started
        QVERIFY(record.nodes.value(0).runDir.isEmpty() ||
                !QFileInfo::exists(record.nodes.value(0).runDir + QStringLiteral("/rank0.pid")));
    }

    // A node that refuses the login stops the launch before the node that is ready starts a rank: nothing to
    // tear down there, no rank waiting in a rendezvous that cannot complete.
    void noRankStartsUntilEveryNodeIsReady() {
        RunStore store(m_dir.filePath(QStringLiteral("store-not-every-node")));
        remote::RunEngine engine(&store, engineOptions());
        QSignalSpy exited(&engine, &remote::RunEngine::rankExited);
        QStringList said;
        connect(&engine, &remote::RunEngine::nodeProgress, [&said](int node, const QString& host, const QString& m) {
            said << QStringLiteral("%1 %2: %3").arg(node).arg(host, m);
        });
        QJsonObject refused = loopbackNode("refused");
        refused.insert("user", "nosuchuser");
        const QJsonObject job{{"version", 1},
                              {"name", "not-every-node"},
                              {"deploy", "binary"},
                              {"nodes", QJsonArray{loopbackNode("ready"), refused}},
                              {"trainer", trainerJson(5)}};
        const RunRecord record = launchThatFails(engine, job);
        QVERIFY(engine.launchFailed());
        QCOMPARE(record.state, QStringLiteral("failed"));
        QVERIFY2(record.summary.contains(QLatin1String("nosuchuser")), qPrintable(record.summary));
        QVERIFY2(exited.isEmpty(), qPrintable(said.join(QLatin1Char('\n'))));
        const QString runDir = m_dir.filePath(QStringLiteral("work dir 'of' $node/runs/%1/node0").arg(record.id));
        QVERIFY2(!QFileInfo::exists(runDir + QStringLiteral("/rank0.pid")), qPrintable(runDir));
        QVERIFY2(!QFileInfo::exists(runDir + QStringLiteral("/supervisor.log")), qPrintable(runDir));
        QVERIFY2(said.contains(QStringLiteral("0 %1: teardown: no rank was started here").arg(m_sshd.host())),
                 qPrintable(said.join(QLatin1Char('\n'))));
    }

    void unknownHostStopsTheLaunchNamingTheHost() {
        RunStore store(m_dir.filePath(QStringLiteral("store-unknown")));
        remote::RunEngine engine(&store, engineOptions(m_dir.filePath(QStringLiteral("no_known_hosts"))));
        QJsonObject job{{"version", 1},
                        {"name", "unknown-host"},
                        {"deploy", "binary"},
                        {"nodes", QJsonArray{loopbackNode("loop")}},
                        {"trainer", trainerJson(1)}};
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
        const RunRecord record = waitForEnd(engine, 30000);
        QCOMPARE(record.state, QStringLiteral("failed"));
        QVERIFY2(record.summary.contains(m_sshd.host()), qPrintable(record.summary));
        QVERIFY2(record.summary.contains(QLatin1String("host-key-unknown")), qPrintable(record.summary));
    }

    // A supervisor that has ended but is not reaped yet is no process left. Its parent is gone by then, so PID 1
    // reaps it, and some do that late (this VM's, by a second or more: a failed run ended that much after its ranks),
    // or never (a container whose first process is no init); kill -0 finds it all the while. The stop neither waits for
    // it nor counts it. Here its parent is a `sleep` that never reaps it.
    void aSupervisorNotYetReapedIsNoProcessLeft() {
        QFile resource(QStringLiteral(":/rankscope/remote/supervisor.sh"));
        QVERIFY(resource.open(QIODevice::ReadOnly));
        const QString supervisor = m_dir.filePath(QStringLiteral("unreaped-supervisor.sh"));
        QVERIFY(writeExecutable(supervisor, resource.readAll()));
        const QString run = m_dir.filePath(QStringLiteral("unreaped-run"));
        QVERIFY(QDir().mkpath(run));
        QVERIFY(writeExecutable(run + QStringLiteral("/ranks"), "0\n"));
        QVERIFY(writeExecutable(run + QStringLiteral("/rank0.cmd"), "exit 0\n"));
        QProcess parent; // sh, then the sleep it execs: the supervisor's parent
        parent.start(
            QStringLiteral("/bin/sh"),
            {QStringLiteral("-c"),
             QStringLiteral("setsid /bin/sh \"$1\" start \"$2\" debug </dev/null >/dev/null 2>&1 & exec sleep 60"),
             QStringLiteral("sh"), supervisor, run});
        QVERIFY(parent.waitForStarted());
        const auto endParent = qScopeGuard([&parent] {
            parent.kill();
            parent.waitForFinished();
        });
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(run + QStringLiteral("/done")), 30000);
        const QString status =
            QStringLiteral("/proc/%1/status")
                .arg(QString::fromLatin1(readAll(run + QStringLiteral("/supervisor.pid")).trimmed()));
        QTRY_VERIFY_WITH_TIMEOUT(readAll(status).contains("State:\tZ"), 10000); // ended, not reaped
        QProcess stop;
        stop.start(QStringLiteral("/bin/sh"), {supervisor, QStringLiteral("stop"), run, QStringLiteral("1")});
        QVERIFY(stop.waitForFinished(30000));
        const QByteArray out = stop.readAllStandardOutput();
        QVERIFY2(out.contains("left=0"), out.constData());
        QVERIFY2(readAll(status).contains("State:\tZ"), readAll(status).constData()); // the case it was meant to be
    }
};

QTEST_GUILESS_MAIN(tst_RunEngine)
#include "tst_runengine.moc"
