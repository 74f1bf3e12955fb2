// SPDX-License-Identifier: MIT
// Rank sets as people write them ("0-3,5,7"): what every front end prints, and what the log view's rank filter
// and `inspect --ranks` read back.
#include "core/ranklist.h"

#include <QtTest>

using rankscope::formatRankList;
using rankscope::parseRankList;

class tst_RankList final : public QObject {
    Q_OBJECT

private slots:
    void format_data() {
        QTest::addColumn<QVector<int>>("ranks");
        QTest::addColumn<QString>("text");
        QTest::newRow("none") << QVector<int>{} << QString();
        QTest::newRow("one") << QVector<int>{4} << QStringLiteral("4");
        QTest::newRow("two apart") << QVector<int>{1, 3} << QStringLiteral("1,3");
        QTest::newRow("two in a row") << QVector<int>{1, 2} << QStringLiteral("1-2");
        QTest::newRow("runs and singles") << QVector<int>{0, 1, 2, 3, 5, 7, 8} << QStringLiteral("0-3,5,7-8");
        QTest::newRow("any order") << QVector<int>{7, 0, 2, 1, 3, 5} << QStringLiteral("0-3,5,7");
        QTest::newRow("duplicates") << QVector<int>{3, 1, 3, 2, 1, 9, 9} << QStringLiteral("1-3,9");
        QTest::newRow("a run at the end") << QVector<int>{0, 5, 6, 7} << QStringLiteral("0,5-7");
    }

    void format() {
        QFETCH(QVector<int>, ranks);
        QFETCH(QString, text);
        QCOMPARE(formatRankList(ranks), text);
    }

    void parse_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QList<int>>("ranks");
        QTest::newRow("empty") << QString() << QList<int>{};
        QTest::newRow("blanks and commas") << QStringLiteral(" , ,") << QList<int>{};
        QTest::newRow("one") << QStringLiteral("5") << QList<int>{5};
        QTest::newRow("a range") << QStringLiteral("2-4") << QList<int>{2, 3, 4};
        QTest::newRow("a range of one") << QStringLiteral("3-3") << QList<int>{3};
        QTest::newRow("ranges and ranks, blanks")
            << QStringLiteral(" 0 - 2 , 7,9-10 ") << QList<int>{0, 1, 2, 7, 9, 10};
        QTest::newRow("overlapping") << QStringLiteral("0-3,2-4,1") << QList<int>{0, 1, 2, 3, 4};
    }

    void parse() {
        QFETCH(QString, text);
        QFETCH(QList<int>, ranks);
        QString error;
        const std::optional<QSet<int>> parsed = parseRankList(text, &error);
        QVERIFY2(parsed, qPrintable(error));
        QList<int> sorted = parsed->values();
        std::sort(sorted.begin(), sorted.end());
        QCOMPARE(sorted, ranks);
        QVERIFY(error.isEmpty());
    }

    // A range may hold 100,001 ranks, no more (refused below): a typo of one digit does not ask for billions.
    void theLargestRange() {
        const std::optional<QSet<int>> parsed = parseRankList(QStringLiteral("0-100000"));
        QVERIFY(parsed);
        QCOMPARE(parsed->size(), 100001);
        QVERIFY(parsed->contains(0) && parsed->contains(100000));
    }

    // Each refusal names the part that is wrong, so that a long list's one typo is found.
    void refuses_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("part");
        QTest::newRow("backwards") << QStringLiteral("0,3-1") << QStringLiteral("3-1");
        QTest::newRow("a word") << QStringLiteral("1,x") << QStringLiteral("x");
        QTest::newRow("negative") << QStringLiteral("-2") << QStringLiteral("-2");
        QTest::newRow("open end") << QStringLiteral("0-") << QStringLiteral("0-");
        QTest::newRow("three bounds") << QStringLiteral("1-2-3") << QStringLiteral("1-2-3");
        QTest::newRow("end not a number") << QStringLiteral("1-y") << QStringLiteral("1-y");
        QTest::newRow("too long a range") << QStringLiteral("0-100001") << QStringLiteral("0-100001");
        QTest::newRow("the first bad part") << QStringLiteral("0, 4-2 ,z") << QStringLiteral("4-2");
    }

    void refuses() {
        QFETCH(QString, text);
        QFETCH(QString, part);
        QString error;
        QVERIFY(!parseRankList(text, &error));
        QCOMPARE(error, QStringLiteral("\"%1\" is not a rank or a range of ranks such as 0-3").arg(part));
        QVERIFY(!parseRankList(text)); // no place for the error: refused all the same
    }

    // What one prints, the other reads back as the same set.
    void roundTrip() {
        const QVector<int> ranks{0, 1, 2, 3, 8, 10, 11, 63};
        const std::optional<QSet<int>> back = parseRankList(formatRankList(ranks));
        QVERIFY(back);
        QCOMPARE(*back, QSet<int>(ranks.cbegin(), ranks.cend()));
    }
};

QTEST_GUILESS_MAIN(tst_RankList)
#include "tst_ranklist.moc"
