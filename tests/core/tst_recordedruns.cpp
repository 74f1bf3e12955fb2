// SPDX-License-Identifier: MIT
// Streams recorded from real 2-rank rankscope-trainer runs (stdout and stderr together, as a launcher
// captures them): everything decodes, nothing is lost, and the facts the debugger will diagnose from are
// there: who failed first and how, and where a hung rank and its waiting peer stand.
#include "core/eventstreamparser.h"
#include "core/runsummary.h"

#include <QFile>
#include <QtTest>

using namespace rankscope;

namespace {

struct Recording {
    RunSummary summary;
    int logLines = 0;
    int decodeErrors = 0;
    QStringList logs;
};

Recording load(const QString& name) {
    Recording r;
    for (int rank = 0; rank < 2; ++rank) {
        QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/events/recorded-%1-rank%2.out").arg(name).arg(rank));
        if (!file.open(QIODevice::ReadOnly))
            qFatal("missing recording %s", qPrintable(file.fileName()));
        EventStreamParser parser;
        ParsedBatch batch = parser.feed(file.readAll());
        batch.append(parser.finish());
        r.summary.add(batch.events);
        r.logLines += int(batch.logLines.size());
        r.decodeErrors += int(batch.errors.size());
        for (const OutputLine& line : batch.logLines)
            r.logs << line.text;
    }
    return r;
}

} // namespace

class TestRecordedRuns final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void cleanRun() {
        const Recording r = load(QStringLiteral("ok"));
        QCOMPARE(r.decodeErrors, 0);
        QVERIFY(std::any_of(r.logs.begin(), r.logs.end(),
                            [](const QString& l) { return l.startsWith("[rank 1] epoch 1/1 step 4/"); }));
        QCOMPARE(r.summary.worldSize(), 2);
        for (const RankState& s : r.summary.ranks()) {
            QCOMPARE(s.status, RankStatus::FinishedOk);
            QCOMPARE(s.step, 12);
            QCOMPARE(s.host, QStringLiteral("node-a"));
        }
        QCOMPARE(*r.summary.rank(0)->paramChecksum, *r.summary.rank(1)->paramChecksum);
    }

    void injectedFailure() {
        const Recording r = load(QStringLiteral("fail"));
        QCOMPARE(r.decodeErrors, 0);
        const RankState* failed = r.summary.rank(1);
        const RankState* peer = r.summary.rank(0);
        QCOMPARE(failed->status, RankStatus::Failed);
        QCOMPARE(failed->errors.first().kind, QStringLiteral("injected"));
        QVERIFY(failed->errors.first().message.contains(QStringLiteral("step 5")));
        QCOMPARE(peer->status, RankStatus::Failed);
        QCOMPARE(peer->errors.first().kind, QStringLiteral("collective"));
        // The root cause is the rank that failed first.
        QVERIFY(failed->errors.first().time <= peer->errors.first().time);
    }

    void hungRankAndItsWaitingPeer() {
        const Recording r = load(QStringLiteral("hang"));
        QCOMPARE(r.decodeErrors, 0);
        const RankState* hung = r.summary.rank(1);
        const RankState* waiting = r.summary.rank(0);
        // The hung rank never ends; its heartbeats keep reporting step 2 in forward, no collective open.
        QCOMPARE(hung->status, RankStatus::Running);
        QCOMPARE(hung->step, 2);
        QCOMPARE(hung->phase, QStringLiteral("forward"));
        QCOMPARE(hung->collectiveStarted, hung->collectiveFinished);
        // Its peer waited inside the next collective until Gloo's timeout, then said so.
        QCOMPARE(waiting->collectiveStarted, hung->collectiveFinished + 1);
        QCOMPARE(waiting->collectiveFinished, hung->collectiveFinished);
        QCOMPARE(waiting->status, RankStatus::Failed);
        QVERIFY(waiting->errors.first().message.contains(QStringLiteral("Timed out")));
    }
};

QTEST_GUILESS_MAIN(TestRecordedRuns)
#include "tst_recordedruns.moc"
