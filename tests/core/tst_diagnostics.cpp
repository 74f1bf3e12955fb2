// SPDX-License-Identifier: MIT
// Live diagnosis on event streams recorded from real trainer runs (tests/data/events: a 2-rank run where
// rank 1 hangs at step 3 with --hang-at-step, heartbeats every 0.5 s), replayed in time order as the engine
// would deliver them, and on synthetic streams for what a recording cannot pin down.
#include "core/diagnostics.h"
#include "core/eventstreamparser.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>
#include <QTimeZone>

#include <algorithm>
#include <limits>

using namespace rankscope;

namespace {

QVector<TrainerEvent> recorded(const QString& name) {
    QVector<TrainerEvent> all;
    for (int rank = 0; rank < 2; ++rank) {
        QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/events/recorded-%1-rank%2.out").arg(name).arg(rank));
        if (!file.open(QIODevice::ReadOnly))
            qFatal("cannot read %s", qPrintable(file.fileName()));
        EventStreamParser parser;
        all += parser.feed(file.readAll()).events;
        all += parser.finish().events;
    }
    std::stable_sort(all.begin(), all.end(), [](const TrainerEvent& a, const TrainerEvent& b) { return a.time < b.time; });
    return all;
}

TrainerEvent decoded(const QByteArray& json) {
    const TrainerEventResult result = decodeTrainerEvent(json);
    if (!result.ok())
        qFatal("bad event %s: %s", json.constData(), qPrintable(result.error));
    return *result.event;
}

TrainerEvent heartbeat(int rank, double time, qint64 step, const char* phase, qint64 started, qint64 finished) {
    return decoded(QStringLiteral(R"({"v":"1.0","type":"heartbeat","rank":%1,"time":%2,"phase":"%3","step":%4,)"
                                R"("collective_started":%5,"collective_finished":%6})")
                     .arg(rank)
                     .arg(time, 0, 'f', 3)
                     .arg(QLatin1String(phase))
                     .arg(step)
                     .arg(started)
                     .arg(finished)
                     .toUtf8());
}

TrainerEvent step(int rank, double time, qint64 step, double stepMs, double waitMs) {
    return decoded(QStringLiteral(R"({"v":"1.0","type":"step","rank":%1,"time":%2,"epoch":1,"step":%3,"loss":1.0,)"
                                R"("lr":0.001,"images_per_sec":100,"step_ms":%4,"data_ms":1,"forward_ms":1,)"
                                R"("backward_ms":1,"comm_wait_ms":%5,"optimizer_ms":1})")
                     .arg(rank)
                     .arg(time, 0, 'f', 3)
                     .arg(step)
                     .arg(stepMs)
                     .arg(waitMs)
                     .toUtf8());
}

// Feeds events in time order, evaluating every 50 ms as a live view would; returns the diagnoses of `kind`
// and the time each was first reported.
// Ranks 0-2 inside collective #12 at step 7 for 8 s, beating every second: none moves, none is missing. Each
// has finished step 7 before: the run is past its set-up.
QVector<TrainerEvent> threeRanksInsideCollective12() {
    QVector<TrainerEvent> events;
    for (int rank = 0; rank < 3; ++rank)
        events << step(rank, 1999.5, 7, 100.0, 10.0);
    for (int i = 0; i < 8; ++i)
        for (int rank = 0; rank < 3; ++rank)
            events << heartbeat(rank, 2000.0 + i, 7, "backward", 12, 11);
    return events;
}

QVector<Diagnosis> replay(RunDiagnostics& diagnostics, const QVector<TrainerEvent>& events, DiagnosisKind kind,
                          double until = 0.0) {
    QVector<Diagnosis> found;
    const double end = std::max(until, events.back().time);
    qsizetype next = 0;
    // Each tick's time from its index: a sum of 0.05 s steps drifts, and the last tick could miss the last events.
    for (qint64 tick = 0; events.front().time + tick * 0.05 <= end + 1e-9; ++tick) {
        const double now = events.front().time + tick * 0.05;
        QVector<TrainerEvent> batch;
        while (next < events.size() && events[next].time <= now)
            batch.append(events[next++]);
        diagnostics.addEvents(batch);
        for (const Diagnosis& d : diagnostics.update(now))
            if (d.kind == kind)
                found.append(d);
    }
    return found;
}

// Ranks 0 to `ranks` - 1 finished step 29 at 1999.5: the run is past its set-up.
QVector<TrainerEvent> stepDone(int ranks) {
    QVector<TrainerEvent> events;
    for (int rank = 0; rank < ranks; ++rank)
        events << step(rank, 1999.5, 29, 100.0, 10.0);
    return events;
}

// Ranks 0-2 at step 30 for 8 s: rank 0 inside collective #92, rank 2 inside #93, rank 1 started #91 and finished
// `rank1Finished` of them (91: it is in no collective). The first hang reported.
Diagnosis firstHangOfThree(qint64 rank1Finished) {
    QVector<TrainerEvent> events = stepDone(3);
    for (int i = 0; i < 8; ++i) {
        events << heartbeat(0, 2000.0 + i, 29, "forward", 92, 91);
        events << heartbeat(1, 2000.0 + i, 29, "forward", 91, rank1Finished);
        events << heartbeat(2, 2000.0 + i, 29, "forward", 93, 92);
    }
    RunDiagnostics diagnostics;
    const QVector<Diagnosis> hangs = replay(diagnostics, events, DiagnosisKind::Hang);
    return hangs.isEmpty() ? Diagnosis{} : hangs.front();
}

// What PyTorch's NCCL watchdog printed on `rank`'s stderr (the line of a real log, its rank changed), as the
// watchdog parser reads it.
CollectiveTimeout ncclWatchdogTimeout(int rank, qint64 seq) {
    WatchdogLogParser parser;
    parser.feed(QStringLiteral("[rank%1]:[E318 07:39:53.792630246 ProcessGroupNCCL.cpp:616] [Rank %1] Watchdog caught "
                               "collective operation timeout: WorkNCCL(SeqNum=%2, OpType=ALLREDUCE, NumelIn=56320, "
                               "NumelOut=56320, Timeout(ms)=600000) ran for 600086 milliseconds before timing out.\n")
                    .arg(rank)
                    .arg(seq)
                    .toUtf8());
    parser.finish();
    return parser.timeoutsRead().value(0);
}

// Rank 0 of the run failed first, aborted (as NCCL's watchdog ends a rank): the root cause the diagnostics then
// give, empty when they give none.
QString rootCauseOfAnAbortedRank0(RunDiagnostics& diagnostics) {
    RunRecord record;
    record.state = QStringLiteral("failed");
    record.firstFailedRank = 0;
    record.summary = QStringLiteral("rank 0 on node-a failed first: killed by SIGABRT");
    record.exits.insert(0, RankExit{128 + 6, {}});
    diagnostics.runEnded(record);
    const QVector<Diagnosis> ended = diagnostics.update(2002.0);
    return ended.size() == 1 && ended.front().kind == DiagnosisKind::RootCause ? ended.front().message : QString();
}

const QDateTime kRunCreated(QDate(2026, 11, 22), QTime(11, 16, 0), QTimeZone::utc());
const QDateTime kRankDied(QDate(2026, 11, 22), QTime(11, 17, 10, 500), QTimeZone::utc());

// A kernel log line as `dmesg --time-format iso` prints it, `secondsBeforeDeath` before rank 1 died.
QByteArray isoLine(double secondsBeforeDeath, const QByteArray& message) {
    const QDateTime at = kRankDied.addMSecs(-qRound64(secondsBeforeDeath * 1000));
    return at.toString(QStringLiteral("yyyy-MM-ddTHH:mm:ss,zzz000+00:00 ")).toUtf8() + message + '\n';
}

QByteArray oomKill(double secondsBeforeDeath, qint64 pid, const QByteArray& command) {
    const QByteArray p = QByteArray::number(pid);
    return isoLine(secondsBeforeDeath + 0.001, "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
                                               "mems_allowed=0,oom_memcg=/a/rs-oom,task_memcg=/a/rs-oom,task=" +
                                                   command + ",pid=" + p + ",uid=0") +
           isoLine(secondsBeforeDeath, "Memory cgroup out of memory: Killed process " + p + " (" + command +
                                           ") total-vm:3215000kB, anon-rss:2101000kB, file-rss:2468kB, "
                                           "shmem-rss:0kB, UID:0 pgtables:192kB oom_score_adj:0");
}

TrainerEvent started(int rank, qint64 pid) {
    return decoded(QStringLiteral(R"({"v":"1.0","type":"start","rank":%1,"time":1795000000,"world_size":2,)"
                                  R"("local_rank":%1,"local_world_size":2,"host":"gpu-b","pid":%2,"backend":"gloo",)"
                                  R"("device":"cpu","torch_version":"1.13","steps_per_epoch":10,"total_steps":10,)"
                                  R"("config":{}})")
                       .arg(rank)
                       .arg(pid)
                       .toUtf8());
}

// Ranks 0 and 1 beating every 0.5 s from 1998.0 to 1999.5, moving at each beat, and past step 7 at 1999.9.
QVector<TrainerEvent> twoRanksPastStep7() {
    QVector<TrainerEvent> events;
    for (int i = 0; i < 4; ++i)
        for (int rank = 0; rank < 2; ++rank)
            events << heartbeat(rank, 1998.0 + 0.5 * i, 4 + i, "optimizer", 8 + i, 8 + i);
    for (int rank = 0; rank < 2; ++rank)
        events << step(rank, 1999.9, 7, 100.0, 10.0);
    return events;
}

// Ranks 0 and 1 past step 7, beating every 0.5 s; from 2000.0 rank 0 is inside collective #12 (backward) and beats
// on to 2008.0, while rank 1, in `rank1Collective` (12: inside it too; 11: in its own code), beats only at the times
// of `rank1Beats` (a process stopped: its heartbeat thread stops with it), and finishes step 8 at `rank1Step8`
// (never: 0). Rank 1 started as pid 4242 on gpu-b.
QVector<Diagnosis> hangsWhileRank1Beats(const QVector<double>& rank1Beats, qint64 rank1Collective = 12,
                                        double rank1KnownUntil = std::numeric_limits<double>::infinity(),
                                        double rank1Step8 = 0.0) {
    QVector<TrainerEvent> events = twoRanksPastStep7();
    for (int i = 0; i <= 16; ++i)
        events << heartbeat(0, 2000.0 + 0.5 * i, 7, "backward", 12, 11);
    for (const double time : rank1Beats)
        events << heartbeat(1, time, 7, rank1Collective == 12 ? "backward" : "forward", rank1Collective, 11);
    if (rank1Step8 > 0.0)
        events << step(1, rank1Step8, 8, 100.0, 10.0);
    std::stable_sort(events.begin(), events.end(),
                     [](const TrainerEvent& a, const TrainerEvent& b) { return a.time < b.time; });
    RunDiagnostics diagnostics;
    diagnostics.addEvents({started(1, 4242)});
    diagnostics.setRankKnownUntil(1, rank1KnownUntil);
    return replay(diagnostics, events, DiagnosisKind::Hang);
}

} // namespace

class tst_Diagnostics final : public QObject {
    Q_OBJECT

private slots:
    // The recorded hang: rank 1 stops before collective #6, rank 0 waits in it. The diagnosis names rank 1,
    // its step, phase and last collective, and the waiting rank, within two heartbeat intervals of the moment
    // rank 0's heartbeat first shows it waiting.
    void recordedHangNamesTheHungRank() {
        const QVector<TrainerEvent> events = recorded(QStringLiteral("hang"));
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{0, "node-a"}, {1, "node-a"}});
        // Only until rank 0 gives up (its collective times out): the hang, not its consequence.
        QVector<TrainerEvent> beforeTimeout;
        for (const TrainerEvent& e : events)
            if (e.type != TrainerEventType::Error && e.type != TrainerEventType::End)
                beforeTimeout.append(e);
        const QVector<Diagnosis> hangs = replay(diagnostics, beforeTimeout, DiagnosisKind::Hang);
        QVERIFY(!hangs.isEmpty());
        const Diagnosis& hang = hangs.front();
        QCOMPARE(hang.ranks.front(), 1);
        QCOMPARE(hang.host, QStringLiteral("node-a"));
        QVERIFY2(
            hang.message.startsWith(QLatin1String("rank 1 on node-a stuck at step 3 in phase forward (collective #5)")),
            qPrintable(hang.message));
        QVERIFY2(hang.message.endsWith(QLatin1String("; rank 0 waiting in collective #6")), qPrintable(hang.message));
        QCOMPARE(diagnostics.heartbeatSeconds(), 0.5);

        double waitingSince = 0.0;
        for (const TrainerEvent& e : events)
            if (e.rank == 0 && e.type == TrainerEventType::Heartbeat && e.integer("collective_started") == 6) {
                waitingSince = e.time;
                break;
            }
        QVERIFY(waitingSince > 0.0);
        QVERIFY2(hang.time - waitingSince <= 2 * diagnostics.heartbeatSeconds() + 0.05,
                 qPrintable(QStringLiteral("hang reported %1 s after rank 0 was seen waiting").arg(hang.time - waitingSince)));
    }

    // A clean recorded run: no hang, no straggler, no divergence, ever.
    void recordedCleanRunHasNoFinding() {
        RunDiagnostics diagnostics;
        QVector<Diagnosis> all;
        for (const DiagnosisKind kind : {DiagnosisKind::Hang, DiagnosisKind::Straggler, DiagnosisKind::Divergence}) {
            RunDiagnostics fresh;
            all += replay(fresh, recorded(QStringLiteral("ok")), kind);
        }
        for (const Diagnosis& d : all)
            qWarning("unexpected: %s", qPrintable(d.toString()));
        QVERIFY(all.isEmpty());
    }

    // A rank that computes 1.5x as long as the others is a straggler; its peers, who wait longer, are not.
    void stragglerIsTheRankThatComputesLonger() {
        QVector<TrainerEvent> events;
        for (int s = 1; s <= 30; ++s) {
            const double t = 1000.0 + s * 0.3;
            events << step(0, t, s, 300, 100) << step(1, t, s, 300, 100) << step(2, t, s, 300, 0); // 200, 200, 300
        }
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> found = replay(diagnostics, events, DiagnosisKind::Straggler);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().ranks, QVector<int>{2});
        QVERIFY2(found.front().message.contains(QLatin1String("1.50x")), qPrintable(found.front().message));
    }

    // Only the rank the others wait for is a straggler: rank 1 on a busy core computes 1.3x the median, but
    // rank 3 computes 2x and holds everyone up. A rank slow in a few steps only is not flagged either.
    void stragglerIsTheSlowestSustainedRank() {
        QVector<TrainerEvent> events;
        for (int s = 1; s <= 30; ++s) {
            const double t = 1000.0 + s * 0.5;
            const double spiky = s % 3 == 0 ? 400 : 200; // rank 2: median 200, a third of its steps at 400
            events << step(0, t, s, 500, 300) << step(1, t, s, 500, 240) << step(2, t, s, 500, 500 - spiky)
                   << step(3, t, s, 500, 100);
        }
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> found = replay(diagnostics, events, DiagnosisKind::Straggler);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().ranks, QVector<int>{3});
        QVERIFY2(found.front().message.contains(QLatin1String("2.00x")), qPrintable(found.front().message));

        // Without rank 3, rank 1 is the slowest and holds the others up: then it is the straggler.
        QVector<TrainerEvent> withoutThree;
        std::copy_if(events.cbegin(), events.cend(), std::back_inserter(withoutThree),
                     [](const TrainerEvent& e) { return e.rank != 3; });
        RunDiagnostics again;
        const QVector<Diagnosis> alone = replay(again, withoutThree, DiagnosisKind::Straggler);
        QCOMPARE(alone.size(), 1);
        QCOMPARE(alone.front().ranks, QVector<int>{1});
    }

    // Below the factor, or before the window is full, nothing is flagged; catching up resolves it.
    void stragglerNeedsASustainedWindowAndResolves() {
        QVector<TrainerEvent> events;
        for (int s = 1; s <= 15; ++s)
            events << step(0, 1000.0 + s, s, 300, 100) << step(1, 1000.0 + s, s, 300, 0);
        RunDiagnostics diagnostics;
        QVERIFY(replay(diagnostics, events, DiagnosisKind::Straggler).isEmpty()); // 15 < 20 steps
        QVector<TrainerEvent> more;
        for (int s = 16; s <= 25; ++s)
            more << step(0, 1000.0 + s, s, 300, 100) << step(1, 1000.0 + s, s, 300, 0);
        QCOMPARE(replay(diagnostics, more, DiagnosisKind::Straggler).size(), 1);
        QVector<TrainerEvent> caughtUp;
        for (int s = 26; s <= 50; ++s)
            caughtUp << step(0, 1000.0 + s, s, 300, 100) << step(1, 1000.0 + s, s, 300, 100);
        const QVector<Diagnosis> after = replay(diagnostics, caughtUp, DiagnosisKind::Straggler);
        QCOMPARE(after.size(), 1);
        QVERIFY(after.front().resolved);
        RunDiagnostics mild;
        QVector<TrainerEvent> close;
        for (int s = 1; s <= 30; ++s)
            close << step(0, 1000.0 + s, s, 300, 100) << step(1, 1000.0 + s, s, 300, 80); // 1.1x
        QVERIFY(replay(mild, close, DiagnosisKind::Straggler).isEmpty());
    }

    // However long its steps take, a rank's window needs its 20 steps: a rank computing twice as long as the other,
    // in steps of a second each, is flagged at its 20th step (20 s), not at its 5th (5 s, the window's span).
    void aStragglerWindowNeedsItsStepsHoweverLongTheyTake() {
        QVector<TrainerEvent> events;
        for (int s = 1; s <= 25; ++s)
            events << step(0, 1000.0 + s, s, 1000, 500) << step(1, 1000.0 + s, s, 1000, 0); // 500 vs 1000 ms
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> found = replay(diagnostics, events, DiagnosisKind::Straggler);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().ranks, QVector<int>{1});
        QVERIFY2(found.front().time >= 1020.0 && found.front().time < 1020.1,
                 qPrintable(QString::number(found.front().time, 'f', 2)));
        QVERIFY2(found.front().message.contains(QLatin1String("2.00x")) &&
                     found.front().message.contains(QLatin1String("over its last 20 steps, 20.0 s")),
                 qPrintable(found.front().message));
    }

    // Sustained means three quarters of the window: a rank twice as slow in 60 % of its steps has a median above
    // the factor but is as fast as the others in the rest, and is not flagged; slow in 80 % of them, it is.
    void aStragglerIsSlowInThreeQuartersOfItsWindow() {
        const auto slowIn = [](int slowOfFive) {
            QVector<TrainerEvent> events;
            for (int s = 1; s <= 40; ++s) {
                const double t = 1000.0 + s * 0.5;
                const double computeMs = s % 5 < slowOfFive ? 400 : 200;
                events << step(0, t, s, 500, 300) << step(1, t, s, 500, 300) << step(2, t, s, 500, 500 - computeMs);
            }
            return events;
        };
        RunDiagnostics sometimes;
        const QVector<Diagnosis> none = replay(sometimes, slowIn(3), DiagnosisKind::Straggler);
        for (const Diagnosis& d : none)
            qWarning("unexpected: %s", qPrintable(d.toString()));
        QVERIFY(none.isEmpty());
        RunDiagnostics mostly;
        const QVector<Diagnosis> found = replay(mostly, slowIn(4), DiagnosisKind::Straggler);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().ranks, QVector<int>{2});
        QVERIFY2(found.front().message.contains(QLatin1String("2.00x")), qPrintable(found.front().message));
    }

    // Each rank is measured against the others, itself left out. Of compute times 100, 152 and 160 ms, rank 2 is
    // 1.27x the median of 100 and 152; rank 1 is 1.17x that of 100 and 160, under the factor, though 1.2x the
    // median of 100 and its own 152.
    void aRankIsMeasuredAgainstTheOthersOnly() {
        QVector<TrainerEvent> events;
        for (int s = 1; s <= 30; ++s) {
            const double t = 1000.0 + s * 0.2;
            events << step(0, t, s, 200, 100) << step(1, t, s, 200, 48) << step(2, t, s, 200, 40);
        }
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> found = replay(diagnostics, events, DiagnosisKind::Straggler);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().ranks, QVector<int>{2});
        QVERIFY2(found.front().message.contains(QLatin1String("1.27x as long as the median of the others (160 ms vs "
                                                              "126 ms")),
                 qPrintable(found.front().message));
    }

    // A rank with a full window and none to compare it with (the others' first steps still to come, or fewer than
    // a window of them) is no straggler, however slow.
    void aFullWindowAloneIsComparedWithNoOne() {
        QVector<TrainerEvent> events;
        for (int s = 1; s <= 30; ++s)
            events << step(0, 1000.0 + s * 0.3, s, 300, 0);
        for (int s = 1; s <= 5; ++s)
            events << step(1, 1000.0 + s * 0.3, s, 300, 200);
        std::stable_sort(events.begin(), events.end(),
                         [](const TrainerEvent& a, const TrainerEvent& b) { return a.time < b.time; });
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> found = replay(diagnostics, events, DiagnosisKind::Straggler);
        for (const Diagnosis& d : found)
            qWarning("unexpected: %s", qPrintable(d.toString()));
        QVERIFY(found.isEmpty());
    }

    // A thousand ranks and more, two of them slow: both are flagged, no other is, and each is measured against the
    // median of all the others' medians (an even and an odd number of others), as a plain sort of them gives it.
    void stragglersAmongAThousandRanks_data() {
        QTest::addColumn<int>("ranks");
        QTest::newRow("1000 ranks") << 1000;
        QTest::newRow("1001 ranks") << 1001;
    }
    void stragglersAmongAThousandRanks() {
        QFETCH(int, ranks);
        const auto computeMs = [ranks](int rank) {
            return rank == 777 ? 500.0 : rank == 778 ? 480.0 : rank < ranks / 2 ? 200.0 : 240.0;
        };
        QVector<TrainerEvent> events;
        for (int s = 1; s <= 25; ++s)
            for (int rank = 0; rank < ranks; ++rank)
                events << step(rank, 1000.0 + s * 0.6, s, 600, 600 - computeMs(rank));
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> found = replay(diagnostics, events, DiagnosisKind::Straggler);
        QCOMPARE(found.size(), 2);
        for (const Diagnosis& d : found) {
            QCOMPARE(d.ranks.size(), 1);
            const int rank = d.ranks.front();
            QVERIFY2(rank == 777 || rank == 778, qPrintable(d.message));
            std::vector<double> others;
            for (int other = 0; other < ranks; ++other)
                if (other != rank)
                    others.push_back(computeMs(other));
            std::sort(others.begin(), others.end());
            const size_t n = others.size();
            const double reference = n % 2 ? others[n / 2] : (others[n / 2 - 1] + others[n / 2]) / 2.0;
            const QString said = QStringLiteral("computes %1x as long as the median of the others (%2 ms vs %3 ms")
                                     .arg(computeMs(rank) / reference, 0, 'f', 2)
                                     .arg(computeMs(rank), 0, 'f', 0)
                                     .arg(reference, 0, 'f', 0);
            QVERIFY2(d.message.contains(said), qPrintable(d.message + QStringLiteral(" / expected: ") + said));
        }
    }

    // At 40 steps a second, 20 steps are half a second: four ranks on two shared cores, one of them slowed for a
    // second by a neighbour's burst, is no straggler (seen on two namespace nodes: flagged at 1.32x, resolved a
    // second later). The window spans 5 s of steps. Slow for longer than that, the rank is flagged, and the
    // finding says how many steps and seconds it looked at.
    void aBlipOfFastStepsIsNoStraggler() {
        const auto run = [](int slowFrom, int slowTo, int steps) {
            QVector<TrainerEvent> events;
            for (int s = 1; s <= steps; ++s) {
                const double t = 1000.0 + s * 0.025;
                const bool slow = s >= slowFrom && s < slowTo;
                for (int rank = 0; rank < 4; ++rank)
                    events << step(rank, t, s, 25, rank == 0 ? (slow ? 0 : 5) : (slow ? 13 : 5)); // 25 vs 12: 2x
            }
            return events;
        };
        RunDiagnostics blip;
        const QVector<Diagnosis> none = replay(blip, run(100, 140, 600), DiagnosisKind::Straggler); // 1 s slow
        for (const Diagnosis& d : none)
            qWarning("unexpected: %s", qPrintable(d.toString()));
        QVERIFY(none.isEmpty());

        RunDiagnostics sustained;
        const QVector<Diagnosis> found = replay(sustained, run(100, 500, 600), DiagnosisKind::Straggler); // 10 s
        QVERIFY(!found.isEmpty());
        QCOMPARE(found.front().ranks, QVector<int>{0});
        // Flagged once half of a 5 s window (200 steps of 25 ms) was slow, not before: from then on the others'
        // median is their waiting steps' (12 ms), and even the rank's fast steps (20 ms) are 1.2x that.
        QVERIFY2(found.front().time >= 1000.0 + 200 * 0.025, qPrintable(QString::number(found.front().time, 'f', 3)));
        QVERIFY2(found.front().message.contains(QLatin1String("over its last 200 steps, 5.0 s")),
                 qPrintable(found.front().message));

        // Steps of 1 ms: the window stops at 1,000 steps (1 s) rather than growing to 5,000.
        RunDiagnostics tiny;
        QVector<TrainerEvent> quick;
        for (int s = 1; s <= 1200; ++s)
            quick << step(0, 1000.0 + s * 0.001, s, 1, 0) << step(1, 1000.0 + s * 0.001, s, 1, 0.5);
        const QVector<Diagnosis> capped = replay(tiny, quick, DiagnosisKind::Straggler);
        QCOMPARE(capped.size(), 1);
        QVERIFY2(capped.front().message.contains(QLatin1String("over its last 1000 steps, 1.0 s")),
                 qPrintable(capped.front().message));
    }

    // Every running rank inside the same collective, none missing: no rank is blamed.
    void everyRankInsideOneCollectiveBlamesNoRank() {
        const QVector<TrainerEvent> events = threeRanksInsideCollective12();
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> hangs = replay(diagnostics, events, DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        QVERIFY2(
            hangs.front().message.startsWith(QLatin1String("every running rank (0-2) is stuck inside collective #12: "
                                                           "no rank is missing from it, so look at the communication")),
            qPrintable(hangs.front().message));
    }

    // Every running rank inside one collective that ranks which ended cleanly never entered (a rank whose inputs ran
    // out first, an early return): those are missing from it, and the hang says which and where they left, by their
    // exit (its status) or by their end event (no status yet). Ranks that ended inside it or after are not named.
    void ranksThatEndedOutsideTheCollectiveAreMissingFromIt() {
        QVector<TrainerEvent> events;
        for (int rank = 0; rank < 6; ++rank) // rank 5 sends no heartbeat: where it is is not known, nor that it ended
            events << step(rank, 1999.5, 7, 100.0, 10.0);
        // Ranks 2 and 3 left after step 7 outside any collective, rank 4 inside #12 (each with its last beat).
        events << heartbeat(2, 1999.6, 7, "optimizer", 11, 11) << heartbeat(3, 1999.6, 7, "optimizer", 11, 11)
               << heartbeat(4, 1999.6, 7, "backward", 12, 11);
        events << decoded(R"({"v":"1.0","type":"end","rank":3,"time":1999.7,"status":"ok","steps":7,)"
                          R"("images_per_sec":100,"wall_s":10,"param_checksum":1.5})");
        for (int i = 0; i < 8; ++i)
            for (int rank = 0; rank < 2; ++rank)
                events << heartbeat(rank, 2000.0 + i, 7, "backward", 12, 11);
        RunDiagnostics diagnostics;
        diagnostics.rankExited(2, 0);
        diagnostics.rankExited(4, 0);
        const QVector<Diagnosis> hangs = replay(diagnostics, events, DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        QCOMPARE(hangs.front().message,
                 QStringLiteral("every running rank (0-1) is stuck inside collective #12; ranks 2-3 ended without "
                                "entering it (rank 2 after step 7, exit status 0; rank 3 after step 7): a rank that "
                                "leaves the training loop early (inputs uneven across ranks, an early return or exit) "
                                "leaves the others waiting in their next collective"));
        QCOMPARE(hangs.front().ranks, (QVector<int>{0, 1}));
    }

    // Before any step is done in this run, every rank inside the first collective is a run setting up (NCCL creates its
    // communicators there, seconds across nodes): no hang, and so no stack capture, until the set-up grace has
    // passed; then the hang is reported. After a step the same stillness is a hang within two heartbeats (above).
    void everyRankInsideTheFirstCollectiveIsASetUpForAWhile() {
        QVector<TrainerEvent> events;
        for (int i = 0; i < 40; ++i)
            for (int rank = 0; rank < 3; ++rank)
                events << heartbeat(rank, 2000.0 + i, 0, "forward", 1, 0);
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> hangs = replay(diagnostics, events, DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        QVERIFY2(
            hangs.front().message.startsWith(QLatin1String("every running rank (0-2) is stuck inside collective #1")),
            qPrintable(hangs.front().message));
        const double after = hangs.front().time - 2000.0; // the documented grace: 30 s, not two heartbeats
        QVERIFY2(after >= 30.0 && after < 32.0, qPrintable(QString::number(after)));
        // A run resumed from a checkpoint counts its steps from there: its heartbeats say step 1000 before this
        // process has finished any step, and its first collective is as much a set-up.
        QVector<TrainerEvent> resumed;
        for (int i = 0; i < 10; ++i)
            for (int rank = 0; rank < 3; ++rank)
                resumed << heartbeat(rank, 4000.0 + i, 1000, "forward", 1, 0);
        RunDiagnostics afterResume;
        QVERIFY(replay(afterResume, resumed, DiagnosisKind::Hang).isEmpty());
        // A rank missing from the first collective is named at once: it is not a set-up, the others wait for it.
        QVector<TrainerEvent> missing;
        for (int i = 0; i < 8; ++i) {
            missing << heartbeat(0, 3000.0 + i, 0, "data", 0, 0);
            for (int rank = 1; rank < 3; ++rank)
                missing << heartbeat(rank, 3000.0 + i, 0, "forward", 1, 0);
        }
        RunDiagnostics other;
        const QVector<Diagnosis> named = replay(other, missing, DiagnosisKind::Hang);
        QCOMPARE(named.size(), 1);
        QVERIFY2(named.front().message.startsWith(QLatin1String("rank 0 stuck at step 1 in phase data")),
                 qPrintable(named.front().message));
        QVERIFY2(named.front().time - 3000.0 < 3.0, qPrintable(QString::number(named.front().time - 3000.0)));
    }

    // Ranks being ended stop moving by design: the same stillness is no hang once the ending began before it was
    // seen; a hang reported before the ending stays standing.
    // Rank 0 of the recorded hang gives up when its collective times out and fails first: the root cause names it,
    // and the hang it waited on (rank 1 stuck). Rank 1 failing first, a culprit of that hang, adds nothing.
    void rootCauseOfAWaitingRankNamesTheHang() {
        const auto rootCause = [](int firstFailed) {
            RunDiagnostics diagnostics;
            diagnostics.setRankHosts({{0, "node-a"}, {1, "node-a"}});
            QVector<TrainerEvent> beforeTimeout;
            for (const TrainerEvent& e : recorded(QStringLiteral("hang")))
                if (e.type != TrainerEventType::Error && e.type != TrainerEventType::End)
                    beforeTimeout.append(e);
            if (replay(diagnostics, beforeTimeout, DiagnosisKind::Hang).isEmpty())
                return QString();
            RunRecord record;
            record.state = QStringLiteral("failed");
            record.firstFailedRank = firstFailed;
            record.summary = QStringLiteral("rank %1 on node-a failed first: exit status 1").arg(firstFailed);
            record.exits.insert(firstFailed, RankExit{1, {}});
            diagnostics.runEnded(record);
            for (const Diagnosis& d : diagnostics.update(beforeTimeout.back().time))
                if (d.kind == DiagnosisKind::RootCause)
                    return d.message;
            return QString();
        };
        const QString waiting = rootCause(0);
        QVERIFY2(waiting.startsWith(QLatin1String("rank 0 on node-a failed first: exit status 1; it was waiting on a "
                                                  "hung rank: rank 1 on node-a stuck at step 3 in phase forward")),
                 qPrintable(waiting));
        QCOMPARE(rootCause(1), QStringLiteral("rank 1 on node-a failed first: exit status 1"));
    }

    // The first rank to fail lost a peer that had left: rank 1 ended well (its end event "ok") after 3 of the 10 steps
    // rank 0 was to take, before rank 0 failed (Gloo closes the connection when a rank's process is gone; NCCL's peers
    // time out). Not said of a rank that ended after the failure, nor after all the steps (the failed rank failed
    // after them), nor when the failed rank itself had ended well (a crash on the way out), nor without its plan.
    void rootCauseNamesAPeerThatLeftTheLoopEarly_data() {
        QTest::addColumn<qint64>("rank1Steps");
        QTest::addColumn<double>("rank1EndedAt");
        QTest::addColumn<bool>("rank0EndedWell");
        QTest::addColumn<bool>("planKnown");
        QTest::addColumn<QString>("rank1Status");
        QTest::addColumn<bool>("said");
        QTest::newRow("left after 3 of 10") << qint64(3) << 1999.0 << false << true << "ok" << true;
        QTest::newRow("left after 9 of 10") << qint64(9) << 1999.0 << false << true << "ok" << true;
        QTest::newRow("ended in error") << qint64(3) << 1999.0 << false << true << "error" << false;
        QTest::newRow("ended after the failure") << qint64(3) << 2001.0 << false << true << "ok" << false;
        QTest::newRow("ended after every step") << qint64(10) << 1999.0 << false << true << "ok" << false;
        QTest::newRow("the failed rank ended well itself") << qint64(3) << 1999.0 << true << true << "ok" << false;
        QTest::newRow("no plan known") << qint64(3) << 1999.0 << false << false << "ok" << false;
    }
    void rootCauseNamesAPeerThatLeftTheLoopEarly() {
        QFETCH(qint64, rank1Steps);
        QFETCH(double, rank1EndedAt);
        QFETCH(bool, rank0EndedWell);
        QFETCH(bool, planKnown);
        QFETCH(QString, rank1Status);
        QFETCH(bool, said);
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{0, "node-a"}, {1, "node-a"}});
        QVector<TrainerEvent> events;
        if (planKnown)
            events << started(0, 100) << started(1, 101);
        for (qint64 i = 1; i <= 9; ++i)
            events << step(0, 1990.0 + i, i, 100.0, 10.0);
        for (qint64 i = 1; i <= rank1Steps; ++i)
            events << step(1, 1990.0 + i, i, 100.0, 10.0);
        const auto end = [](int rank, double time, qint64 steps, const QString& status) {
            return decoded(QStringLiteral(R"({"v":"1.0","type":"end","rank":%1,"time":%2,"status":"%4","steps":%3,)"
                                          R"("images_per_sec":100,"wall_s":10,"param_checksum":1.5})")
                               .arg(rank)
                               .arg(time, 0, 'f', 3)
                               .arg(steps)
                               .arg(status)
                               .toUtf8());
        };
        events << end(1, rank1EndedAt, rank1Steps, rank1Status);
        if (rank0EndedWell)
            events << end(0, 1999.5, 9, QStringLiteral("ok"));
        std::stable_sort(events.begin(), events.end(),
                         [](const TrainerEvent& a, const TrainerEvent& b) { return a.time < b.time; });
        diagnostics.addEvents(events);
        RunRecord record;
        record.state = QStringLiteral("failed");
        record.firstFailedRank = 0;
        record.summary = QStringLiteral("rank 0 on node-a failed first: exit status 1");
        record.exits.insert(0, RankExit{1, QDateTime::fromMSecsSinceEpoch(2000500, QTimeZone::utc())});
        record.exits.insert(
            1, RankExit{0, QDateTime::fromMSecsSinceEpoch(qint64(rank1EndedAt * 1000) + 100, QTimeZone::utc())});
        diagnostics.runEnded(record);
        QString message;
        for (const Diagnosis& d : diagnostics.update(2001.0))
            if (d.kind == DiagnosisKind::RootCause)
                message = d.message;
        QCOMPARE(message, said ? QStringLiteral("rank 0 on node-a failed first: exit status 1; rank 1 had ended well "
                                                "before it (after %1 steps, of the 10 rank 0 was to take): a rank that "
                                                "leaves the training loop early (inputs uneven across ranks, an early "
                                                "return or exit) leaves the others waiting in their next collective")
                                     .arg(rank1Steps)
                               : record.summary);
    }

    // NCCL's watchdog timeouts in the ranks' logs feed the hang diagnosis. A hang the heartbeats found says them
    // too, as the same finding changed (said again when another rank's arrives, not twice); a timeout not yet
    // read by the replayed time is not said.
    void watchdogTimeoutsJoinTheHangOfTheHeartbeats() {
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{0, "node-a"}, {1, "node-a"}, {2, "node-b"}});
        QVector<TrainerEvent> events = stepDone(3);
        for (int i = 0; i < 8; ++i) {
            events << heartbeat(0, 2000.0 + i, 29, "forward", 92, 91);
            events << heartbeat(1, 2000.0 + i, 29, "forward", 91, 91);
            events << heartbeat(2, 2000.0 + i, 29, "forward", 92, 91);
        }
        const QVector<Diagnosis> hangs = replay(diagnostics, events, DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        const Diagnosis hang = hangs.front();
        diagnostics.addCollectiveTimeout(0, ncclWatchdogTimeout(0, 808), 2010.0);
        diagnostics.addCollectiveTimeout(2, ncclWatchdogTimeout(2, 808), 2011.0);
        QVERIFY(diagnostics.update(2009.0).isEmpty());
        const QVector<Diagnosis> first = diagnostics.update(2010.0);
        QCOMPARE(first.size(), 1);
        QCOMPARE(first.front().key, hang.key);
        QCOMPARE(first.front().ranks, hang.ranks);
        QCOMPARE(first.front().culprits, 1);
        QCOMPARE(first.front().message,
                 hang.message + QLatin1String("; NCCL's watchdog timed out on rank 0 on node-a in ALLREDUCE (SeqNum "
                                              "808) after 600086 ms (timeout 600000 ms)"));
        const QVector<Diagnosis> second = diagnostics.update(2011.0);
        QCOMPARE(second.size(), 1);
        QCOMPARE(second.front().message,
                 hang.message + QLatin1String("; NCCL's watchdog timed out on ranks 0,2 in ALLREDUCE (SeqNum 808) "
                                              "after 600086 ms (timeout 600000 ms)"));
        QVERIFY(diagnostics.update(2012.0).isEmpty());
        QCOMPARE(diagnostics.all().size(), 1);
    }

    // Without a hang from the heartbeats (none beat, or none were still long enough), the timeouts are a hang
    // finding of their own that blames no rank: a timeout says who waited, not for whom. The rank that failed
    // first of such a wait is not said to have waited on a hung rank.
    void watchdogTimeoutsAloneAreAHangThatBlamesNoRank() {
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{0, "node-a"}, {1, "node-b"}});
        QVector<TrainerEvent> events = stepDone(2);
        QVERIFY(replay(diagnostics, events, DiagnosisKind::Hang).isEmpty());
        diagnostics.addCollectiveTimeout(0, ncclWatchdogTimeout(0, 17), 2000.0);
        diagnostics.addCollectiveTimeout(0, ncclWatchdogTimeout(0, 18), 2001.0); // a rank's first one counts
        const QVector<Diagnosis> found = diagnostics.update(2001.0);
        QCOMPARE(found.size(), 1);
        const Diagnosis& hang = found.front();
        QCOMPARE(hang.kind, DiagnosisKind::Hang);
        QCOMPARE(hang.key, QStringLiteral("hang:watchdog"));
        QCOMPARE(hang.ranks, QVector<int>{0});
        QCOMPARE(hang.culprits, 0);
        QCOMPARE(hang.message, QStringLiteral("NCCL's watchdog timed out on rank 0 on node-a in ALLREDUCE (SeqNum 17) "
                                              "after 600086 ms (timeout 600000 ms); no timeout from rank 1 (the rank "
                                              "they waited for may be among them)"));
        const QString ended = rootCauseOfAnAbortedRank0(diagnostics);
        QCOMPARE(ended, QStringLiteral("rank 0 on node-a failed first: killed by SIGABRT"));
    }

    // PyTorch's desync report after the timeouts names the rank that lagged: the hang the timeouts make holds it at
    // fault (the grid's hung rank, the rank a failure waited on), said once however many ranks print the report,
    // and over once that rank moves again.
    void desyncReportNamesTheRankAtFault() {
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{0, "node-a"}, {1, "node-b"}, {2, "node-a"}});
        QVector<TrainerEvent> events = stepDone(3);
        QVERIFY(replay(diagnostics, events, DiagnosisKind::Hang).isEmpty());
        const DesyncBlame blame{{1},
                                QStringLiteral("[1] finished collective #182, but didn't join collective #183 "
                                               "(count from 1)")};
        diagnostics.addCollectiveTimeout(0, ncclWatchdogTimeout(0, 183), 2000.0);
        diagnostics.addCollectiveTimeout(2, ncclWatchdogTimeout(2, 183), 2000.0);
        diagnostics.addDesyncBlame(blame, 2000.0); // rank 0's report
        diagnostics.addDesyncBlame(blame, 2000.0); // rank 2's, the same
        const QVector<Diagnosis> found = diagnostics.update(2000.0);
        QCOMPARE(found.size(), 1);
        const Diagnosis& hang = found.front();
        QCOMPARE(hang.key, QStringLiteral("hang:watchdog"));
        QCOMPARE(hang.ranks, (QVector<int>{1, 0, 2}));
        QCOMPARE(hang.culprits, 1);
        QCOMPARE(hang.host, QStringLiteral("node-b"));
        QCOMPARE(
            hang.message,
            QStringLiteral("rank 1 on node-b is behind, as PyTorch's desync report says: \"[1] finished collective "
                           "#182, but didn't join collective #183 (count from 1)\"; NCCL's watchdog timed out on "
                           "ranks 0,2 in ALLREDUCE (SeqNum 183) after 600086 ms (timeout 600000 ms)"));
        QVERIFY(diagnostics.update(2001.0).isEmpty());
        const QString ended = rootCauseOfAnAbortedRank0(diagnostics);
        QCOMPARE(ended,
                 QLatin1String("rank 0 on node-a failed first: killed by SIGABRT; it was waiting on a hung rank: ") +
                     hang.message);
        // Rank 1 moves on: the hang is over.
        diagnostics.addEvents({heartbeat(1, 2003.0, 30, "forward", 200, 200)});
        const QVector<Diagnosis> moved = diagnostics.update(2003.0);
        QVERIFY(std::any_of(moved.cbegin(), moved.cend(),
                            [](const Diagnosis& d) { return d.key == QLatin1String("hang:watchdog") && d.resolved; }));
    }

    // What the CLI keeps of the diagnoses signal: each finding once, in the order first said, as last said.
    void foldedFindingsKeepTheLastWordOfEach() {
        const auto finding = [](const char* key, const char* message, bool resolved = false) {
            Diagnosis d;
            d.key = QString::fromLatin1(key);
            d.message = QString::fromLatin1(message);
            d.resolved = resolved;
            return d;
        };
        QVector<Diagnosis> known;
        foldFindings(known, {finding("hang:5", "stuck"), finding("straggler:1", "2.0x")});
        foldFindings(known, {finding("straggler:1", "2.5x"), finding("root-cause", "rank 0")});
        foldFindings(known, {finding("hang:5", "stuck", true)});
        QCOMPARE(known.size(), 3);
        QCOMPARE(known[0].key, QStringLiteral("hang:5"));
        QVERIFY(known[0].resolved);
        QCOMPARE(known[1].message, QStringLiteral("2.5x"));
        QCOMPARE(known[2].key, QStringLiteral("root-cause"));
    }

    // What listings show of an ended run (RunRecord::verdict): the root cause where it says the summary and more, a
    // stopped or lost run's standing hang after its summary; nothing where the findings add nothing.
    void verdictSaysWhatTheSummaryLeavesOut_data() {
        QTest::addColumn<QString>("state");
        QTest::addColumn<QString>("summary");
        QTest::addColumn<QStringList>("findings"); // "kind|message" or "kind|message|resolved"
        QTest::addColumn<bool>("ended");
        QTest::addColumn<QString>("verdict");
        const QString failed = QStringLiteral("rank 0 on node-a failed first: exit status 1");
        const QString waited =
            failed + QStringLiteral("; it was waiting on a hung rank: rank 1 on node-a stuck at step 3");
        const QString hang = QStringLiteral("rank 1 on node-a stuck at step 3 in phase forward (collective #5)");
        QTest::newRow("failed: the root cause with the hang it waited on")
            << "failed" << failed << QStringList{"hang|" + hang, "root-cause|" + waited} << true << waited;
        QTest::newRow("failed: a root cause that only repeats the summary")
            << "failed" << failed << QStringList{"root-cause|" + failed} << true << QString();
        QTest::newRow("failed: a hang the root cause leaves out (the failed rank is the hung one)")
            << "failed" << failed << QStringList{"hang|" + hang, "root-cause|" + failed} << true << QString();
        QTest::newRow("failed: a root cause about another summary")
            << "failed" << failed << QStringList{"root-cause|rank 2 on node-b failed first; more"} << true << QString();
        QTest::newRow("stopped while hung")
            << "stopped"
            << "stopped by the user" << QStringList{"hang|" + hang} << true << "stopped by the user; hang: " + hang;
        QTest::newRow("stopped after the hang moved on")
            << "stopped"
            << "stopped by the user" << QStringList{"hang|" + hang + "|resolved"} << true << QString();
        QTest::newRow("stopped with a straggler only")
            << "stopped"
            << "stopped by the user" << QStringList{"straggler|rank 1 on node-a is a straggler"} << true << QString();
        QTest::newRow("lost while hung, no summary")
            << "lost"
            << "" << QStringList{"hang|" + hang} << true << "lost; hang: " + hang;
        QTest::newRow("finished") << "finished"
                                  << "" << QStringList{"hang|" + hang} << true << QString();
        QTest::newRow("not ended") << "running"
                                   << "" << QStringList{"hang|" + hang} << false << QString();
    }

    void verdictSaysWhatTheSummaryLeavesOut() {
        QFETCH(QString, state);
        QFETCH(QString, summary);
        QFETCH(QStringList, findings);
        QFETCH(bool, ended);
        QFETCH(QString, verdict);
        RunRecord record;
        record.state = state;
        record.summary = summary;
        if (ended)
            record.ended = QDateTime::currentDateTimeUtc();
        QVector<Diagnosis> standing;
        for (const QString& finding : std::as_const(findings)) {
            const QStringList parts = finding.split(QLatin1Char('|'));
            Diagnosis d;
            d.kind = parts[0] == QLatin1String("hang")        ? DiagnosisKind::Hang
                     : parts[0] == QLatin1String("straggler") ? DiagnosisKind::Straggler
                                                              : DiagnosisKind::RootCause;
            d.key = parts[0];
            d.message = parts[1];
            d.resolved = parts.size() > 2;
            standing.append(d);
        }
        QCOMPARE(runVerdict(record, standing), verdict);
        record.verdict = runVerdict(record, standing);
        QCOMPARE(record.headline(), verdict.isEmpty() ? summary : verdict);
    }

    void stillnessOfRanksBeingEndedIsNoHang() {
        const QVector<TrainerEvent> events = threeRanksInsideCollective12();
        RunDiagnostics ending;
        ending.setEndingSince(2000.5);
        QVERIFY(replay(ending, events, DiagnosisKind::Hang).isEmpty());

        RunDiagnostics before;
        const QVector<Diagnosis> hangs = replay(before, events, DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        before.setEndingSince(hangs.front().time + 0.5);
        QVector<TrainerEvent> later;
        for (int rank = 0; rank < 3; ++rank)
            later << heartbeat(rank, 2010.0, 7, "backward", 12, 11);
        before.addEvents(later);
        const QVector<Diagnosis> after = before.update(2010.0);
        QVERIFY(std::none_of(after.begin(), after.end(), [](const Diagnosis& d) { return d.resolved; }));
        before.clear(); // a new run: no ending
        QCOMPARE(replay(before, events, DiagnosisKind::Hang).size(), 1);
    }

    // A front end that stops a hung run it has only just attached to (`rankscope-cli stop` from another terminal)
    // reads the ranks' stillness after the stop began: the hang it finds began long before, and is one.
    void aHangFoundAfterTheStopBeganBeforeIt() {
        const QVector<TrainerEvent> events = threeRanksInsideCollective12(); // still from 2000.0 to 2007.0
        RunDiagnostics late;
        late.setEndingSince(2006.0);
        late.addEvents(events);
        const QVector<Diagnosis> found = late.update(2007.0);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().kind, DiagnosisKind::Hang);
        QCOMPARE(found.front().ranks, (QVector<int>{0, 1, 2}));
        // Still only since shortly before the ending (less than the threshold of 1.2 s before it): the ending's.
        RunDiagnostics ending;
        ending.setEndingSince(2000.5);
        ending.addEvents(events);
        QVERIFY(ending.update(2007.0).isEmpty());
    }

    // How long ranks were still is known only as far as their copy goes (an attached run not caught up yet, a node
    // whose link is down): no hang from beyond it, until the copy is current again.
    void stillnessPastTheKnownCopyIsNoHang() {
        const QVector<TrainerEvent> events = threeRanksInsideCollective12();
        RunDiagnostics stale;
        for (int rank = 0; rank < 3; ++rank)
            stale.setRankKnownUntil(rank, 2000.5);
        QVERIFY(replay(stale, events, DiagnosisKind::Hang, 2030.0).isEmpty());
        QCOMPARE(stale.rankKnownUntil(1), 2000.5);
        for (int rank = 0; rank < 3; ++rank)
            stale.setRankKnownUntil(rank, std::numeric_limits<double>::infinity());
        const QVector<Diagnosis> current = stale.update(2031.0);
        QCOMPARE(std::count_if(current.begin(), current.end(),
                               [](const Diagnosis& d) { return d.kind == DiagnosisKind::Hang; }),
                 1);
    }

    // A stack capture holds the ranks in a debugger, and rank 1 waits in collective #8 for rank 0 meanwhile. That
    // stillness is the capture's: no hang, hence no second capture. Stillness after the ranks are let go counts.
    void stillnessWhileTheRanksAreHeldIsNoHang() {
        QVector<TrainerEvent> moving;
        for (int i = 0; i < 8; ++i)
            for (int rank = 0; rank < 2; ++rank)
                moving << heartbeat(rank, 3000.0 + 0.5 * i, i, "forward", i, i);
        moving << heartbeat(0, 3003.6, 7, "forward", 7, 7) << heartbeat(1, 3003.6, 7, "backward", 8, 7);
        QVector<TrainerEvent> resumed = moving; // held from 3003.7 to 3008, then on as before
        QVector<TrainerEvent> stuck = moving;   // held likewise, then rank 0 still does not come
        for (int i = 0; i < 8; ++i)
            for (int rank = 0; rank < 2; ++rank) {
                resumed << heartbeat(rank, 3008.0 + 0.5 * i, 8 + i, "forward", 8 + i, 8 + i);
                stuck << heartbeat(rank, 3008.0 + 0.5 * i, 7, rank == 0 ? "forward" : "backward", 7 + rank, 7);
            }

        RunDiagnostics unheld; // the same stillness with no capture is a hang (resolved once rank 0 comes)
        const QVector<Diagnosis> falseHang = replay(unheld, resumed, DiagnosisKind::Hang);
        QCOMPARE(std::count_if(falseHang.begin(), falseHang.end(), [](const Diagnosis& d) { return !d.resolved; }), 1);

        RunDiagnostics held;
        held.pauseRanks(3003.7);
        held.resumeRanks(3008.0);
        QVERIFY(replay(held, resumed, DiagnosisKind::Hang).isEmpty());

        RunDiagnostics stillHeld; // the capture still going: no end to the pause yet
        stillHeld.pauseRanks(3003.7);
        QVERIFY(replay(stillHeld, moving, DiagnosisKind::Hang, 3010.0).isEmpty());

        RunDiagnostics heldThenStuck;
        heldThenStuck.pauseRanks(3003.7);
        heldThenStuck.resumeRanks(3008.0);
        const QVector<Diagnosis> hangs = replay(heldThenStuck, stuck, DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        QVERIFY2(hangs.front().message.startsWith(QLatin1String("rank 0 stuck at step 8")),
                 qPrintable(hangs.front().message));
        // Once rank 1 has waited the threshold (1.2 heartbeats, 0.6 s): 0.1 s before the pause, 0.5 s after it.
        QVERIFY2(hangs.front().time >= 3008.45 && hangs.front().time <= 3008.55,
                 qPrintable(QString::number(hangs.front().time, 'f', 2)));
        // A second capture begun while the first still holds the ranks (the first one superseded) holds them once:
        // the hang comes as soon after the resume as with one capture.
        RunDiagnostics heldTwice;
        heldTwice.pauseRanks(3003.7);
        heldTwice.pauseRanks(3005.0);
        heldTwice.resumeRanks(3008.0);
        const QVector<Diagnosis> once = replay(heldTwice, stuck, DiagnosisKind::Hang);
        QCOMPARE(once.size(), 1);
        QCOMPARE(once.front().time, hangs.front().time);
    }

    // A rank that is merely slower to reach the collective, but moving, is not a hang; once it arrives the
    // run goes on and nothing is reported.
    // Three ranks and a broadcast from rank 0 (collective #92) that rank 1 never joined, as the trainer's DDP
    // broadcasts its buffers in every forward: rank 2 has its data and waits in #93, rank 0 is still sending in
    // #92, rank 1 is in no collective (asleep in step 30). The hung rank is rank 1, not rank 0, the lowest of the
    // ranks behind; both others wait, each in its own collective.
    void theRankInNoCollectiveIsTheHungOne() {
        const Diagnosis hang = firstHangOfThree(91);
        QCOMPARE(hang.message, QStringLiteral("rank 1 stuck at step 30 in phase forward (collective #91); rank 0 "
                                              "waiting in collective #92, rank 2 waiting in collective #93"));
        QCOMPARE(hang.ranks, (QVector<int>{1, 0, 2}));
        QCOMPARE(hang.culprits, 1);
    }

    // Every rank behind is inside a collective (rank 1 in #91 too), none in its own code: all of them are named,
    // the furthest behind first.
    void ranksBehindAllInsideCollectivesAreAllNamed() {
        const Diagnosis hang = firstHangOfThree(90);
        QCOMPARE(hang.message, QStringLiteral("rank 1 stuck at step 30 in phase forward (collective #91), and rank 0; "
                                              "rank 2 waiting in collective #93"));
        QCOMPARE(hang.culprits, 2);
    }

    // Rank 1 stopped (SIGSTOP, Ctrl-Z) right after the beat that showed it inside collective #12, where rank 0 then
    // waits: both are inside it, none is missing, yet it is no fault of the communication. Rank 1's heartbeats
    // stopped while rank 0's go on: it is named, once silent for three beats, with how a stopped process goes on.
    void aRankSilentInsideTheCollectiveIsTheOneAtFault() {
        const QVector<Diagnosis> hangs = hangsWhileRank1Beats({2000.0});
        QCOMPARE(hangs.size(), 1);
        QCOMPARE(hangs.front().message,
                 QStringLiteral(
                     "rank 1 on gpu-b stuck inside collective #12 at step 8 in phase backward; rank 0 "
                     "waiting in collective #12. rank 1 has sent no heartbeat for 1.5 s while the other ranks still "
                     "do: its process is stopped (Ctrl-Z, SIGSTOP, a debugger) or frozen, or its output "
                     "no longer reaches this machine (a stopped one goes on after kill -CONT 4242 on "
                     "gpu-b)"));
        QCOMPARE(hangs.front().ranks, (QVector<int>{1, 0}));
        QCOMPARE(hangs.front().culprits, 1);
        QCOMPARE(hangs.front().host, QStringLiteral("gpu-b"));
        QVERIFY2(hangs.front().time >= 2001.5 && hangs.front().time < 2001.6,
                 qPrintable(QString::number(hangs.front().time, 'f', 2)));
    }

    // A rank that only missed beats (a loaded node) and is heard again is no silent one: with both inside #12, the
    // hang blames no rank.
    void aRankLateWithItsBeatsIsNotSilent() {
        QVector<double> beats{2000.0, 2001.2}; // 2000.5 and 2001.0 missed
        for (int i = 0; i < 12; ++i)
            beats << 2001.7 + 0.5 * i;
        const QVector<Diagnosis> hangs = hangsWhileRank1Beats(beats);
        QCOMPARE(hangs.size(), 1);
        QVERIFY2(hangs.front().message.startsWith(QLatin1String("every running rank (0-1) is stuck inside collective "
                                                                "#12")),
                 qPrintable(hangs.front().message));
        QCOMPARE(hangs.front().culprits, 2);
        QVERIFY2(hangs.front().time >= 2001.5 && hangs.front().time < 2001.6,
                 qPrintable(QString::number(hangs.front().time, 'f', 2)));
    }

    // The verdict that blames no rank waits as long as silence takes (three beats): both ranks beating inside #12,
    // it comes after 1.5 s of stillness, not after the 0.6 s that name a rank missing from the collective. Were it
    // said at 0.6 s, a rank stopped just after a beat that showed it still there would pass for heard: stopped
    // after its beat of 2000.5, rank 1 is named once silent, at 2002.0.
    void aVerdictBlamingNoRankWaitsForSilenceToShow() {
        QVector<double> onTime;
        for (int i = 0; i <= 16; ++i)
            onTime << 2000.0 + 0.5 * i;
        const QVector<Diagnosis> beating = hangsWhileRank1Beats(onTime);
        QCOMPARE(beating.size(), 1);
        QCOMPARE(beating.front().culprits, 2);
        QVERIFY2(beating.front().time >= 2001.5 && beating.front().time < 2001.6,
                 qPrintable(QString::number(beating.front().time, 'f', 2)));

        const QVector<Diagnosis> stopped = hangsWhileRank1Beats({2000.0, 2000.5});
        QCOMPARE(stopped.size(), 1);
        QCOMPARE(stopped.front().culprits, 1);
        QCOMPARE(stopped.front().ranks, (QVector<int>{1, 0}));
        QVERIFY2(stopped.front().time >= 2002.0 && stopped.front().time < 2002.1,
                 qPrintable(QString::number(stopped.front().time, 'f', 2)));
    }

    // A rank is said silent only beside a rank heard: rank 1 stopped in its own code at 2000.0, rank 0 in collective
    // #12 after its beat of 2000.5. When rank 1 has been silent for three beats, rank 0 has missed one, no more: rank 1
    // is named, and nothing is said of the others still beating, which they are not.
    void aRankIsSaidSilentOnlyBesideARankHeard() {
        QVector<TrainerEvent> events = twoRanksPastStep7();
        events << heartbeat(0, 2000.0, 7, "backward", 12, 11) << heartbeat(1, 2000.0, 7, "forward", 11, 11)
               << heartbeat(0, 2000.5, 7, "backward", 12, 11);
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> hangs = replay(diagnostics, events, DiagnosisKind::Hang, 2004.0);
        QCOMPARE(hangs.size(), 1);
        QCOMPARE(hangs.front().message,
                 QStringLiteral("rank 1 stuck at step 8 in phase forward (collective #11); rank 0 "
                                "waiting in collective #12"));
        QCOMPARE(hangs.front().culprits, 1);
    }

    // A rank stopped in its own code, behind the collective rank 0 waits in, is named as ever, and said silent too
    // once its beats have stopped for three intervals while rank 0's go on. Stopped between two beats, after a step
    // event newer than its last beat, what that beat said of its phase and collective is out of date: the step it
    // finished is what is said.
    void aSilentRankBehindIsSaidToBeSilent_data() {
        QTest::addColumn<double>("step8");
        QTest::addColumn<QString>("said");
        QTest::newRow("stopped after its beat") << 0.0 << QStringLiteral("at step 8 in phase forward (collective #11)");
        QTest::newRow("stopped after its step") << 2000.2 << QStringLiteral("after step 8 (no heartbeat since)");
    }
    void aSilentRankBehindIsSaidToBeSilent() {
        QFETCH(double, step8);
        QFETCH(QString, said);
        const QVector<Diagnosis> hangs =
            hangsWhileRank1Beats({2000.0}, 11, std::numeric_limits<double>::infinity(), step8);
        QCOMPARE(hangs.size(), 1);
        const QString expected =
            QStringLiteral("rank 1 on gpu-b stuck %1; rank 0 waiting in collective #12. rank 1 has "
                           "sent no heartbeat for 1.5 s")
                .arg(said);
        QVERIFY2(hangs.front().message.startsWith(expected), qPrintable(hangs.front().message));
        QCOMPARE(hangs.front().culprits, 1);
    }

    // Both ranks stopped at once (Ctrl-Z in the terminal that started them, a frozen node) just after their beats
    // inside collective #12: no rank is heard, so neither is blamed, nor is the communication between them.
    void everyRankSilentIsNoFaultOfTheCommunication() {
        QVector<TrainerEvent> events = twoRanksPastStep7();
        for (int rank = 0; rank < 2; ++rank)
            events << heartbeat(rank, 2000.0, 7, "backward", 12, 11);
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> hangs = replay(diagnostics, events, DiagnosisKind::Hang, 2004.0);
        QCOMPARE(hangs.size(), 1);
        QCOMPARE(
            hangs.front().message,
            QStringLiteral("every running rank (0-1) is stuck inside collective #12. no rank has sent a heartbeat "
                           "for 1.5 s: the ranks are stopped (Ctrl-Z in the terminal that started them, SIGSTOP, a "
                           "debugger) or frozen, or their output no longer reaches this machine"));
        QCOMPARE(hangs.front().culprits, 2);
    }

    // Rank 1 beat at 2000.0 and 2000.5 inside #12, and its copy stands still from 2001.6 (its node's link is down):
    // still for the 1.5 s the verdict needs, it had missed a beat by then, no more, and whether it beat after is not
    // known. It is waited for as long as silence takes, no longer: then the hang is said as it was without, not
    // held back for as long as the link is down.
    void silenceIsNotReadPastTheKnownCopy() {
        const QVector<Diagnosis> hangs = hangsWhileRank1Beats({2000.0, 2000.5}, 12, 2001.6);
        QCOMPARE(hangs.size(), 1);
        QVERIFY2(hangs.front().message.startsWith(QLatin1String("every running rank (0-1)")),
                 qPrintable(hangs.front().message));
        QVERIFY2(hangs.front().time >= 2003.1 && hangs.front().time < 2003.2,
                 qPrintable(QString::number(hangs.front().time, 'f', 2)));
    }

    // Rank 0 waits in collective #9 for 6 s while rank 1, past the set-up, is still on its way to it (its phase moves
    // every beat): no hang, however long rank 0 has waited.
    void aRankStillMovingIsNotAHang() {
        QVector<TrainerEvent> events;
        for (int rank = 0; rank < 2; ++rank)
            events << step(rank, 2999.5, 4, 100.0, 10.0);
        for (int i = 0; i < 6; ++i) {
            events << heartbeat(0, 3000.0 + i, 4, "backward", 9, 8);
            events << heartbeat(1, 3000.0 + i + 0.5, 4, i % 2 ? "forward" : "backward", 8, 8); // its phase moves
        }
        RunDiagnostics diagnostics;
        QVERIFY(replay(diagnostics, events, DiagnosisKind::Hang).isEmpty());
    }

    // Every rank still outside any collective (a long checkpoint write or evaluation on all of them) is no hang:
    // none waits for another.
    void ranksStillOutsideEveryCollectiveAreNoHang() {
        QVector<TrainerEvent> events = stepDone(3);
        for (int i = 0; i < 10; ++i)
            for (int rank = 0; rank < 3; ++rank)
                events << heartbeat(rank, 2000.0 + i, 30, "checkpoint", 91, 91);
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> hangs = replay(diagnostics, events, DiagnosisKind::Hang);
        for (const Diagnosis& d : hangs)
            qWarning("unexpected: %s", qPrintable(d.toString()));
        QVERIFY(hangs.isEmpty());
    }

    // Where steps take longer than the heartbeats' patience, a rank waits in its collective for a peer still
    // computing for most of a step, every step: no hang until the ranks have been still for two steps' time.
    // Steps of 3 s and heartbeats every 0.5 s: rank 0 waits 2.5 s for rank 1's forward, then both go on; then rank 1
    // stops in its forward for good, and is named once rank 0 has waited 6 s.
    void ranksWaitingLessThanTwoStepsAreNoHang() {
        QVector<TrainerEvent> events;
        for (int s = 1; s <= 5; ++s)
            events << step(0, 1990.0 + s, s, 3000, 2500) << step(1, 1990.0 + s, s, 3000, 0);
        for (int i = 0; i < 6; ++i) { // step 6: rank 0 inside collective #6 from 2000.0, rank 1 computing
            events << heartbeat(0, 2000.0 + 0.5 * i, 5, "forward", 6, 5);
            events << heartbeat(1, 2000.0 + 0.5 * i, 5, "forward", 5, 5);
        }
        for (int i = 0; i < 20; ++i) { // step 7: rank 1 never reaches collective #7
            events << heartbeat(0, 2003.0 + 0.5 * i, 6, "forward", 7, 6);
            events << heartbeat(1, 2003.0 + 0.5 * i, 6, "forward", 6, 6);
        }
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> hangs = replay(diagnostics, events, DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        QVERIFY2(hangs.front().message.startsWith(QLatin1String("rank 1 stuck at step 7 in phase forward")),
                 qPrintable(hangs.front().message));
        QVERIFY2(hangs.front().time >= 2003.0 + 6.0 && hangs.front().time <= 2003.0 + 6.2,
                 qPrintable(QString::number(hangs.front().time, 'f', 2)));
    }

    // A hang that moves on is resolved.
    void hangThatMovesOnIsResolved() {
        QVector<TrainerEvent> events;
        for (int i = 0; i < 6; ++i)
            events << heartbeat(0, 4000.0 + i, 4, "backward", 9, 8) << heartbeat(1, 4000.0 + i + 0.5, 4, "forward", 8, 8);
        events << heartbeat(0, 4006.5, 5, "forward", 9, 9) << heartbeat(1, 4006.6, 5, "forward", 9, 9);
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> hangs = replay(diagnostics, events, DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 2);
        QVERIFY(!hangs[0].resolved);
        QVERIFY(hangs[1].resolved);
        QCOMPARE(hangs[1].key, hangs[0].key);
    }

    void divergentEndChecksumsAreReported() {
        RunDiagnostics diagnostics;
        diagnostics.addEvents({decoded(R"({"v":"1.0","type":"end","rank":0,"time":1,"status":"ok","steps":4,"images_per_sec":1,"wall_s":1,"param_checksum":1.5})"),
                               decoded(R"({"v":"1.0","type":"end","rank":1,"time":1,"status":"ok","steps":4,"images_per_sec":1,"wall_s":1,"param_checksum":1.5000001})")});
        const QVector<Diagnosis> found = diagnostics.update(2.0);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().kind, DiagnosisKind::Divergence);
        // Two replicas: nothing says which one is wrong, both are named.
        QCOMPARE(found.front().message, QStringLiteral("the replicas ended with different parameters: rank 0 (checksum "
                                                       "1.5), rank 1 (checksum 1.5000001): no majority says which "
                                                       "replica is wrong"));
        QCOMPARE(found.front().culprits, 2);
    }

    // Three replicas, one apart: it is the one named, the others agree. A NaN checksum (a replica whose
    // parameters blew up) is apart from finite ones; replicas that all blew up alike, or ranks that ended in error
    // (the trainer writes NaN for them), are no divergence.
    void theReplicaApartFromTheMajorityIsNamed() {
        const auto end = [](int rank, const char* checksum, const char* status = "ok") {
            return decoded(QStringLiteral(R"({"v":"1.1","type":"end","rank":%1,"time":1,"status":"%3","steps":4,)"
                                          R"("images_per_sec":1,"wall_s":1,"param_checksum":%2})")
                               .arg(rank)
                               .arg(QLatin1String(checksum), QLatin1String(status))
                               .toUtf8());
        };
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{0, "node-a"}, {1, "node-a"}, {2, "node-b"}});
        diagnostics.addEvents({end(0, "1.5"), end(1, "1.5"), end(2, "1.25")});
        QVector<Diagnosis> found = diagnostics.update(2.0);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().message, QStringLiteral("the replicas ended with different parameters: rank 2 on node-b "
                                                       "(checksum 1.25) differs from ranks 0-1 (checksum 1.5)"));
        QCOMPARE(found.front().ranks, (QVector<int>{2, 0, 1}));
        QCOMPARE(found.front().culprits, 1);
        QCOMPARE(found.front().host, QStringLiteral("node-b"));

        RunDiagnostics blownUp;
        blownUp.addEvents({end(0, "\"nan\""), end(1, "2"), end(2, "2"), end(3, "2")});
        found = blownUp.update(2.0);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().ranks.front(), 0);
        QCOMPARE(found.front().culprits, 1);

        RunDiagnostics allBlownUp;
        allBlownUp.addEvents({end(0, "\"nan\""), end(1, "\"nan\""), end(2, "\"nan\"")});
        QVERIFY(allBlownUp.update(2.0).isEmpty());
        RunDiagnostics failed; // rank 1 failed at step 12, the others lost it in a collective
        failed.addEvents({end(0, "\"nan\"", "error"), end(1, "\"nan\"", "error"), end(2, "\"nan\"", "error")});
        QVERIFY(failed.update(2.0).isEmpty());
        RunDiagnostics oneFailed; // no end checksum of rank 2: the others' are not compared with it
        oneFailed.addEvents({end(0, "1.5"), end(1, "1.5"), end(2, "\"nan\"", "error")});
        QVERIFY(oneFailed.update(2.0).isEmpty());
    }

    // The trainer's replica check (events 1.1: each rank's step and checksum): every rank says the replicas are
    // apart at the same step; once all have, the one apart is named. One that never says (it died) is waited for
    // two heartbeat intervals.
    void aReplicaCheckNamesTheReplicaApart() {
        const auto said = [](int rank, double time, const char* checksum) {
            return decoded(QStringLiteral(R"({"v":"1.1","type":"error","rank":%1,"time":%2,)"
                                          R"("kind":"replica_divergence","message":"parameters differ",)"
                                          R"("fatal":false,"step":20,"checksum":%3})")
                               .arg(rank)
                               .arg(time, 0, 'f', 3)
                               .arg(QLatin1String(checksum))
                               .toUtf8());
        };
        QVector<TrainerEvent> beats;
        for (int rank = 0; rank < 3; ++rank)
            beats << heartbeat(rank, 99.0, 20, "replica_check", 40, 40);
        RunDiagnostics diagnostics;
        diagnostics.addEvents(beats);
        diagnostics.addEvents({said(0, 100.0, "-3.5"), said(1, 100.1, "-3.25")});
        QVERIFY(diagnostics.update(100.2).isEmpty()); // rank 2 has not said yet: rank 0 or 1 may be the one apart
        diagnostics.addEvents({said(2, 100.3, "-3.5"), said(2, 100.4, "-3.5")});
        QVector<Diagnosis> found = diagnostics.update(100.5);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().kind, DiagnosisKind::Divergence);
        QCOMPARE(found.front().message, QStringLiteral("replicas diverged at step 20: rank 1 (checksum -3.25) differs "
                                                       "from ranks 0,2 (checksum -3.5)"));
        QCOMPARE(found.front().ranks, (QVector<int>{1, 0, 2}));
        QCOMPARE(found.front().culprits, 1);
        // Later checks find the same replicas apart: nothing new is said.
        diagnostics.addEvents({said(0, 110.0, "-3.5"), said(1, 110.0, "-3.0"), said(2, 110.0, "-3.5")});
        QVERIFY(diagnostics.update(115.0).isEmpty());

        RunDiagnostics waiting;
        waiting.addEvents(beats);
        waiting.addEvents({said(0, 100.0, "-3.5"), said(1, 100.1, "-3.25")});
        QVERIFY(waiting.update(101.9).isEmpty());
        found = waiting.update(102.1); // two heartbeat intervals (1 s each) after rank 0 said it
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().culprits, 2);
    }

    // An events-1.0 trainer's report has no checksum: every rank says the replicas differ, and none is named apart.
    // The finding is said once, from the first rank that says it, and holds no rank at fault.
    void aReplicaReportWithoutChecksumsBlamesNoRank() {
        const auto said = [](int rank, double time) {
            return decoded(QStringLiteral(R"({"v":"1.0","type":"error","rank":%1,"time":%2,)"
                                          R"("kind":"replica_divergence","message":"parameters differ","fatal":false})")
                               .arg(rank)
                               .arg(time, 0, 'f', 3)
                               .toUtf8());
        };
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{0, "node-a"}, {1, "node-b"}});
        diagnostics.addEvents({said(1, 100.0), said(0, 100.1)});
        const QVector<Diagnosis> found = diagnostics.update(100.2);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().kind, DiagnosisKind::Divergence);
        QCOMPARE(found.front().message,
                 QStringLiteral("replicas diverged: rank 1 on node-b reports parameters differ"));
        QCOMPARE(found.front().culprits, 0);
    }

    // The root cause is the engine's verdict; a SIGKILL without an error of its own points at the OOM killer.
    void rootCauseOfAKilledRankHintsAtTheOomKiller() {
        RunRecord record;
        record.state = QStringLiteral("failed");
        record.firstFailedRank = 3;
        record.summary = QStringLiteral("rank 3 on gpu-b killed by SIGKILL");
        record.exits.insert(3, RankExit{128 + 9, {}});
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{3, "gpu-b"}});
        diagnostics.runEnded(record);
        const QVector<Diagnosis> found = diagnostics.update(0.0);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().kind, DiagnosisKind::RootCause);
        QCOMPARE(found.front().ranks, QVector<int>{3});
        QVERIFY2(found.front().message.contains(QLatin1String("OOM killer")) &&
                     found.front().message.contains(QLatin1String("dmesg on gpu-b")),
                 qPrintable(found.front().message));
        RunRecord finished;
        finished.state = QStringLiteral("finished");
        RunDiagnostics quiet;
        quiet.runEnded(finished);
        QVERIFY(quiet.update(0.0).isEmpty());
    }

    // A root cause is given for a run that failed, or was lost with a rank failed first (a node that could no longer be
    // followed after it); not for one still going (a stored run read while its ranks run, a failed rank already
    // known), nor for one stopped or finished.
    void rootCauseOnlyOfARunThatFailedOrWasLost_data() {
        QTest::addColumn<QString>("state");
        QTest::addColumn<bool>("rootCause");
        QTest::newRow("failed") << "failed" << true;
        QTest::newRow("lost") << "lost" << true;
        QTest::newRow("running") << "running" << false;
        QTest::newRow("stopped") << "stopped" << false;
        QTest::newRow("finished") << "finished" << false;
    }

    void rootCauseOnlyOfARunThatFailedOrWasLost() {
        QFETCH(QString, state);
        RunRecord record;
        record.state = state;
        record.firstFailedRank = 2;
        record.summary = QStringLiteral("rank 2 on gpu-a failed first: exit status 1");
        record.exits.insert(2, RankExit{1, {}});
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{2, "gpu-a"}});
        diagnostics.runEnded(record);
        const QVector<Diagnosis> found = diagnostics.update(0.0);
        const bool rootCause = found.size() == 1 && found.front().kind == DiagnosisKind::RootCause &&
                               found.front().ranks == QVector<int>{2} &&
                               found.front().message.startsWith(record.summary);
        QVERIFY2(rootCause || found.isEmpty(), qPrintable(found.value(0).toString()));
        QTEST(rootCause, "rootCause");
    }

    // The root cause carries what its rank said last, as given, and `diagnose --json` and the bridge send it; other
    // findings have none, and their JSON no "last_lines".
    void rootCauseCarriesTheRanksLastLines() {
        RunRecord record;
        record.state = QStringLiteral("failed");
        record.firstFailedRank = 1;
        record.summary = QStringLiteral("rank 1 on gpu-b failed first: exit status 1");
        record.exits.insert(1, RankExit{1, {}});
        const QVector<StoredLine> said{{RankStream::Out, QStringLiteral("step 7 loss 0.5"), 100.0},
                                       {RankStream::Err, QStringLiteral("  File \"train.py\", line 3"), 0.0}};
        RunDiagnostics diagnostics;
        diagnostics.runEnded(record, said);
        const QVector<Diagnosis> found = diagnostics.update(0.0);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().lastLines.size(), 2);
        QCOMPARE(found.front().lastLines[1].text, said[1].text);
        const QJsonArray lines = found.front().toJson().value(QStringLiteral("last_lines")).toArray();
        QCOMPARE(lines.size(), 2);
        QCOMPARE(lines[0].toObject(), (QJsonObject{{"stream", "out"}, {"text", "step 7 loss 0.5"}, {"time", 100.0}}));
        QCOMPARE(lines[1].toObject(), (QJsonObject{{"stream", "err"}, {"text", "  File \"train.py\", line 3"}}));
        QCOMPARE(formatStoredLines(said, QStringLiteral("  ")),
                 QStringLiteral("  [out] step 7 loss 0.5\n  [err]   File \"train.py\", line 3\n"));

        Diagnosis hang;
        hang.kind = DiagnosisKind::Hang;
        QVERIFY(!hang.toJson().contains(QStringLiteral("last_lines")));
    }

    // Ranks that failed alike are all the root cause's culprits, the first named first.
    void ranksThatFailedAlikeAreCulpritsTogether() {
        RunRecord record;
        record.state = QStringLiteral("failed");
        record.firstFailedRank = 2;
        record.failedAlike = {0, 1};
        record.summary = QStringLiteral("every rank (0-2) failed alike, first rank 2 on gpu-b: exit status 3");
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{0, "gpu-a"}, {1, "gpu-a"}, {2, "gpu-b"}});
        diagnostics.runEnded(record);
        const QVector<Diagnosis> found = diagnostics.update(0.0);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.front().ranks, (QVector<int>{2, 0, 1}));
        QCOMPARE(found.front().culprits, 3);
        QCOMPARE(found.front().host, QStringLiteral("gpu-b"));
        QCOMPARE(found.front().message, record.summary);
    }

    // What the node's kernel log said about rank 1 (gpu-b), which died by a signal at 11:17:10.5.
    void rootCauseSaysWhatTheKernelSaid_data() {
        QTest::addColumn<int>("signal");
        QTest::addColumn<qint64>("startPid");   // the pid of rank 1's start event; -1: it never started
        QTest::addColumn<qint64>("pidFilePid"); // the supervisor's rank1.pid; -1: none
        QTest::addColumn<bool>("ownError");     // rank 1 reported a fatal error of its own
        QTest::addColumn<QByteArray>("log");
        QTest::addColumn<QString>("problem"); // why the log could not be read; empty: it was
        QTest::addColumn<QStringList>("says");
        QTest::addColumn<QStringList>("saysNot");

        const QByteArray noise = isoLine(30, "eth0: link up") + isoLine(20, "audit: type=1400 apparmor=\"DENIED\"");
        QTest::newRow("the OOM killer killed the rank's pid (from its start event)")
            << 9 << qint64(4242) << qint64(-1) << false << noise + oomKill(0.47, 4242, "rankscope-train") << QString()
            << QStringList{"rank 1 on gpu-b failed first: killed by SIGKILL; the kernel's OOM killer killed rank 1 "
                           "(pid 4242, rankscope-train) on gpu-b at 11:17:10 UTC: anon-rss 2.0 GiB, file-rss 2 MiB, "
                           "total-vm 3.1 GiB; the limit of memory cgroup /a/rs-oom was reached, not the node's memory"}
            << QStringList{"look for", "most likely"};
        QTest::newRow("the pid from the supervisor's pid file: killed before its start event")
            << 9 << qint64(-1) << qint64(4242) << false << oomKill(2, 4242, "rankscope-train") << QString()
            << QStringList{"the kernel's OOM killer killed rank 1 (pid 4242, rankscope-train) on gpu-b at 11:17:08 UTC"}
            << QStringList{"most likely"};
        QTest::newRow("another pid namespace: a near match by name and time")
            << 9 << qint64(17) << qint64(-1) << false << oomKill(0.4, 4242, "rankscope-train") << QString()
            << QStringList{"the kernel's OOM killer killed pid 4242 (rankscope-train) on gpu-b at 11:17:10 UTC, 0.4 s "
                           "before rank 1's exit was recorded; the rank's pid was 17 (another pid namespace?), so by "
                           "name and time it was most likely rank 1: anon-rss 2.0 GiB"}
            << QStringList{};
        QTest::newRow("a kill by name long before the death is not the rank's")
            << 9 << qint64(-1) << qint64(-1) << false << oomKill(600, 4242, "rankscope-train") << QString()
            << QStringList{"shows no OOM kill of rank 1, so the SIGKILL came from elsewhere"}
            << QStringList{"most likely"};
        QTest::newRow("another process was killed near then, not the rank")
            << 9 << qint64(4242) << qint64(-1) << false << oomKill(1.2, 999, "python3") << QString()
            << QStringList{"the kernel log of gpu-b (read with dmesg --time-format iso) shows no OOM kill of rank 1 "
                           "(pid 4242), but the OOM killer killed pid 999 (python3) at 11:17:09 UTC near then"}
            << QStringList{"killed rank 1"};
        QTest::newRow("the same pid killed before the run started was another process")
            << 9 << qint64(4242) << qint64(-1) << false << oomKill(3600, 4242, "python3") << QString()
            << QStringList{"shows no OOM kill of rank 1"} << QStringList{"killed rank 1"};
        QTest::newRow("nothing in the log: the SIGKILL came from elsewhere")
            << 9 << qint64(4242) << qint64(-1) << false << noise << QString()
            << QStringList{"the kernel log of gpu-b (read with dmesg --time-format iso) shows no OOM kill of rank 1, "
                           "so the SIGKILL came from elsewhere"}
            << QStringList{"Xid"};
        QTest::newRow("a GPU Xid on the node near the death, with its meaning")
            << 6 << qint64(4242) << qint64(-1) << false
            << noise + isoLine(2, "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
                                  "off the bus.")
            << QString()
            << QStringList{"rank 1 on gpu-b failed first: killed by SIGABRT; GPU Xid 79 on gpu-b (PCI 0000:3b:00) at "
                           "11:17:08 UTC: the GPU has fallen off the bus: it no longer answers on PCIe"}
            << QStringList{"OOM"};
        QTest::newRow("an Xid of the rank's own pid, earlier in the run; an old Xid is left out")
            << 6 << qint64(4242) << qint64(-1) << false
            << isoLine(4000, "NVRM: Xid (PCI:0000:3b:00): 48, pid=77, name=python, DBE") +
                   isoLine(40, "NVRM: Xid (PCI:0000:3b:00): 31, pid=4242, name=rankscope-train, Ch 00000010, intr "
                               "00000000. MMU Fault")
            << QString()
            << QStringList{"GPU Xid 31 on gpu-b (PCI 0000:3b:00, rank 1's process) at 11:16:30 UTC: GPU memory page "
                           "fault"}
            << QStringList{"Xid 48"};
        QTest::newRow("an Xid without a description is quoted")
            << 11 << qint64(4242) << qint64(-1) << false
            << isoLine(1, "NVRM: Xid (PCI:0000:3b:00): 62, pid='<unknown>', name=<unknown>, 2023b230 20238a3a")
            << QString()
            << QStringList{"GPU Xid 62 on gpu-b (PCI 0000:3b:00) at 11:17:09 UTC: \"2023b230 20238a3a\" (see "
                           "NVIDIA's Xid catalog)"}
            << QStringList{};
        QTest::newRow("the log could not be read: the reason, for a SIGKILL")
            << 9 << qint64(4242) << qint64(-1) << false << QByteArray()
            << QStringLiteral("dmesg not permitted on gpu-b: set kernel.dmesg_restrict=0 or run as root")
            << QStringList{"killed by SIGKILL; SIGKILL without an error of its own is often the kernel's OOM killer, "
                           "but the kernel log of gpu-b could not be read: dmesg not permitted on gpu-b: set "
                           "kernel.dmesg_restrict=0 or run as root"}
            << QStringList{};
        QTest::newRow("a rank with an error of its own: the kernel is not asked about")
            << 9 << qint64(4242) << qint64(-1) << true << oomKill(0.5, 4242, "rankscope-train") << QString()
            << QStringList{} << QStringList{"kernel", "OOM"};
        QTest::newRow("a SIGSEGV with nothing in the log adds nothing")
            << 11 << qint64(4242) << qint64(-1) << false << noise << QString() << QStringList{}
            << QStringList{";", "kernel"};
    }

    void rootCauseSaysWhatTheKernelSaid() {
        QFETCH(int, signal);
        QFETCH(qint64, startPid);
        QFETCH(qint64, pidFilePid);
        QFETCH(bool, ownError);
        QFETCH(QByteArray, log);
        QFETCH(QString, problem);
        QFETCH(QStringList, says);
        QFETCH(QStringList, saysNot);
        RunRecord record;
        record.state = QStringLiteral("failed");
        record.created = kRunCreated;
        record.firstFailedRank = 1;
        record.summary = QStringLiteral("rank 1 on gpu-b failed first: %1").arg(describeExitStatus(128 + signal));
        record.exits.insert(1, RankExit{128 + signal, kRankDied});
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{0, "gpu-a"}, {1, "gpu-b"}});
        if (startPid >= 0)
            diagnostics.addEvents({started(1, startPid)});
        if (ownError)
            diagnostics.addEvents({decoded(R"({"v":"1.0","type":"error","rank":1,"time":1795000001,)"
                                           R"("kind":"data","message":"bad file","fatal":true})")});
        KernelLogCapture capture;
        capture.node = 1;
        capture.host = QStringLiteral("gpu-b");
        capture.source = problem.isEmpty() ? QStringLiteral("dmesg --time-format iso") : QString();
        capture.problem = problem;
        capture.text = log;
        if (pidFilePid >= 0)
            capture.rankPids.insert(1, pidFilePid);
        diagnostics.addKernelLog(capture);
        diagnostics.runEnded(record);
        const QVector<Diagnosis> found = diagnostics.update(0.0);
        QCOMPARE(found.size(), 1);
        const QString message = found.front().message;
        QVERIFY2(message.startsWith(record.summary), qPrintable(message));
        for (const QString& fragment : says)
            QVERIFY2(message.contains(fragment),
                     qPrintable(QStringLiteral("missing '%1' in: %2").arg(fragment, message)));
        for (const QString& fragment : saysNot)
            QVERIFY2(!message.contains(fragment),
                     qPrintable(QStringLiteral("unexpected '%1' in: %2").arg(fragment, message)));
        if (says.isEmpty())
            QCOMPARE(message, record.summary);
    }

    // Each node's log speaks for its own ranks only.
    void aKillOnAnotherNodeIsNotTheRanks() {
        RunRecord record;
        record.state = QStringLiteral("failed");
        record.created = kRunCreated;
        record.firstFailedRank = 1;
        record.summary = QStringLiteral("rank 1 on gpu-b failed first: killed by SIGKILL");
        record.exits.insert(1, RankExit{128 + 9, kRankDied});
        RunDiagnostics diagnostics;
        diagnostics.setRankHosts({{0, "gpu-a"}, {1, "gpu-b"}});
        diagnostics.addEvents({started(1, 4242)});
        KernelLogCapture a;
        a.node = 0;
        a.host = QStringLiteral("gpu-a");
        a.source = QStringLiteral("dmesg");
        a.text = oomKill(0.5, 4242, "rankscope-train");
        KernelLogCapture b = a;
        b.node = 1;
        b.host = QStringLiteral("gpu-b");
        b.text = isoLine(3, "eth0: link up");
        diagnostics.addKernelLog(a);
        diagnostics.addKernelLog(b);
        diagnostics.runEnded(record);
        const QString message = diagnostics.update(0.0).value(0).message;
        QVERIFY2(
            message.endsWith(QLatin1String("the kernel log of gpu-b (read with dmesg) shows no OOM kill of rank 1, "
                                           "so the SIGKILL came from elsewhere (a user, a scheduler, a watchdog)")),
            qPrintable(message));
    }
};

QTEST_GUILESS_MAIN(tst_Diagnostics)
#include "tst_diagnostics.moc"
