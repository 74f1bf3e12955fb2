// SPDX-License-Identifier: MIT
// LogCollapseModel over LogModel -> LogFilterProxy, every model under QAbstractItemModelTester while
// recorded logs are appended live.
#include "logtestdata.h"
#include "logview/logcollapsemodel.h"
#include "logview/logfilterproxy.h"
#include "logview/logmodel.h"

#include <QAbstractItemModelTester>
#include <QtTest>

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
};

QTEST_MAIN(TestLogCollapseModel)
#include "tst_logcollapsemodel.moc"
