// SPDX-License-Identifier: MIT
#include "core/firstfailure.h"

#include <QtTest>

using namespace rankscope;

namespace {

const QDateTime t0 = QDateTime::fromSecsSinceEpoch(1'700'000'000, Qt::UTC);
QDateTime at(int ms) { return t0.addMSecs(ms); }

} // namespace

class tst_FirstFailure : public QObject {
    Q_OBJECT
private slots:
    void noFailureIsNoAnswer() {
        QMap<int, RankExit> exits{{0, {0, at(10)}}, {1, {0, at(12)}}};
        QVERIFY(!findFirstFailure(exits, {}, {}).has_value());
    }

    void theCulpritBeatsAnEarlierCollectiveError() {
        // Rank 0 noticed rank 1's death first (a collective error), but rank 1 failed on its own.
        QMap<int, RankExit> exits{{0, {1, at(50)}}, {1, {1, at(80)}}};
        QHash<int, ErrorEvent> errors{{0, {at(40), QStringLiteral("collective"), QStringLiteral("peer closed")}},
                                     {1, {at(45), QStringLiteral("injected"), QStringLiteral("at step 3")}}};
        const auto first = findFirstFailure(exits, errors, {});
        QVERIFY(first);
        QCOMPARE(first->rank, 1);
        QVERIFY2(first->cause.contains(QStringLiteral("injected: at step 3")), qPrintable(first->cause));
    }

    // What makes a failure a rank's own, and what only a consequence of another's (RunEngine then reads the
    // consequences of a culprit as stopped).
    void whatFailedOnItsOwn_data() {
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("errorKind"); // empty: no error event
        QTest::addColumn<QString>("lastWords");
        QTest::addColumn<bool>("onItsOwn");
        QTest::newRow("SIGKILL, nothing said") << 137 << QString() << QString() << true;
        QTest::newRow("lost node") << kLostExitStatus << QString() << QString() << true;
        QTest::newRow("SIGTERM, nothing said") << 143 << QString() << QString() << false;
        QTest::newRow("SIGTERM, told so") << 143 << QStringLiteral("terminated") << QString() << false;
        QTest::newRow("collective error") << 1 << QStringLiteral("collective") << QString() << false;
        QTest::newRow("rendezvous error") << 1 << QStringLiteral("rendezvous") << QString() << false;
        QTest::newRow("its own error") << 1 << QStringLiteral("injected") << QString() << true;
        QTest::newRow("its own error, then SIGABRT") << 134 << QStringLiteral("data") << QString() << true;
        QTest::newRow("exit 1 with last words") << 1 << QString() << QStringLiteral("Traceback") << true;
        QTest::newRow("exit 1, nothing said") << 1 << QString() << QString() << false;
    }
    void whatFailedOnItsOwn() {
        QFETCH(int, status);
        QFETCH(QString, errorKind);
        QFETCH(QString, lastWords);
        QFETCH(bool, onItsOwn);
        const RankExit exit{status, at(50)};
        const ErrorEvent error{at(40), errorKind, QStringLiteral("what it said")};
        QCOMPARE(failedOnItsOwn(exit, errorKind.isEmpty() ? nullptr : &error, lastWords), onItsOwn);
        // findFirstFailure prefers such a rank to an earlier consequence.
        const RankExit consequence{1, at(10)};
        QHash<int, ErrorEvent> errors{{1, {at(5), QStringLiteral("collective"), QStringLiteral("peer closed")}}};
        if (!errorKind.isEmpty())
            errors.insert(0, error);
        const auto first = findFirstFailure({{0, exit}, {1, consequence}}, errors, {{0, lastWords}});
        QVERIFY(first);
        QCOMPARE(first->rank, onItsOwn ? 0 : 1);
    }

    void aLateExitStillCountsWhenItsErrorCameBeforeTheTeardown() {
        // What CI saw: the peer's exit started the teardown; the culprit's exit was recorded after it began,
        // but its own error event was written before.
        QMap<int, RankExit> exits{{0, {1, at(50)}}, {1, {1, at(90)}}};
        QHash<int, ErrorEvent> errors{{0, {at(40), QStringLiteral("collective"), QStringLiteral("peer closed")}},
                                     {1, {at(30), QStringLiteral("injected"), QStringLiteral("at step 3")}}};
        const auto first = findFirstFailure(exits, errors, {}, at(60));
        QVERIFY(first);
        QCOMPARE(first->rank, 1);
    }

    // The teardown sends SIGKILL only its grace period after it began: a SIGKILL recorded in the first half of that
    // was the OOM killer's or a kill -9, whatever the order in which a busy node's supervisor noted the deaths.
    void killedBeforeTheTeardownCould_data() {
        QTest::addColumn<int>("status");
        QTest::addColumn<int>("seenMs"); // the teardown began at 60 ms, its grace is 3 s
        QTest::addColumn<bool>("killedBefore");
        QTest::newRow("SIGKILL just after the teardown began") << 137 << 80 << true;
        QTest::newRow("SIGKILL as it began") << 137 << 60 << true;
        QTest::newRow("SIGKILL half the grace after it began") << 137 << 1559 << true;
        QTest::newRow("SIGKILL later, where the node's clock may be behind") << 137 << 1560 << false;
        QTest::newRow("SIGKILL when its own came") << 137 << 3060 << false;
        QTest::newRow("SIGKILL before the teardown") << 137 << 50 << false; // no question: before it began
        QTest::newRow("SIGTERM just after the teardown began") << 143 << 80 << false;
        QTest::newRow("SIGSEGV just after the teardown began") << 139 << 80 << false;
        QTest::newRow("exit 1 just after the teardown began") << 1 << 80 << false;
    }
    void killedBeforeTheTeardownCould() {
        QFETCH(int, status);
        QFETCH(int, seenMs);
        QFETCH(bool, killedBefore);
        QCOMPARE(rankscope::killedBeforeTheTeardownCould({status, at(seenMs)}, at(60), 3000), killedBefore);
        QVERIFY(!rankscope::killedBeforeTheTeardownCould({status, at(seenMs)}, {}, 3000)); // no teardown
    }

    // What the kernel log test saw on a loaded machine: rank 1 was OOM-killed, rank 0's collective failed at once
    // and its exit, noted first, started the teardown; rank 1's death was noted 20 ms after that. Rank 1 is the
    // culprit; a SIGKILL as late as the teardown's own is the teardown's.
    void aSigkillNotedLateIsStillTheCulprit() {
        QMap<int, RankExit> exits{{0, {1, at(50)}}, {1, {137, at(80)}}};
        const QHash<int, ErrorEvent> errors{
            {0, {at(40), QStringLiteral("collective"), QStringLiteral("Connection closed by peer")}}};
        auto first = findFirstFailure(exits, errors, {}, at(60), 3000);
        QVERIFY(first);
        QCOMPARE(first->rank, 1);
        QCOMPARE(first->cause, QStringLiteral("killed by SIGKILL"));
        first = findFirstFailure(exits, errors, {}, at(60)); // a teardown that kills at once
        QCOMPARE(first->rank, 0);
        exits[1].seenAt = at(3100);
        first = findFirstFailure(exits, errors, {}, at(60), 3000);
        QCOMPARE(first->rank, 0);
    }

    void failuresCausedByTheTeardownAreNotCandidates() {
        QMap<int, RankExit> exits{{0, {1, at(50)}}, {1, {143, at(90)}}, {2, {1, at(95)}}};
        QHash<int, ErrorEvent> errors{{0, {at(40), QStringLiteral("collective"), QStringLiteral("peer closed")}},
                                     {2, {at(70), QStringLiteral("internal"), QStringLiteral("boom")}}};
        const auto first = findFirstFailure(exits, errors, {}, at(60));
        QVERIFY(first);
        QCOMPARE(first->rank, 0); // rank 2's own error came after the teardown began: its doing
    }

    // A rank the teardown ended (the user's stop, seen by a front end that did not stop it and so has no teardown
    // time) is no candidate, whatever its status.
    void ranksEndedByTheTeardownAreNotCandidates() {
        QMap<int, RankExit> exits{{0, {143, at(50), true}}, {1, {137, at(60), true}}};
        QVERIFY(!findFirstFailure(exits, {}, {}).has_value());
        exits.insert(2, {1, at(70)});
        const auto first = findFirstFailure(exits, {}, {});
        QVERIFY(first);
        QCOMPARE(first->rank, 2);
    }

    void lastWordsOnStderrMakeARankTheCause() {
        QMap<int, RankExit> exits{{0, {1, at(20)}}, {3, {1, at(30)}}};
        QHash<int, ErrorEvent> errors{{0, {at(10), QStringLiteral("collective"), QStringLiteral("peer closed")}}};
        QHash<int, QString> said{{3, QStringLiteral("Segmentation fault in libfoo")}};
        const auto first = findFirstFailure(exits, errors, said);
        QVERIFY(first);
        QCOMPARE(first->rank, 3);
        QVERIFY(first->cause.contains(QStringLiteral("its last words: Segmentation fault in libfoo")));
    }

    // The last line on stderr of a rank killed by a signal is whatever it was printing then, not why it ended: the
    // cause names the signal only.
    void aKilledRanksLastLineIsNoReason() {
        QMap<int, RankExit> exits{{3, {137, at(30)}}};
        QHash<int, QString> said{{3, QStringLiteral("epoch 1 step 40 loss 0.51")}};
        const auto first = findFirstFailure(exits, {}, said);
        QVERIFY(first);
        QCOMPARE(first->rank, 3);
        QCOMPARE(first->cause, describeExitStatus(137));
    }

    // Ranks that failed at the same millisecond, each in its own way: the lowest rank is named, whatever order the
    // exits were noted in.
    void aTieInTimeNamesTheLowestRank() {
        QMap<int, RankExit> exits;
        exits.insert(2, {137, at(20)});
        exits.insert(1, {134, at(20)});
        const auto first = findFirstFailure(exits, {}, {});
        QVERIFY(first);
        QCOMPARE(first->rank, 1);
        QVERIFY(first->alike.isEmpty());
    }

    void aSignalOtherThanSigtermIsPrimaryAndSigtermIsNot() {
        QMap<int, RankExit> exits{{0, {143, at(10)}}, {1, {137, at(20)}}};
        auto first = findFirstFailure(exits, {}, {});
        QVERIFY(first);
        QCOMPARE(first->rank, 1); // SIGKILL beats an earlier SIGTERM
        exits = {{0, {143, at(10)}}, {1, {kLostExitStatus, at(20)}}};
        first = findFirstFailure(exits, {}, {});
        QCOMPARE(first->rank, 1); // a lost node is primary too
    }

    void amongEqualsTheEarliestWins() {
        QMap<int, RankExit> exits{{0, {1, at(50)}}, {1, {1, at(20)}}, {2, {1, at(30)}}};
        QHash<int, ErrorEvent> errors{{0, {at(5), QStringLiteral("data"), QStringLiteral("bad file")}},
                                     {1, {at(15), QStringLiteral("internal"), QStringLiteral("oops")}}};
        const auto first = findFirstFailure(exits, errors, {});
        QVERIFY(first);
        QCOMPARE(first->rank, 0); // its error at 5 ms, though its exit was seen last
    }

    // Every rank that cannot read its data fails by itself with the same words: a shared cause, not rank 1's.
    void ranksThatFailedTheSameWayOnTheirOwnAreAlike() {
        const ErrorEvent missing{at(0), QStringLiteral("data"), QStringLiteral("train-images-idx3-ubyte not found")};
        QMap<int, RankExit> exits{{0, {3, at(21)}}, {1, {3, at(20)}}, {2, {3, at(22)}}, {3, {1, at(40)}}};
        QHash<int, ErrorEvent> errors{{0, missing},
                                      {1, missing},
                                      {2, missing},
                                      {3, {at(30), QStringLiteral("collective"), QStringLiteral("peer closed")}}};
        errors[0].time = at(11);
        errors[1].time = at(10);
        errors[2].time = at(12);
        auto first = findFirstFailure(exits, errors, {});
        QVERIFY(first);
        QCOMPARE(first->rank, 1);
        QCOMPARE(first->alike, (QVector<int>{0, 2})); // not rank 3, whose collective error is a consequence
        QCOMPARE(describeFirstFailure(*first, QStringLiteral("node-a"), 4),
                 QStringLiteral("ranks 0-2 failed alike, first rank 1 on node-a: exit status 3 (data: "
                                "train-images-idx3-ubyte not found)"));
        QCOMPARE(describeFirstFailure(*first, QStringLiteral("node-a"), 3),
                 QStringLiteral("every rank (0-2) failed alike, first rank 1 on node-a: exit status 3 (data: "
                                "train-images-idx3-ubyte not found)"));

        // Another exit status, or other words, is another failure.
        exits[2].status = 1;
        errors[0].message += QStringLiteral(" on node-b");
        first = findFirstFailure(exits, errors, {});
        QVERIFY(first);
        QCOMPARE(first->rank, 1);
        QVERIFY(first->alike.isEmpty());
        QCOMPARE(describeFirstFailure(*first, QStringLiteral("node-a"), 4),
                 QStringLiteral("rank 1 on node-a failed first: exit status 3 (data: train-images-idx3-ubyte not "
                                "found)"));
    }

    // Consequences are not alike causes: two ranks that both lost a peer did not share a fault.
    void consequencesAreNeverAlike() {
        const ErrorEvent closed{at(10), QStringLiteral("collective"), QStringLiteral("peer closed")};
        QMap<int, RankExit> exits{{0, {1, at(20)}}, {1, {1, at(21)}}};
        QHash<int, ErrorEvent> errors{{0, closed}, {1, closed}};
        const auto first = findFirstFailure(exits, errors, {});
        QVERIFY(first);
        QVERIFY(first->alike.isEmpty());
    }
};

QTEST_APPLESS_MAIN(tst_FirstFailure)
#include "tst_firstfailure.moc"
