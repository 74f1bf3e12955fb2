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
};

QTEST_MAIN(TestLogModel)
#include "tst_logmodel.moc"
