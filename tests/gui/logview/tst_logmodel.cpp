// SPDX-License-Identifier: MIT
// LogModel fed in batches from recorded runs, always under QAbstractItemModelTester.
#include "logtestdata.h"
#include "logview/logmodel.h"

#include <QAbstractItemModelTester>
#include <QtTest>

using rankscope::LogSeverity;
using rankscope::RankLogLine;
using rankscope::RankStream;
using rankscope::gui::LogModel;
namespace test = rankscope::test;

class TestLogModel final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void recordedRunOneInsertionPerBatch() {
        LogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVector<RankLogLine> all = test::recordedTrainerRun(QStringLiteral("ok"));
        all += test::readRankLog(QStringLiteral("events/recorded-fail-rank0.out"), 2, RankStream::Out, 1795328000.001);
        const auto batches = test::intoBatches(all, 0.02);
        QVERIFY(batches.size() > 3);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        int expectedRows = 0;
        for (const auto& batch : batches) {
            model.appendLines(batch);
            expectedRows += batch.size();
            QCOMPARE(model.rowCount(), expectedRows);
        }
        QCOMPARE(inserted.count(), batches.size());
        // Merged in arrival order.
        for (int row = 1; row < model.rowCount(); ++row)
            QVERIFY(model.line(row - 1).receivedAt <= model.line(row).receivedAt);
        QCOMPARE(model.droppedRows(), 0);
    }

    void batchIsSortedByTimeThenRank() {
        LogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsAboutToBeInserted);
        model.appendLines({{1, RankStream::Err, 1, QStringLiteral("b1"), 10.0},
                           {1, RankStream::Err, 2, QStringLiteral("b2"), 10.2},
                           {0, RankStream::Err, 1, QStringLiteral("a1"), 10.0},
                           {0, RankStream::Out, 1, QStringLiteral("a0"), 9.5}});
        QCOMPARE(inserted.count(), 1);
        QStringList texts;
        for (int row = 0; row < model.rowCount(); ++row)
            texts << model.line(row).text;
        QCOMPARE(texts, QStringList({"a0", "a1", "b1", "b2"}));
    }

    void continuationExtendsRow() {
        LogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.appendLines({{0, RankStream::Err, 1, QStringLiteral("[rank 0] epoch 1"), 1.0},
                           {1, RankStream::Err, 1, QStringLiteral("Runtime"), 1.0}});
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(int(model.line(1).severity), int(LogSeverity::Info));

        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        // The rest of rank 1's line, then a piece of a new line that is continued in the same batch.
        model.appendLines({{1, RankStream::Err, 1, QStringLiteral("Error: NCCL communicator was aborted"), 1.1},
                           {0, RankStream::Err, 2, QStringLiteral("[rank 0] epoch 1 "), 1.1},
                           {0, RankStream::Err, 2, QStringLiteral("step 2"), 1.15}});
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(inserted.count(), 1);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed.first().at(0).toModelIndex().row(), 1);
        QCOMPARE(model.line(1).text, QStringLiteral("RuntimeError: NCCL communicator was aborted"));
        QCOMPARE(model.line(1).receivedAt, 1.0);                        // the row keeps the time of its first piece
        QCOMPARE(int(model.line(1).severity), int(LogSeverity::Error)); // classified again, whole
        QVERIFY(model.line(1).nccl);
        QCOMPARE(model.line(2).text, QStringLiteral("[rank 0] epoch 1 step 2"));

        // The same line number on the other stream is a different line.
        model.appendLines({{1, RankStream::Out, 1, QStringLiteral("out 1"), 1.2}});
        QCOMPARE(model.rowCount(), 4);
    }

    void windowDropsOldestRows() {
        LogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMaxRows(10);
        QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
        QSignalSpy dropped(&model, &LogModel::droppedRowsChanged);
        const auto lines = test::readRankLog(QStringLiteral("events/recorded-ok-rank1.out"), 1, RankStream::Out, 5.0);
        QCOMPARE(lines.size(), 33);
        model.appendLines(lines.mid(0, 8));
        QCOMPARE(removed.count(), 0);
        model.appendLines(lines.mid(8, 7)); // 15 > 10: the 5 oldest go at once
        QCOMPARE(removed.count(), 1);
        QCOMPARE(removed.last().at(1).toInt(), 0);
        QCOMPARE(removed.last().at(2).toInt(), 4);
        QCOMPARE(model.rowCount(), 10);
        QCOMPARE(model.line(0).lineNumber, 6);
        QCOMPARE(model.droppedRows(), 5);
        QCOMPARE(dropped.last().at(0).toLongLong(), 5);

        // A batch larger than the window keeps only its newest lines.
        model.appendLines(lines.mid(15));
        QCOMPARE(model.rowCount(), 10);
        QCOMPARE(model.line(0).lineNumber, 24);
        QCOMPARE(model.line(9).lineNumber, 33);
        QCOMPARE(model.droppedRows(), 23);

        // A continuation of the newest line still finds its row after the drop.
        model.appendLines({{1, RankStream::Out, 33, QStringLiteral(" (continued)"), 9.0}});
        QVERIFY(model.line(9).text.endsWith(QStringLiteral(" (continued)")));

        model.setMaxRows(4);
        QCOMPARE(model.rowCount(), 4);
        QCOMPARE(model.line(0).lineNumber, 30);
    }

    void rolesHoldRawValues() {
        LogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.appendLines(test::readNcclSample(QStringLiteral("nccl/issues/857"), 1700000000.25));
        model.setRankHosts({{0, QStringLiteral("ai")}, {2, QStringLiteral("ai")}});
        QVERIFY(model.rowCount() > 10);
        const auto at = [&](int row, int column, int role) { return model.index(row, column).data(role); };
        QCOMPARE(at(0, LogModel::TimeColumn, LogModel::SortRole).typeId(), QMetaType::Double);
        QCOMPARE(at(0, LogModel::TimeColumn, LogModel::SortRole).toDouble(), 1700000000.25);
        QCOMPARE(at(0, LogModel::RankColumn, LogModel::SortRole).typeId(), QMetaType::Int);
        QCOMPARE(at(0, LogModel::SeverityColumn, LogModel::SortRole).typeId(), QMetaType::Int);
        QCOMPARE(at(0, LogModel::RankColumn, Qt::DisplayRole).toString(), QStringLiteral("ai:0"));
        int warnings = 0;
        for (int row = 0; row < model.rowCount(); ++row) {
            const int rank = model.line(row).rank;
            QCOMPARE(at(row, LogModel::RankColumn, Qt::DisplayRole).toString(),
                     rank == 1 ? QStringLiteral("1") : QStringLiteral("ai:%1").arg(rank));
            QVERIFY(at(row, 0, LogModel::NcclRole).toBool());
            QVERIFY(at(row, 0, Qt::BackgroundRole).isValid()); // NCCL lines are highlighted
            if (at(row, 0, LogModel::SeverityRole).toInt() == int(LogSeverity::Warning)) {
                ++warnings;
                QCOMPARE(at(row, LogModel::SeverityColumn, Qt::DisplayRole).toString(), QStringLiteral("warning"));
            }
        }
        QCOMPARE(warnings, 3);
        QVERIFY(at(0, LogModel::TextColumn, Qt::FontRole).value<QFont>().fixedPitch() ||
                at(0, LogModel::TextColumn, Qt::FontRole).value<QFont>().styleHint() == QFont::TypeWriter ||
                QFontInfo(at(0, LogModel::TextColumn, Qt::FontRole).value<QFont>()).fixedPitch());

        model.appendLines({{5, RankStream::Out, 1, QStringLiteral("plain line"), 1700000001.0}});
        QVERIFY(!at(model.rowCount() - 1, 0, Qt::BackgroundRole).isValid());
        // The stream column names the file the line is stored in (rank-N.out, .err, .events).
        QCOMPARE(at(model.rowCount() - 1, LogModel::StreamColumn, Qt::DisplayRole).toString(), QStringLiteral("out"));
        model.appendLines({{5, RankStream::Err, 2, QStringLiteral("to stderr"), 1700000002.0},
                           {5, RankStream::Events, 3, QStringLiteral("not an event"), 1700000003.0}});
        QCOMPARE(at(model.rowCount() - 2, LogModel::StreamColumn, Qt::DisplayRole).toString(), QStringLiteral("err"));
        QCOMPARE(at(model.rowCount() - 1, LogModel::StreamColumn, Qt::DisplayRole).toString(),
                 QStringLiteral("events"));
    }

    // A line read back from a run stored without arrival times says so, instead of a time in 1970.
    void storedLinesHaveNoTime() {
        LogModel model;
        model.appendLines({{0, RankStream::Out, 1, QStringLiteral("from an old store"), 0.0},
                           {0, RankStream::Out, 2, QStringLiteral("live"), 1700000000.5}});
        QCOMPARE(model.index(0, LogModel::TimeColumn).data().toString(), QStringLiteral("(stored)"));
        QVERIFY(model.index(0, LogModel::TimeColumn)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QLatin1String("not recorded")));
        QVERIFY(model.index(1, LogModel::TimeColumn).data().toString() != QLatin1String("(stored)"));
        QVERIFY(model.index(1, LogModel::TimeColumn).data(Qt::ToolTipRole).toString().startsWith(QLatin1String("20")));
    }

    // Lines the engine classified off the GUI thread keep its verdict; the model does not classify them again.
    void theEnginesVerdictIsKept() {
        LogModel model;
        RankLogLine line{3, RankStream::Err, 7, QStringLiteral("plain words"), 1700000000.0};
        line.severity = int(LogSeverity::Warning);
        line.nccl = true;
        model.appendLines({line});
        const QModelIndex text = model.index(0, LogModel::TextColumn);
        QCOMPARE(text.data(LogModel::SeverityRole).toInt(), int(LogSeverity::Warning));
        QVERIFY(text.data(LogModel::NcclRole).toBool());
        // The roles every view and filter reads, on any column.
        const QModelIndex time = model.index(0, LogModel::TimeColumn);
        QCOMPARE(time.data(LogModel::RankRole).toInt(), 3);
        QCOMPARE(time.data(LogModel::StreamRole).toInt(), int(RankStream::Err));
        QCOMPARE(time.data(LogModel::LineNumberRole).toLongLong(), 7);
        QCOMPARE(time.data(LogModel::TimeRole).toDouble(), 1700000000.0);
        QCOMPARE(time.data(LogModel::TextRole).toString(), QStringLiteral("plain words"));
    }

    // Hosts learnt after the lines came repaint the host:rank column of every row.
    void hostsRepaintTheRankColumn() {
        LogModel model;
        model.appendLines({{0, RankStream::Out, 1, QStringLiteral("a"), 1.0},
                           {1, RankStream::Out, 1, QStringLiteral("b"), 2.0},
                           {2, RankStream::Out, 1, QStringLiteral("c"), 3.0}});
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.setRankHosts({{1, QStringLiteral("gpu-b")}});
        QCOMPARE(changed.size(), 1);
        QCOMPARE(changed.at(0).at(0).toModelIndex(), model.index(0, LogModel::RankColumn));
        QCOMPARE(changed.at(0).at(1).toModelIndex(), model.index(2, LogModel::RankColumn));
        QCOMPARE(model.index(1, LogModel::RankColumn).data().toString(), QStringLiteral("gpu-b:1"));
    }

    // The first row continued: its change is signalled like any other row's.
    void continuingTheFirstRowIsSignalled() {
        LogModel model;
        model.appendLines({{0, RankStream::Err, 1, QStringLiteral("Runtime"), 1.0},
                           {1, RankStream::Err, 1, QStringLiteral("x"), 1.1}});
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.appendLines({{0, RankStream::Err, 1, QStringLiteral("Error: boom"), 1.2}});
        QCOMPARE(changed.size(), 1);
        QCOMPARE(changed.at(0).at(0).toModelIndex().row(), 0);
        QCOMPARE(model.line(0).text, QStringLiteral("RuntimeError: boom"));
    }

    // The rest of a line whose start has left the window cannot join it: it is a row of its own, not a write
    // before the model's first row.
    void theRestOfALineThatLeftTheWindow() {
        LogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMaxRows(2);
        model.appendLines({{0, RankStream::Out, 1, QStringLiteral("start of a long line"), 1.0}});
        model.appendLines(
            {{1, RankStream::Out, 1, QStringLiteral("b1"), 2.0}, {1, RankStream::Out, 2, QStringLiteral("b2"), 3.0}});
        QCOMPARE(model.line(0).text, QStringLiteral("b1"));
        model.appendLines({{0, RankStream::Out, 1, QStringLiteral(" and its end"), 4.0}});
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.line(0).text, QStringLiteral("b2"));
        QCOMPARE(model.line(1).text, QStringLiteral(" and its end"));
        QCOMPARE(model.line(1).rank, 0);
    }

    // Lines read back from the store go before what is held, and never twice: a line still held is not added
    // again, nor one of the events stream.
    void olderLinesAreNotShownTwice() {
        LogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMaxRows(3);
        const auto lines = test::readRankLog(QStringLiteral("events/recorded-ok-rank1.out"), 1, RankStream::Out, 5.0);
        model.appendLines(lines.mid(0, 6)); // lines 4 to 6 held
        QCOMPARE(model.firstLineHeld(1, RankStream::Out), 4);
        QCOMPARE(model.olderLines(), 3);
        model.prependOlder(lines.mid(1, 3)); // lines 2 to 4: 4 is held already
        QCOMPARE(model.rowCount(), 5);
        QCOMPARE(model.line(0).lineNumber, 2);
        QCOMPARE(model.line(1).lineNumber, 3);
        QCOMPARE(model.line(2).lineNumber, 4);
        QCOMPARE(model.line(3).lineNumber, 5);
        QCOMPARE(model.firstLineHeld(1, RankStream::Out), 2);
        QCOMPARE(model.olderLines(), 1);
    }

    // A new run: every row goes in one reset, the counts start again, and a line that has the number of one of
    // the last run's last lines is a new row, not the rest of a row that is gone.
    void clearStartsAgain() {
        LogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMaxRows(2);
        model.appendLines({{0, RankStream::Out, 1, QStringLiteral("a1"), 1.0},
                           {0, RankStream::Out, 2, QStringLiteral("a2"), 2.0},
                           {0, RankStream::Out, 3, QStringLiteral("a3"), 3.0}});
        QCOMPARE(model.droppedRows(), 1);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        QSignalSpy dropped(&model, &LogModel::droppedRowsChanged);
        model.clear();
        QCOMPARE(reset.size(), 1);
        QCOMPARE(model.rowCount(), 0);
        QCOMPARE(model.droppedRows(), 0);
        QCOMPARE(dropped.last().at(0).toLongLong(), 0);
        QCOMPARE(model.olderLines(), 0);
        QCOMPARE(model.firstLineHeld(0, RankStream::Out), 1);
        // Rank 0's line 3 was the last run's third row; this run's third row is rank 1's line 3. Rank 0's line 3 of
        // this run is a row of its own, not the rest of rank 1's.
        model.setMaxRows(10);
        model.appendLines({{1, RankStream::Out, 1, QStringLiteral("b1"), 10.0},
                           {1, RankStream::Out, 2, QStringLiteral("b2"), 10.1},
                           {1, RankStream::Out, 3, QStringLiteral("b3"), 10.2}});
        model.appendLines({{0, RankStream::Out, 3, QStringLiteral("rank 0 again"), 11.0}});
        QCOMPARE(model.rowCount(), 4);
        QCOMPARE(model.line(2).text, QStringLiteral("b3"));
        QCOMPARE(model.line(3).text, QStringLiteral("rank 0 again"));
    }
};

QTEST_MAIN(TestLogModel)
#include "tst_logmodel.moc"
