// SPDX-License-Identifier: MIT
// RankStatusTracker on the streams recorded from real 2-rank runs, and on small hand-made feeds for the
// rules the recordings do not reach (findings, lost, exits).
#include "core/diagnostics.h"
#include "core/eventstreamparser.h"
#include "core/rankstatus.h"
#include "core/runstore.h"

#include <QFile>
#include <QJsonDocument>
#include <QtTest>

#include <algorithm>

using namespace rankscope;

namespace {

QVector<TrainerEvent> readEvents(const QString& fileName) {
    QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/events/") + fileName);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("missing recording %s", qPrintable(file.fileName()));
    EventStreamParser parser;
    ParsedBatch batch = parser.feed(file.readAll());
    batch.append(parser.finish());
    return batch.events;
}

// Both ranks' events merged in time order, as the engine would deliver them live.
QVector<TrainerEvent> recording(const QString& name, const QString& suffix = QStringLiteral(".out")) {
    QVector<TrainerEvent> all;
    for (int rank = 0; rank < 2; ++rank)
        all += readEvents(QStringLiteral("%1-rank%2%3").arg(name).arg(rank).arg(suffix));
    std::stable_sort(all.begin(), all.end(),
                     [](const TrainerEvent& a, const TrainerEvent& b) { return a.time < b.time; });
    return all;
}

// Feeds the events with time <= until in batches of `batch`, then evaluates at `now`.
void feedUntil(RankStatusTracker& tracker, const QVector<TrainerEvent>& events, double until, double now,
               int batch = 5) {
    QVector<TrainerEvent> pending;
    for (const TrainerEvent& e : events) {
        if (e.time > until)
            break;
        pending.append(e);
        if (pending.size() == batch) {
            tracker.addEvents(pending);
            pending.clear();
        }
    }
    tracker.addEvents(pending);
    tracker.update(now);
}

TrainerEvent decoded(const char* json) {
    const TrainerEventResult r = decodeTrainerEvent(QByteArrayView(json));
    if (!r.ok())
        qFatal("bad test event: %s", qPrintable(r.error));
    return *r.event;
}

TrainerEvent step(int rank, double time, int step) {
    const QByteArray json =
        QStringLiteral(R"({"v":"1.0","type":"step","rank":%1,"time":%2,"epoch":1,"step":%3,)"
                       R"("loss":1.5,"lr":0.1,"images_per_sec":100,"step_ms":10,"data_ms":1,"forward_ms":2,)"
                       R"("backward_ms":3,"comm_wait_ms":3,"optimizer_ms":1})")
            .arg(rank)
            .arg(time, 0, 'f', 3)
            .arg(step)
            .toUtf8();
    return decoded(json.constData());
}

// Ranks 0 to `ranks` - 1 stepping together, one step a second from 1001.0, `steps` steps.
QVector<TrainerEvent> lockstep(int ranks, int steps) {
    QVector<TrainerEvent> events;
    for (int i = 1; i <= steps; ++i)
        for (int rank = 0; rank < ranks; ++rank)
            events.append(step(rank, 1000.0 + i, i));
    return events;
}

} // namespace

class TestRankStatus final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void cleanRunFinishes() {
        RankStatusTracker tracker;
        const QVector<TrainerEvent> events = recording(QStringLiteral("clean"), QStringLiteral(".events"));
        feedUntil(tracker, events, 1e12, events.constLast().time);
        QCOMPARE(tracker.rankCount(), 2);
        for (const RankLiveStatus& s : tracker.ranks())
            QCOMPARE(s.state, RankLiveState::Finished);
    }

    void okRecordingRunsThenFinishes() {
        RankStatusTracker tracker;
        const QVector<TrainerEvent> events = recording(QStringLiteral("recorded-ok"));
        const auto firstStep = std::find_if(events.begin(), events.end(),
                                            [](const TrainerEvent& e) { return e.type == TrainerEventType::Step; });
        QVERIFY(firstStep != events.end());
        // Before the first step both ranks are starting.
        feedUntil(tracker, events, firstStep->time - 0.001, firstStep->time - 0.001);
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Starting);
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Starting);

        RankStatusTracker live;
        const double middle = (firstStep->time + events.constLast().time) / 2.0;
        feedUntil(live, events, middle, middle);
        for (const RankLiveStatus& s : live.ranks()) {
            QCOMPARE(s.state, RankLiveState::Running);
            QVERIFY(s.step > 0);
            QVERIFY(s.loss.has_value());
            QVERIFY(s.lastHeartbeat.has_value());
        }

        RankStatusTracker done;
        feedUntil(done, events, 1e12, events.constLast().time + 100.0);
        for (const RankLiveStatus& s : done.ranks()) {
            QCOMPARE(s.state, RankLiveState::Finished); // finished stays finished however late `now` is
            QCOMPARE(s.step, 12);
            QCOMPARE(s.host, QStringLiteral("node-a"));
        }
    }

    void failRecordingFailsBothRanks() {
        RankStatusTracker tracker;
        feedUntil(tracker, recording(QStringLiteral("recorded-fail")), 1e12, 1e10);
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Failed);
        QVERIFY2(tracker.rank(1)->reason.startsWith(QStringLiteral("injected")), qPrintable(tracker.rank(1)->reason));
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Failed);
        QVERIFY2(tracker.rank(0)->reason.startsWith(QStringLiteral("collective")), qPrintable(tracker.rank(0)->reason));
    }

    // Rank 1 stops after step 2 and keeps beating; rank 0 waits in collective #6 until Gloo gives up. The grid
    // has no clock of its own for "hung": the diagnosis decides, as it does for the CLI and the bridge.
    void hangFindingMakesItsCulpritHung() {
        const QVector<TrainerEvent> events = recording(QStringLiteral("recorded-hang"));
        const double beforeTimeout = 1795315910.5; // both ranks parked, rank 0's collective not yet timed out
        QVector<TrainerEvent> early;
        std::copy_if(events.begin(), events.end(), std::back_inserter(early),
                     [&](const TrainerEvent& e) { return e.time <= beforeTimeout; });

        RankStatusTracker withoutFindings;
        feedUntil(withoutFindings, early, 1e12, beforeTimeout + 60.0);
        QCOMPARE(withoutFindings.rank(1)->state, RankLiveState::Running);
        QCOMPARE(withoutFindings.rank(0)->state, RankLiveState::Running);

        RunDiagnostics diagnostics;
        diagnostics.addEvents(early);
        const QVector<Diagnosis> found = diagnostics.update(beforeTimeout);
        const auto hang = std::find_if(found.cbegin(), found.cend(),
                                       [](const Diagnosis& d) { return d.kind == DiagnosisKind::Hang; });
        QVERIFY2(hang != found.cend(), "the recording's hang is diagnosed before the timeout");
        QCOMPARE(hang->ranks, (QVector<int>{1, 0}));
        QCOMPARE(hang->culprits, 1);

        RankStatusTracker tracker;
        feedUntil(tracker, early, 1e12, beforeTimeout);
        QCOMPARE(tracker.applyDiagnoses(found), QVector<int>{1});
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Hung);
        QCOMPARE(tracker.rank(1)->reason, hang->message);
        QCOMPARE(tracker.rank(1)->diagnosisKey, hang->key);
        // The rank waiting for it keeps running, and says what it waits for.
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Running);
        QCOMPARE(tracker.rank(0)->reason, hang->message);

        // Rank 0's collective times out: failed wins over the finding it was waiting on.
        QVector<TrainerEvent> rest;
        std::copy_if(events.begin(), events.end(), std::back_inserter(rest),
                     [&](const TrainerEvent& e) { return e.time > beforeTimeout; });
        feedUntil(tracker, rest, 1e12, events.constLast().time);
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Failed);
        QVERIFY2(tracker.rank(0)->reason.startsWith(QStringLiteral("collective")), qPrintable(tracker.rank(0)->reason));

        // The finding resolved: the state and the reason it gave go.
        Diagnosis resolved = *hang;
        resolved.resolved = true;
        QCOMPARE(tracker.applyDiagnoses({resolved}), QVector<int>{1});
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Running);
        QVERIFY(tracker.rank(1)->reason.isEmpty());
        QVERIFY(tracker.rank(1)->diagnosisKey.isEmpty());
    }

    // Every rank stuck inside one collective: nobody is missing from it, so every rank is at fault.
    void hangInsideOneCollectiveMakesEveryRankHung() {
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 1), step(1, 10.0, 1), step(2, 10.0, 1)});
        Diagnosis hang{DiagnosisKind::Hang, QStringLiteral("hang:7"), {0, 1, 2}, QString(), 12.0,
                       QStringLiteral("every running rank (0-2) is stuck inside collective #7"), false, 3};
        QCOMPARE(tracker.applyDiagnoses({hang}), (QVector<int>{0, 1, 2}));
        for (int rank = 0; rank < 3; ++rank)
            QCOMPARE(tracker.rank(rank)->state, RankLiveState::Hung);
    }

    // In synchronous data parallelism every rank steps at the same rate: the straggler is what the diagnosis
    // finds (compute time against the others'), never a rate rule of the grid's own.
    void stragglerFindingMakesItsRankSlow() {
        RankStatusTracker tracker;
        const QVector<TrainerEvent> events = lockstep(4, 20);
        tracker.addEvents(events);
        for (int rank = 0; rank < 4; ++rank)
            QCOMPARE(tracker.rank(rank)->state, RankLiveState::Running);
        QVERIFY(tracker.rank(3)->stepsPerSecond.has_value());

        Diagnosis straggler{DiagnosisKind::Straggler, QStringLiteral("straggler:3"), {3}, QStringLiteral("node-b"),
                            1020.0, QStringLiteral("rank 3 on node-b computes 1.8x the median of the others"), false};
        QCOMPARE(tracker.applyDiagnoses({straggler}), QVector<int>{3});
        QCOMPARE(tracker.rank(3)->state, RankLiveState::Slow);
        QCOMPARE(tracker.rank(3)->reason, straggler.message);
        for (int rank = 0; rank < 3; ++rank) {
            QCOMPARE(tracker.rank(rank)->state, RankLiveState::Running);
            QVERIFY(tracker.rank(rank)->reason.isEmpty());
        }
        straggler.resolved = true;
        QCOMPARE(tracker.applyDiagnoses({straggler}), QVector<int>{3});
        QCOMPARE(tracker.rank(3)->state, RankLiveState::Running);
    }

    // A straggler that runs to the end is finished, and keeps the finding as its reason: the grid of an ended run
    // still says which rank the others waited for. Resolved before the end, it leaves nothing behind.
    void finishedStragglerKeepsItsFinding() {
        RankStatusTracker tracker;
        const QVector<TrainerEvent> events = lockstep(2, 5);
        tracker.addEvents(events);
        Diagnosis straggler{DiagnosisKind::Straggler,
                            QStringLiteral("straggler:1"),
                            {1},
                            QStringLiteral("node-b"),
                            1005.0,
                            QStringLiteral("rank 1 on node-b computes 3.0x the median of the others"),
                            false};
        tracker.applyDiagnoses({straggler});
        tracker.rankExited(0, 0, QStringLiteral("node-a"));
        tracker.rankExited(1, 0, QStringLiteral("node-b"));
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Finished);
        QCOMPARE(tracker.rank(1)->diagnosisKey, straggler.key);
        QCOMPARE(tracker.rank(1)->reason, straggler.message);
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Finished);
        QVERIFY(tracker.rank(0)->diagnosisKey.isEmpty());
        straggler.resolved = true;
        tracker.applyDiagnoses({straggler});
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Finished);
        QVERIFY(tracker.rank(1)->diagnosisKey.isEmpty());
        QVERIFY(tracker.rank(1)->reason.isEmpty());
    }

    // The replica the divergence finding holds apart reads diverged, running or ended: its model is not the
    // others'. A hang of that rank says what happens now, and wins while it stands; the agreeing ranks keep theirs.
    void divergedReplicaReadsDivergedToTheEnd() {
        RankStatusTracker tracker;
        const QVector<TrainerEvent> events = lockstep(3, 6);
        tracker.addEvents(events);
        const Diagnosis check{DiagnosisKind::Divergence,
                              QStringLiteral("divergence:check"),
                              {2, 0, 1},
                              QStringLiteral("node-b"),
                              1005.0,
                              QStringLiteral("replicas diverged at step 5: rank 2 on node-b (checksum 1.5) differs "
                                             "from ranks 0-1 (checksum 2.5)"),
                              false,
                              1};
        QCOMPARE(tracker.applyDiagnoses({check}), QVector<int>{2});
        QCOMPARE(tracker.rank(2)->state, RankLiveState::Diverged);
        QCOMPARE(tracker.rank(2)->reason, check.message);
        QCOMPARE(tracker.rank(2)->diagnosisKey, check.key);
        for (int rank = 0; rank < 2; ++rank) {
            QCOMPARE(tracker.rank(rank)->state, RankLiveState::Running);
            QVERIFY(tracker.rank(rank)->reason.isEmpty());
        }
        // Slow as well: the divergence is the graver verdict.
        const Diagnosis straggler{DiagnosisKind::Straggler,
                                  QStringLiteral("straggler:2"),
                                  {2},
                                  QStringLiteral("node-b"),
                                  1006.0,
                                  QStringLiteral("rank 2 on node-b computes 1.5x the median of the others"),
                                  false};
        tracker.applyDiagnoses({straggler});
        QCOMPARE(tracker.rank(2)->state, RankLiveState::Diverged);
        Diagnosis hang{DiagnosisKind::Hang,
                       QStringLiteral("hang:9"),
                       {2, 0, 1},
                       QStringLiteral("node-b"),
                       1007.0,
                       QStringLiteral("rank 2 on node-b stuck at step 6"),
                       false,
                       1};
        tracker.applyDiagnoses({hang});
        QCOMPARE(tracker.rank(2)->state, RankLiveState::Hung);
        hang.resolved = true;
        tracker.applyDiagnoses({hang});
        QCOMPARE(tracker.rank(2)->state, RankLiveState::Diverged);
        // The end's checksums say it again; the check, which says at which step, stays the reason.
        Diagnosis end = check;
        end.key = QStringLiteral("divergence:end");
        end.message = QStringLiteral("the replicas ended with different parameters: rank 2 on node-b ...");
        for (int rank = 0; rank < 3; ++rank)
            tracker.rankExited(rank, 0, QStringLiteral("node-b"));
        tracker.applyDiagnoses({end});
        QCOMPARE(tracker.rank(2)->state, RankLiveState::Diverged);
        QCOMPARE(tracker.rank(2)->reason, check.message);
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Finished);
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Finished);
        // A replica that failed is failed.
        RankStatusTracker failed;
        failed.addEvents(events);
        failed.applyDiagnoses({check});
        failed.rankExited(2, 1, QStringLiteral("node-b"));
        QCOMPARE(failed.rank(2)->state, RankLiveState::Failed);
    }

    // The checksums the ranks end with are compared once all have ended: a finished replica found apart then turns
    // diverged. Where no majority agrees, every replica is apart. A report that names no replica apart (schema
    // 1.0's replica_divergence, said by every rank alike: culprits 0) makes none diverged.
    void replicasFoundApartAtTheEndTurnDiverged() {
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 1), step(1, 10.0, 1)});
        tracker.rankExited(0, 0, QStringLiteral("node-a"));
        tracker.rankExited(1, 0, QStringLiteral("node-b"));
        const Diagnosis oldReport{DiagnosisKind::Divergence,
                                  QStringLiteral("divergence:check"),
                                  {1},
                                  QStringLiteral("node-b"),
                                  11.0,
                                  QStringLiteral("replicas diverged: rank 1 on node-b reports parameters differ"),
                                  false,
                                  0};
        QVERIFY(tracker.applyDiagnoses({oldReport}).isEmpty());
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Finished);
        const Diagnosis end{DiagnosisKind::Divergence,
                            QStringLiteral("divergence:end"),
                            {0, 1},
                            QString(),
                            12.0,
                            QStringLiteral("the replicas ended with different parameters: every rank's differs"),
                            false,
                            2};
        QCOMPARE(tracker.applyDiagnoses({end}), (QVector<int>{0, 1}));
        for (int rank = 0; rank < 2; ++rank) {
            QCOMPARE(tracker.rank(rank)->state, RankLiveState::Diverged);
            QCOMPARE(tracker.rank(rank)->reason, end.message);
        }
    }

    // The root cause's culprit reads as the finding, which says more than its exit status.
    void rootCauseGivesTheFailedRanksReason() {
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 1), step(1, 10.0, 1)});
        tracker.rankExited(1, 137, QStringLiteral("node-b"));
        tracker.rankExited(0, 1, QStringLiteral("node-a"));
        QCOMPARE(tracker.rank(1)->reason, describeExitStatus(137));
        const Diagnosis root{DiagnosisKind::RootCause, QStringLiteral("root-cause"), {1}, QStringLiteral("node-b"),
                             12.0, QStringLiteral("rank 1 on node-b failed first: killed by SIGKILL"), false};
        QVERIFY(tracker.applyDiagnoses({root}).isEmpty()); // already failed: the state stays, the reason changes
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Failed);
        QCOMPARE(tracker.rank(1)->reason, root.message);
        QCOMPARE(tracker.rank(0)->reason, describeExitStatus(1));
    }

    // Every culprit of a root cause whose ranks failed alike reads as that finding.
    void ranksThatFailedAlikeShareTheRootCause() {
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 1), step(1, 10.0, 1), step(2, 10.0, 1)});
        for (int rank = 0; rank < 3; ++rank)
            tracker.rankExited(rank, 3, QStringLiteral("node-a"));
        Diagnosis root{DiagnosisKind::RootCause,
                       QStringLiteral("root-cause"),
                       {1, 2},
                       QStringLiteral("node-a"),
                       12.0,
                       QStringLiteral("ranks 1-2 failed alike, first rank 1 on node-a: exit status 3"),
                       false};
        root.culprits = 2;
        tracker.applyDiagnoses({root});
        for (const int rank : {1, 2}) {
            QCOMPARE(tracker.rank(rank)->reason, root.message);
            QCOMPARE(tracker.rank(rank)->diagnosisKey, QStringLiteral("root-cause"));
            QCOMPARE(tracker.rank(rank)->diagnosisCulprits, 2);
        }
        QCOMPARE(tracker.rank(0)->reason, describeExitStatus(3)); // in the list, but not among the culprits
        QVERIFY(tracker.rank(0)->diagnosisKey.isEmpty());
    }

    // The job's name for a rank's node wins over the machine's host name in the rank's start event; a rank the
    // job does not place keeps the one it reported.
    void hostsAreTheJobsNodes() {
        const auto start = [](int rank) {
            return decoded(QStringLiteral(R"({"v":"1.0","type":"start","rank":%1,"time":10,"world_size":3,)"
                                          R"("local_rank":%1,"local_world_size":3,"host":"vm","pid":7,)"
                                          R"("backend":"gloo","device":"cpu","torch_version":"1.13",)"
                                          R"("steps_per_epoch":10,"total_steps":10,"config":{}})")
                               .arg(rank)
                               .toUtf8()
                               .constData());
        };
        RankStatusTracker tracker;
        tracker.addEvents({start(0)});
        QCOMPARE(tracker.rank(0)->host, QStringLiteral("vm"));
        tracker.setRankHosts({{0, QStringLiteral("localhost")}, {1, QStringLiteral("gpu-b")}});
        QCOMPARE(tracker.rank(0)->host, QStringLiteral("localhost")); // already there
        tracker.addEvents({start(1), start(2)});
        QCOMPARE(tracker.rank(1)->host, QStringLiteral("gpu-b"));
        QCOMPARE(tracker.rank(2)->host, QStringLiteral("vm"));
        tracker.rankExited(1, 0, QStringLiteral("gpu-b"));
        QCOMPARE(tracker.rank(1)->host, QStringLiteral("gpu-b"));
        tracker.clear();
        tracker.addEvents({start(1)});
        QCOMPARE(tracker.rank(1)->host, QStringLiteral("vm")); // a new run's hosts are its own
    }

    void exitsDecideTheEnd_data() {
        QTest::addColumn<int>("status");
        QTest::addColumn<int>("expected");
        QTest::addColumn<QString>("reason");
        QTest::newRow("exit 0") << 0 << int(RankLiveState::Finished) << QString();
        QTest::newRow("exit 1") << 1 << int(RankLiveState::Failed) << describeExitStatus(1);
        QTest::newRow("SIGKILL") << 137 << int(RankLiveState::Failed) << describeExitStatus(137);
        QTest::newRow("lost") << kLostExitStatus << int(RankLiveState::Lost) << describeExitStatus(kLostExitStatus);
    }

    void exitsDecideTheEnd() {
        QFETCH(int, status);
        QFETCH(int, expected);
        QFETCH(QString, reason);
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 1)});
        tracker.rankExited(0, status, QStringLiteral("node-b"));
        QCOMPARE(int(tracker.rank(0)->state), expected);
        QCOMPARE(tracker.rank(0)->reason, reason);
        QCOMPARE(tracker.rank(0)->host, QStringLiteral("node-b"));
        QCOMPARE(*tracker.rank(0)->exitStatus, status);
    }

    // Ended by the teardown (the user's stop): no failure. The hung rank stays hung, the one that waited for it
    // shows stopped with its exit, and an earlier failure is not hidden by the stop that followed it.
    void teardownExitsAreStoppedNotFailed() {
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 4), step(1, 10.0, 4), step(2, 10.0, 4)});
        const Diagnosis hang{DiagnosisKind::Hang,
                             QStringLiteral("hang:9"),
                             {1, 0},
                             QStringLiteral("node-b"),
                             12.0,
                             QStringLiteral("rank 1 on node-b stuck at step 4"),
                             false,
                             1};
        tracker.applyDiagnoses({hang});
        QCOMPARE(tracker.rank(0)->reason, hang.message); // waiting for rank 1
        tracker.rankExited(2, 1, QStringLiteral("node-c"));
        tracker.rankExited(0, 143, QStringLiteral("node-a"), true);
        tracker.rankExited(1, 143, QStringLiteral("node-b"), true);
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Stopped);
        QCOMPARE(tracker.rank(0)->reason, QStringLiteral("stopped by the teardown: killed by SIGTERM"));
        QVERIFY(tracker.rank(0)->diagnosisKey.isEmpty());
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Hung);
        QCOMPARE(tracker.rank(1)->reason, hang.message);
        QCOMPARE(tracker.rank(2)->state, RankLiveState::Failed);
        QCOMPARE(tracker.rank(2)->reason, describeExitStatus(1));
        // Once the hang is resolved the hung rank shows how it ended: by the teardown. Stopped is terminal.
        Diagnosis resolved = hang;
        resolved.resolved = true;
        tracker.applyDiagnoses({resolved});
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Stopped);
        tracker.addEvents({step(0, 20.0, 5)});
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Stopped);
    }

    // A rank whose collective failed because the teardown had ended its peer: the engine marks its exit as the
    // teardown's, and it reads stopped, with what it said, not failed (as the run store has it).
    void anErrorOnTheWayOutOfATeardownIsStopped() {
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 4), step(1, 10.0, 4)});
        tracker.addEvents(
            {decoded(R"({"v":"1.0","type":"error","rank":0,"time":11,"kind":"collective",)"
                     R"("message":"gradient all-reduce failed: Connection closed by peer","fatal":true})")});
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Failed);
        tracker.rankExited(1, 143, QStringLiteral("node-b"), true);
        tracker.rankExited(0, 1, QStringLiteral("node-a"), true);
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Stopped);
        QCOMPARE(tracker.rank(0)->reason, QStringLiteral("stopped by the teardown: collective: gradient all-reduce "
                                                         "failed: Connection closed by peer"));
        // Not so when its exit is its own (not the teardown's): then the error is its failure.
        RankStatusTracker own;
        own.addEvents({step(0, 10.0, 4)});
        own.addEvents({decoded(R"({"v":"1.0","type":"error","rank":0,"time":11,"kind":"collective",)"
                               R"("message":"gradient all-reduce failed","fatal":true})")});
        own.rankExited(0, 1, QStringLiteral("node-a"));
        QCOMPARE(own.rank(0)->state, RankLiveState::Failed);
    }

    // The engine judges an end again when it learns more (RunEngine::rankExitJudged: the culprit's exit read after
    // its peers'): the state follows the newest judgement, either way, with what the rank said.
    void anEndJudgedAgainFollowsTheJudgement() {
        const QString collective = QStringLiteral("collective: gradient all-reduce failed: Connection reset by peer");
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 4), step(1, 10.0, 4)});
        tracker.addEvents({decoded(R"({"v":"1.0","type":"error","rank":0,"time":11,"kind":"collective",)"
                                   R"("message":"gradient all-reduce failed: Connection reset by peer","fatal":true})"),
                           decoded(R"({"v":"1.0","type":"error","rank":1,"time":11,"kind":"terminated",)"
                                   R"("message":"SIGTERM received at step 5 in phase backward","fatal":true})")});
        tracker.rankExited(0, 1, QStringLiteral("node-a"));
        tracker.rankExited(1, 143, QStringLiteral("node-b"));
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Failed);
        QCOMPARE(tracker.rank(0)->reason, collective);
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Failed); // a SIGTERM not the teardown's
        tracker.rankExited(0, 1, QStringLiteral("node-a"), true);
        tracker.rankExited(1, 143, QStringLiteral("node-b"), true);
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Stopped);
        QCOMPARE(tracker.rank(0)->reason, QStringLiteral("stopped by the teardown: ") + collective);
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Stopped);
        QCOMPARE(tracker.rank(1)->reason,
                 QStringLiteral("stopped by the teardown: terminated: SIGTERM received at step 5 in phase backward"));
        tracker.rankExited(0, 1, QStringLiteral("node-a"), false); // its own error came first after all
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Failed);
        QCOMPARE(tracker.rank(0)->reason, collective);
    }

    // A rank's last error event may be read after its exit (the node's exits are read first in each pass): a rank
    // the teardown ended stays stopped, with what it said, and one that failed takes its words as the reason.
    void anErrorReadAfterTheExitChangesNoVerdict() {
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 4), step(1, 10.0, 4)});
        tracker.rankExited(0, 1, QStringLiteral("node-a"), true);
        tracker.rankExited(1, 1, QStringLiteral("node-b"));
        QCOMPARE(tracker.rank(1)->reason, describeExitStatus(1));
        tracker.addEvents({decoded(R"({"v":"1.0","type":"error","rank":0,"time":11,"kind":"collective",)"
                                   R"("message":"gradient all-reduce failed","fatal":true})"),
                           decoded(R"({"v":"1.0","type":"error","rank":1,"time":11,"kind":"injected",)"
                                   R"("message":"injected failure at step 5","fatal":true})")});
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Stopped);
        QCOMPARE(tracker.rank(0)->reason,
                 QStringLiteral("stopped by the teardown: collective: gradient all-reduce failed"));
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Failed);
        QCOMPARE(tracker.rank(1)->reason, QStringLiteral("injected: injected failure at step 5"));
    }

    // What the trainer says when it is sent SIGTERM (a "terminated" error, then an end with status error) waits
    // for its exit: the teardown's makes it stopped, with its words; anyone else's SIGTERM is a failure.
    void terminatedRankWaitsForItsExit() {
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 4), step(1, 10.0, 4)});
        const QString said = QStringLiteral("terminated: SIGTERM received at step 5 in phase backward");
        for (int rank = 0; rank < 2; ++rank)
            tracker.addEvents(
                {decoded(QStringLiteral(R"({"v":"1.0","type":"error","rank":%1,"time":11,"kind":"terminated",)"
                                        R"("message":"SIGTERM received at step 5 in phase backward","fatal":true})")
                             .arg(rank)
                             .toUtf8()
                             .constData()),
                 decoded(
                     QStringLiteral(
                         R"({"v":"1.0","type":"end","rank":%1,"time":11.1,"status":"error","steps":4,"images_per_sec":700,"wall_s":1.5,"param_checksum":"nan"})")
                         .arg(rank)
                         .toUtf8()
                         .constData())});
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Running);
        tracker.rankExited(0, 143, QStringLiteral("node-a"), true);
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Stopped);
        QCOMPARE(tracker.rank(0)->reason, QStringLiteral("stopped by the teardown: ") + said);
        tracker.rankExited(1, 143, QStringLiteral("node-a"));
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Failed);
        QCOMPARE(tracker.rank(1)->reason, said);
    }

    // The first cause is kept: an error event followed by a kill still reads as the error.
    void firstFailureWins() {
        RankStatusTracker tracker;
        tracker.addEvents(
            {decoded(R"({"v":"1.0","type":"error","rank":2,"time":5,"kind":"data","message":"no file"})")});
        tracker.rankExited(2, 137);
        QCOMPARE(tracker.rank(2)->state, RankLiveState::Failed);
        QCOMPARE(tracker.rank(2)->reason, QStringLiteral("data: no file"));
    }

    // A job that names no host for a rank leaves the one its start event gave; an exit naming another host does
    // not replace it either.
    void aRanksHostIsNotBlankedOrReplaced() {
        RankStatusTracker tracker;
        tracker.addEvents({decoded(R"({"v":"1.0","type":"start","rank":0,"time":10,"world_size":1,"local_rank":0,)"
                                   R"("local_world_size":1,"host":"vm","pid":7,"backend":"gloo","device":"cpu",)"
                                   R"("torch_version":"1.13","steps_per_epoch":10,"total_steps":10,"config":{}})")});
        tracker.setRankHosts({{0, QString()}});
        QCOMPARE(tracker.rank(0)->host, QStringLiteral("vm"));
        tracker.rankExited(0, 0, QStringLiteral("other-node"));
        QCOMPARE(tracker.rank(0)->host, QStringLiteral("vm"));
    }

    // A rank's words: a non-fatal error (a corrupt checkpoint skipped) fails nothing; of two fatal errors the first
    // is the reason, and of two "terminated" the first signal.
    void aRanksFirstFatalWordsAreItsReason() {
        RankStatusTracker tracker;
        tracker.addEvents(
            {step(0, 10.0, 4), decoded(R"({"v":"1.0","type":"error","rank":0,"time":11,"kind":"checkpoint",)"
                                       R"("message":"corrupt checkpoint skipped","fatal":false})")});
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Running);
        QVERIFY(tracker.rank(0)->reason.isEmpty());
        tracker.addEvents(
            {decoded(R"({"v":"1.0","type":"error","rank":0,"time":12,"kind":"data","message":"no file"})"),
             decoded(R"({"v":"1.0","type":"error","rank":0,"time":13,"kind":"internal","message":"later"})")});
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Failed);
        QCOMPARE(tracker.rank(0)->reason, QStringLiteral("data: no file"));

        RankStatusTracker told;
        told.addEvents({step(1, 10.0, 4),
                        decoded(R"({"v":"1.0","type":"error","rank":1,"time":11,"kind":"terminated",)"
                                R"("message":"SIGTERM received at step 5","fatal":true})"),
                        decoded(R"({"v":"1.0","type":"error","rank":1,"time":12,"kind":"terminated",)"
                                R"("message":"SIGINT received at step 5","fatal":true})")});
        told.rankExited(1, 143, QStringLiteral("node-b"));
        QCOMPARE(told.rank(1)->state, RankLiveState::Failed);
        QCOMPARE(told.rank(1)->reason, QStringLiteral("terminated: SIGTERM received at step 5"));
    }

    // The rate is over the window up to now: it falls while a rank stalls, and a gap longer than the window still
    // leaves the last three steps to measure it by.
    void theRateIsMeasuredUpToNow() {
        RankStatusTracker tracker;
        tracker.addEvents(lockstep(1, 5)); // steps 1-5 at 1001-1005
        tracker.update(1005.0);
        QCOMPARE(*tracker.rank(0)->stepsPerSecond, 1.0);
        tracker.update(1009.0);
        QCOMPARE(*tracker.rank(0)->stepsPerSecond, 0.5); // 4 steps in 8 s
        tracker.addEvents({step(0, 1100.0, 6)});
        tracker.update(1100.0);
        QVERIFY(tracker.rank(0)->stepsPerSecond.has_value());
        QCOMPARE(*tracker.rank(0)->stepsPerSecond, 2.0 / 96.0); // steps 4-6, the window's minimum of three
    }

    // A node that stopped answering is lost, even where the teardown ended the run around it; what failed before
    // keeps its reason. A rank that had finished stays finished when the teardown's exit comes.
    void lostAndFinishedAreNotUndoneByTheTeardown() {
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 4), step(1, 10.0, 4), step(2, 10.0, 4)});
        tracker.rankExited(0, kLostExitStatus, QStringLiteral("node-a"), true);
        QCOMPARE(tracker.rank(0)->state, RankLiveState::Lost);
        QCOMPARE(tracker.rank(0)->reason, describeExitStatus(kLostExitStatus));
        tracker.addEvents(
            {decoded(R"({"v":"1.0","type":"error","rank":1,"time":11,"kind":"data","message":"no file"})")});
        tracker.rankExited(1, kLostExitStatus, QStringLiteral("node-b"));
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Failed);
        QCOMPARE(tracker.rank(1)->reason, QStringLiteral("data: no file"));
        tracker.addEvents({decoded(R"({"v":"1.0","type":"end","rank":2,"time":12,"status":"ok","steps":4,)"
                                   R"("images_per_sec":700,"wall_s":1.5,"param_checksum":1.5})")});
        tracker.rankExited(2, 143, QStringLiteral("node-c"), true);
        QCOMPARE(tracker.rank(2)->state, RankLiveState::Finished);
        QCOMPARE(tracker.rank(2)->ending, RankEnding::Finished);
        QVERIFY2(tracker.rank(2)->reason.isEmpty(), qPrintable(tracker.rank(2)->reason));
    }

    // A hung rank the teardown then ends stays hung, but how it ended is kept (its tile reads "hung, stopped").
    void anEndingThatChangesAloneIsKept() {
        RankStatusTracker tracker;
        tracker.addEvents({step(0, 10.0, 4), step(1, 10.0, 4)});
        tracker.applyDiagnoses({Diagnosis{DiagnosisKind::Hang,
                                          QStringLiteral("hang:9"),
                                          {1, 0},
                                          QString(),
                                          12.0,
                                          QStringLiteral("rank 1 stuck at step 4"),
                                          false,
                                          1}});
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Hung);
        tracker.rankExited(1, 143, QStringLiteral("node-b"), true);
        QCOMPARE(tracker.rank(1)->state, RankLiveState::Hung);
        QCOMPARE(tracker.rank(1)->ending, RankEnding::Stopped);
    }

    void stateNames() {
        QCOMPARE(rankLiveStateName(RankLiveState::Hung), QStringLiteral("hung"));
        QCOMPARE(rankLiveStateName(RankLiveState::Lost), QStringLiteral("lost"));
        QCOMPARE(rankLiveStateName(RankLiveState::Stopped), QStringLiteral("stopped"));
        QCOMPARE(rankLiveStateName(RankLiveState::Diverged), QStringLiteral("diverged"));
    }
};

QTEST_GUILESS_MAIN(TestRankStatus)
#include "tst_rankstatus.moc"
