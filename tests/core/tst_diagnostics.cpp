// SPDX-License-Identifier: MIT
// Live diagnosis on event streams recorded from real trainer runs (tests/data/events: a 2-rank run where
// rank 1 hangs at step 3 with --hang-at-step, heartbeats every 0.5 s), replayed in time order as the engine
// would deliver them, and on synthetic streams for what a recording cannot pin down.
#include "core/diagnostics.h"
#include "core/eventstreamparser.h"

#include <QFile>
#include <QJsonDocument>
#include <QTest>

#include <algorithm>

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
QVector<Diagnosis> replay(RunDiagnostics& diagnostics, const QVector<TrainerEvent>& events, DiagnosisKind kind,
                          double until = 0.0) {
    QVector<Diagnosis> found;
    const double end = std::max(until, events.back().time);
    qsizetype next = 0;
    for (double now = events.front().time; now <= end + 1e-9; now += 0.05) {
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
        QVERIFY2(hang.message.startsWith(QLatin1String("rank 1 on node-a stuck at step 2 in phase forward (collective #5)")),
                 qPrintable(hang.message));
        QVERIFY2(hang.message.endsWith(QLatin1String("ranks 0 waiting in collective #6")), qPrintable(hang.message));
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

    // Every running rank inside the same collective, none missing: no rank is blamed.
    void everyRankInsideOneCollectiveBlamesNoRank() {
        QVector<TrainerEvent> events;
        for (int i = 0; i < 8; ++i)
            for (int rank = 0; rank < 3; ++rank)
                events << heartbeat(rank, 2000.0 + i, 7, "backward", 12, 11);
        RunDiagnostics diagnostics;
        const QVector<Diagnosis> hangs = replay(diagnostics, events, DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        QVERIFY2(hangs.front().message.startsWith(QLatin1String("every running rank (0-2) is stuck inside collective #12")),
                 qPrintable(hangs.front().message));
    }

    // A rank that is merely slower to reach the collective, but moving, is not a hang; once it arrives the
    // run goes on and nothing is reported.
    void aRankStillMovingIsNotAHang() {
        QVector<TrainerEvent> events;
        for (int i = 0; i < 6; ++i) {
            events << heartbeat(0, 3000.0 + i, 4, "backward", 9, 8);
            events << heartbeat(1, 3000.0 + i + 0.5, 4, i % 2 ? "forward" : "backward", 8, 8); // its phase moves
        }
        RunDiagnostics diagnostics;
        QVERIFY(replay(diagnostics, events, DiagnosisKind::Hang).isEmpty());
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
        QVERIFY2(found.front().message.contains(QLatin1String("ranks 1: 1.5000001")), qPrintable(found.front().message));
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
};

QTEST_GUILESS_MAIN(tst_Diagnostics)
#include "tst_diagnostics.moc"
