// SPDX-License-Identifier: MIT
// LogCollapseModel over LogModel -> LogFilterProxy, every model under QAbstractItemModelTester while
// recorded logs are appended live.
#include "logtestdata.h"
#include "logview/logcollapsemodel.h"
#include "logview/logfilterproxy.h"
#include "logview/logmodel.h"

#include <QAbstractItemModelTester>
#include <QtTest>

#include <algorithm>

using rankscope::RankLogLine;
using rankscope::RankStream;
using rankscope::gui::LogCollapseModel;
using rankscope::gui::LogFilterProxy;
using rankscope::gui::LogModel;
namespace test = rankscope::test;

class TestLogCollapseModel final : public QObject {
    Q_OBJECT

private:
    struct Fixture {
        LogModel model;
        LogFilterProxy proxy;
        LogCollapseModel collapse;
        QAbstractItemModelTester modelTester{&model, QAbstractItemModelTester::FailureReportingMode::QtTest};
        QAbstractItemModelTester proxyTester{&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest};
        QAbstractItemModelTester collapseTester{&collapse, QAbstractItemModelTester::FailureReportingMode::QtTest};
        Fixture() {
            proxy.setSourceModel(&model);
            collapse.setSourceModel(&proxy);
        }
        void feed(const QVector<RankLogLine>& lines, double tick = 0.02) {
            for (const auto& batch : test::intoBatches(lines, tick))
                model.appendLines(batch);
        }
        // Top-level rows whose text starts with "ranks ".
        QVector<QModelIndex> groups() const {
            QVector<QModelIndex> found;
            for (int row = 0; row < collapse.rowCount(); ++row) {
                if (collapse.rowCount(collapse.index(row, 0)) > 0)
                    found.append(collapse.index(row, LogModel::TextColumn));
            }
            return found;
        }
        // Every proxy row appears exactly once, as a line of its own or as a child.
        void verifyCoversProxy() const {
            int shown = 0;
            for (int row = 0; row < collapse.rowCount(); ++row) {
                const int children = collapse.rowCount(collapse.index(row, 0));
                shown += children > 0 ? children : 1;
                QVERIFY(children != 1);
            }
            QCOMPARE(shown, proxy.rowCount());
            for (int row = 0; row < proxy.rowCount(); ++row)
                QCOMPARE(collapse.sourceRow(collapse.indexForSourceRow(row)), row);
        }
    };

private Q_SLOTS:
    void identicalLinesOfTwoRanksCollapse() {
        Fixture f;
        f.feed(test::recordedTrainerRun(QStringLiteral("ok")));
        const int before = f.collapse.rowCount();
        QVERIFY(f.groups().isEmpty()); // the trainer's own lines differ between ranks
        const QString warning = QStringLiteral("UserWarning: TypedStorage is deprecated");
        f.model.appendLines(
            {{0, RankStream::Err, 100, warning, 1795328001.0}, {1, RankStream::Err, 100, warning, 1795328001.2}});
        QCOMPARE(f.collapse.rowCount(), before + 1);
        const QModelIndex group = f.collapse.index(before, LogModel::TextColumn);
        QCOMPARE(group.data().toString(), QStringLiteral("ranks 0-1: ") + warning);
        QCOMPARE(group.data(LogCollapseModel::MemberCountRole).toInt(), 2);
        const QModelIndex parent = group.siblingAtColumn(0);
        QCOMPARE(f.collapse.rowCount(parent), 2);
        for (int rank = 0; rank < 2; ++rank) {
            const QModelIndex child = f.collapse.index(rank, LogModel::TextColumn, parent);
            QCOMPARE(child.data().toString(), warning);
            QCOMPARE(child.data(LogModel::RankRole).toInt(), rank);
            QCOMPARE(child.parent(), parent);
        }
        f.verifyCoversProxy();
    }

    void ncclSampleCollapsesAcrossRanksLive() {
        Fixture f;
        // Three ranks printing in step, as they do live; one line per batch tick per rank.
        f.feed(test::readNcclSample(QStringLiteral("nccl/issues/857"), 1700000000.0), 0.005);
        const auto groups = f.groups();
        QStringList texts;
        for (const auto& group : groups)
            texts << group.data().toString();
        QVERIFY2(
            texts.contains(QStringLiteral("ranks 0-2: misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]")),
            qPrintable(texts.join(u'\n')));
        QVERIFY(texts.contains(QStringLiteral("ranks 0-2: NCCL INFO Bootstrap : Using eth0:162.30.2.40<0>")));
        for (const auto& group : groups) {
            QCOMPARE(group.siblingAtColumn(LogModel::RankColumn).data().toString(), QStringLiteral("3 ranks"));
            QCOMPARE(f.collapse.rowCount(group.siblingAtColumn(0)), 3);
        }
        f.verifyCoversProxy();
    }

    void separateWhenInterleavedRepeatedOrFarApart() {
        Fixture f;
        const auto line = [](int rank, qint64 number, const char* text, double time) {
            return RankLogLine{rank, RankStream::Err, number, QString::fromLatin1(text), time};
        };
        f.model.appendLines({line(0, 1, "A", 100.0)});
        // Rank 1 printed B after rank 0's A began: its A would move before its B, so it stays apart.
        f.model.appendLines({line(1, 1, "B", 100.1), line(1, 2, "A", 100.2)});
        QVERIFY(f.groups().isEmpty());
        QCOMPARE(f.collapse.rowCount(), 3);
        // Rank 0's next A joins rank 1's.
        f.model.appendLines({line(0, 2, "A", 100.3)});
        QCOMPARE(f.collapse.rowCount(), 3);
        QCOMPARE(f.groups().size(), 1);
        QCOMPARE(f.groups().first().data().toString(), QStringLiteral("ranks 0-1: A"));
        // A rank already in the group starts a new row; so does a line too long after the group began.
        f.model.appendLines({line(0, 3, "A", 100.4)});
        f.model.appendLines({line(2, 1, "A", 120.0)});
        QCOMPARE(f.collapse.rowCount(), 5);
        f.model.appendLines({line(3, 1, "A", 121.0)});
        QCOMPARE(f.collapse.rowCount(), 5);
        QCOMPARE(f.groups().size(), 2);
        QCOMPARE(f.groups().last().data().toString(), QStringLiteral("ranks 2-3: A"));
        f.verifyCoversProxy();
    }

    void windowAndFilterChangesStayConsistent() {
        Fixture f;
        f.model.setMaxRows(12);
        QVector<RankLogLine> lines = test::readNcclSample(QStringLiteral("nccl/issues/857"), 1700000000.0);
        lines += test::readNcclSample(QStringLiteral("XPixelGroup"), 1700000000.2);
        for (const auto& batch : test::intoBatches(lines, 0.005)) {
            f.model.appendLines(batch);
            f.verifyCoversProxy();
        }
        QVERIFY(f.model.droppedRows() > 0);
        f.proxy.setRanks({0, 1});
        f.verifyCoversProxy();
        f.proxy.setPattern(QStringLiteral("Watchdog|Exception"));
        f.verifyCoversProxy();
        QCOMPARE(f.collapse.rowCount(), f.proxy.rowCount()); // different texts: nothing collapses
        f.proxy.setPattern({});
        f.proxy.setRanks({});
        // Continuations of a line of its own keep the tree in step.
        const int lastRow = f.model.rowCount() - 1;
        const auto& last = f.model.line(lastRow);
        f.model.appendLines({{last.rank, last.stream, last.lineNumber, QStringLiteral(" [continued]"), 1800000000.0}});
        f.verifyCoversProxy();
        f.model.clear();
        QCOMPARE(f.collapse.rowCount(), 0);
    }

    // A line that arrives in pieces is grouped by its whole text: once continued, the next rank's same line
    // joins it.
    void aContinuedLineGroupsByItsWholeText() {
        Fixture f;
        f.model.appendLines({{0, RankStream::Err, 1, QStringLiteral("Runtime"), 100.0}});
        f.model.appendLines({{0, RankStream::Err, 1, QStringLiteral("Error: NCCL error"), 100.1}});
        QCOMPARE(f.collapse.index(0, LogModel::TextColumn).data().toString(),
                 QStringLiteral("RuntimeError: NCCL error"));
        f.model.appendLines({{1, RankStream::Err, 1, QStringLiteral("RuntimeError: NCCL error"), 100.2}});
        QCOMPARE(f.collapse.rowCount(), 1);
        QCOMPARE(f.collapse.index(0, LogModel::TextColumn).data().toString(),
                 QStringLiteral("ranks 0-1: RuntimeError: NCCL error"));
        f.verifyCoversProxy();
    }

    // The time window decides what is "close together", and a new window applies to the lines already shown.
    void theTimeWindowAppliesToLinesShown() {
        Fixture f;
        const QString text = QStringLiteral("NCCL WARN Call to connect returned Connection refused");
        f.model.appendLines({{0, RankStream::Err, 1, text, 100.0}, {1, RankStream::Err, 1, text, 101.0}});
        QCOMPARE(f.groups().size(), 1);
        f.collapse.setTimeWindow(0.5);
        QCOMPARE(f.collapse.timeWindow(), 0.5);
        QVERIFY(f.groups().isEmpty());
        QCOMPARE(f.collapse.rowCount(), 2);
        f.collapse.setTimeWindow(LogCollapseModel::kDefaultTimeWindow);
        QCOMPARE(f.groups().size(), 1);
        f.verifyCoversProxy();
    }

    // A filter change rebuilds the tree with its groups, and lines that come after join them.
    void groupsSurviveAFilterChange() {
        Fixture f;
        const QString text = QStringLiteral("UserWarning: TypedStorage is deprecated");
        f.model.appendLines({{0, RankStream::Err, 1, text, 100.0},
                             {1, RankStream::Err, 1, text, 100.1},
                             {2, RankStream::Err, 1, QStringLiteral("other"), 100.2}});
        f.proxy.setPattern(QStringLiteral("deprecated"));
        QCOMPARE(f.collapse.rowCount(), 1);
        QCOMPARE(f.groups().size(), 1);
        f.model.appendLines({{3, RankStream::Err, 1, text, 100.3}});
        QCOMPARE(f.collapse.rowCount(), 1);
        QCOMPARE(f.groups().first().data().toString(), QStringLiteral("ranks 0-1,3: ") + text);
        f.verifyCoversProxy();
    }

    // Live lines and the window moving on change the tree in place: no reset, which would collapse the rows the
    // user expanded. A batch that both starts a row and adds to an older group says both; the group's row is
    // repainted ("ranks 0-1" becomes "ranks 0-2").
    void liveChangesAreNoReset() {
        Fixture f;
        f.model.setMaxRows(6);
        QSignalSpy reset(&f.collapse, &QAbstractItemModel::modelReset);
        QSignalSpy inserted(&f.collapse, &QAbstractItemModel::rowsInserted);
        QSignalSpy changed(&f.collapse, &QAbstractItemModel::dataChanged);
        const QString text = QStringLiteral("NCCL INFO Bootstrap : Using eth0");
        f.model.appendLines({{0, RankStream::Err, 1, text, 100.0}, {1, RankStream::Err, 1, text, 100.1}});
        QCOMPARE(f.groups().size(), 1);
        inserted.clear();
        changed.clear();
        f.model.appendLines({{3, RankStream::Err, 1, QStringLiteral("a line of its own"), 100.15},
                             {2, RankStream::Err, 1, text, 100.2}});
        QCOMPARE(f.collapse.rowCount(), 2);
        QCOMPARE(f.groups().first().data().toString(), QStringLiteral("ranks 0-2: ") + text);
        QCOMPARE(inserted.size(), 2);
        QCOMPARE(inserted.at(0).at(0).value<QModelIndex>(), f.collapse.index(0, 0)); // rank 2 joins the group
        QCOMPARE(inserted.at(0).at(1).toInt(), 2);
        QCOMPARE(inserted.at(1).at(0).value<QModelIndex>(), QModelIndex()); // the new line, at the top level
        QVERIFY(std::any_of(changed.cbegin(), changed.cend(), [&](const QList<QVariant>& signal) {
            return signal.at(0).value<QModelIndex>() == f.collapse.index(0, 0);
        }));
        // The window moves on: rows leave without a reset either.
        for (int line = 2; line <= 5; ++line)
            f.model.appendLines({{3, RankStream::Err, line, QStringLiteral("more %1").arg(line), 100.2 + line}});
        QVERIFY(f.model.droppedRows() > 0);
        QCOMPARE(reset.size(), 0);
        f.verifyCoversProxy();
    }

    // The window moving on takes one rank's line out of a group of two: the other is left as a line of its own,
    // with no children.
    void aGroupLeftWithOneRankIsALineOfItsOwn() {
        Fixture f;
        f.model.setMaxRows(3);
        const QString text = QStringLiteral("NCCL INFO Bootstrap : Using eth0");
        f.model.appendLines({{0, RankStream::Err, 1, text, 100.0}, {1, RankStream::Err, 1, text, 100.1}});
        f.model.appendLines({{2, RankStream::Err, 1, QStringLiteral("next"), 100.2}});
        f.model.appendLines({{2, RankStream::Err, 2, QStringLiteral("after"), 100.3}}); // rank 0's line leaves
        QCOMPARE(f.model.droppedRows(), 1);
        QCOMPARE(f.collapse.rowCount(), 3);
        const QModelIndex left = f.collapse.index(0, LogModel::TextColumn);
        QCOMPARE(f.collapse.rowCount(left.siblingAtColumn(0)), 0);
        QCOMPARE(left.data().toString(), text);
        QCOMPARE(left.data(LogModel::RankRole).toInt(), 1);
        QCOMPARE(left.data(LogCollapseModel::MemberCountRole).toInt(), 1);
        f.verifyCoversProxy();
    }

    // A group's row is no line of the source; its children and lines of their own are. Rows past the source's
    // have no place.
    void sourceRowsAndPlaces() {
        Fixture f;
        const QString text = QStringLiteral("NCCL INFO Bootstrap : Using eth0");
        f.model.appendLines({{0, RankStream::Err, 1, text, 100.0},
                             {1, RankStream::Err, 1, text, 100.1},
                             {2, RankStream::Err, 1, QStringLiteral("alone"), 100.2}});
        const QModelIndex group = f.collapse.index(0, 0);
        QCOMPARE(f.collapse.sourceRow(group), -1);
        QCOMPARE(f.collapse.sourceRow(f.collapse.index(1, 0, group)), 1);
        QCOMPARE(f.collapse.sourceRow(f.collapse.index(1, 0)), 2);
        QVERIFY(!f.collapse.indexForSourceRow(3).isValid());
        QVERIFY(!f.collapse.indexForSourceRow(-1).isValid());
        // The group's tooltip names its ranks, on the rank and the text columns.
        QCOMPARE(group.siblingAtColumn(LogModel::RankColumn).data(Qt::ToolTipRole).toString(),
                 QStringLiteral("Printed by ranks 0-1"));
        QCOMPARE(group.siblingAtColumn(LogModel::TextColumn).data(Qt::ToolTipRole).toString(),
                 QStringLiteral("Printed by ranks 0-1"));
        QCOMPARE(group.data(LogCollapseModel::RankListRole).toString(), QStringLiteral("0-1"));
    }
};

QTEST_MAIN(TestLogCollapseModel)
#include "tst_logcollapsemodel.moc"
