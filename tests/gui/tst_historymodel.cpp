// SPDX-License-Identifier: MIT
// The History tab's model over a real run store on disk: one row per stored run, newest first, each column's text
// and raw value, the state's colour, the headline, and a refresh that picks up runs stored since.
#include "historymodel.h"

#include <QAbstractItemModelTester>
#include <QBrush>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <ctime>

using namespace rankscope;
using rankscope::gui::HistoryModel;

namespace {

RunRecord run(const RunStore& store, const QDateTime& created, const QString& name, const QString& state) {
    RunRecord record;
    record.id = store.newRunId(created);
    record.name = name;
    record.mode = QStringLiteral("debug");
    record.state = state;
    record.created = created;
    record.worldSize = 2;
    return record;
}

QColor foreground(const HistoryModel& model, int row, int column) {
    const QVariant brush = model.index(row, column).data(Qt::ForegroundRole);
    return brush.isValid() ? brush.value<QBrush>().color() : QColor();
}

} // namespace

class TestHistoryModel final : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    const QDateTime m_morning{QDate(2026, 12, 7), QTime(9, 15, 30, 250), Qt::UTC};

private Q_SLOTS:
    // Started is shown in the user's time zone, so this one is not UTC (POSIX TZ, no tzdata needed).
    void initTestCase() {
        qputenv("TZ", "IST-5:30");
        tzset();
    }

    void eachColumnSaysItsPartOfTheRun() {
        RunStore store(m_dir.filePath(QStringLiteral("columns")));
        RunRecord failed = run(store, m_morning, QStringLiteral("bert-large"), QStringLiteral("failed"));
        failed.mode = QStringLiteral("submit");
        failed.worldSize = 16;
        failed.summary = QStringLiteral("rank 5 on node-b killed by SIGKILL");
        QVERIFY(store.save(failed));
        HistoryModel model(&store);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);

        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.columnCount(), int(HistoryModel::ColumnCount));
        const auto text = [&](int column) { return model.index(0, column).data().toString(); };
        QCOMPARE(text(HistoryModel::Id), failed.id);
        QCOMPARE(text(HistoryModel::Name), QStringLiteral("bert-large"));
        QCOMPARE(text(HistoryModel::Mode), QStringLiteral("submit"));
        QCOMPARE(text(HistoryModel::State), QStringLiteral("failed"));
        QCOMPARE(text(HistoryModel::Started), QStringLiteral("2026-12-07 14:45:30")); // 09:15:30.250 UTC
        QCOMPARE(text(HistoryModel::Ranks), QStringLiteral("16"));
        QCOMPARE(text(HistoryModel::Summary), failed.summary);
        QCOMPARE(model.index(0, HistoryModel::Summary).data(Qt::ToolTipRole).toString(), failed.summary);
        QCOMPARE(model.index(0, HistoryModel::Name).data(HistoryModel::RunIdRole).toString(), failed.id);
        QCOMPARE(model.record(0).id, failed.id);
        QVERIFY(model.record(1).id.isEmpty());
        QVERIFY(!model.index(0, HistoryModel::Name).data(Qt::DecorationRole).isValid());
        QVERIFY(!model.index(0, HistoryModel::ColumnCount).data().isValid());
    }

    // Sorted as values: the start to the millisecond, the rank count as a number ("16" sorts after "2").
    void sortRoleHoldsRawValues() {
        RunStore store(m_dir.filePath(QStringLiteral("sort")));
        RunRecord record = run(store, m_morning, QStringLiteral("r"), QStringLiteral("finished"));
        record.worldSize = 16;
        QVERIFY(store.save(record));
        HistoryModel model(&store);
        const auto raw = [&](int column) { return model.index(0, column).data(HistoryModel::SortRole); };
        QCOMPARE(raw(HistoryModel::Started).toLongLong(), m_morning.toMSecsSinceEpoch());
        QCOMPARE(raw(HistoryModel::Ranks).typeId(), QMetaType::Int);
        QCOMPARE(raw(HistoryModel::Ranks).toInt(), 16);
        QCOMPARE(raw(HistoryModel::Name).toString(), QStringLiteral("r"));
        QCOMPARE(raw(HistoryModel::Id).toString(), record.id);
        QCOMPARE(raw(HistoryModel::State).toString(), QStringLiteral("finished"));
        QCOMPARE(raw(HistoryModel::Mode).toString(), QStringLiteral("debug"));
    }

    void newestRunFirst() {
        RunStore store(m_dir.filePath(QStringLiteral("order")));
        QVERIFY(store.save(run(store, m_morning, QStringLiteral("first"), QStringLiteral("finished"))));
        QVERIFY(store.save(run(store, m_morning.addSecs(3600), QStringLiteral("third"), QStringLiteral("finished"))));
        QVERIFY(store.save(run(store, m_morning.addSecs(60), QStringLiteral("second"), QStringLiteral("finished"))));
        HistoryModel model(&store);
        QCOMPARE(model.rowCount(), 3);
        QStringList names;
        for (int row = 0; row < model.rowCount(); ++row)
            names << model.index(row, HistoryModel::Name).data().toString();
        QCOMPARE(names, (QStringList{"third", "second", "first"}));
        QCOMPARE(model.rowOf(model.record(2).id), 2);
        QCOMPARE(model.rowOf(model.record(0).id), 0);
        QCOMPARE(model.rowOf(QStringLiteral("20261207-091530-nope")), -1);
    }

    // The verdict where the run has one (the root cause with the rank it waited on), else the summary; a run
    // with neither shows its id as its tooltip.
    void summaryIsTheHeadline() {
        RunStore store(m_dir.filePath(QStringLiteral("headline")));
        RunRecord judged = run(store, m_morning, QStringLiteral("judged"), QStringLiteral("failed"));
        judged.summary = QStringLiteral("rank 0 on localhost exited with status 1");
        judged.verdict = QStringLiteral("rank 0 on localhost exited with status 1 waiting on rank 1, hung");
        QVERIFY(store.save(judged));
        RunRecord quiet = run(store, m_morning.addSecs(-60), QStringLiteral("quiet"), QStringLiteral("finished"));
        QVERIFY(store.save(quiet));
        HistoryModel model(&store);
        QCOMPARE(model.index(0, HistoryModel::Summary).data().toString(), judged.verdict);
        QCOMPARE(model.index(0, HistoryModel::Id).data(Qt::ToolTipRole).toString(), judged.verdict);
        QCOMPARE(model.index(1, HistoryModel::Summary).data().toString(), QString());
        QCOMPARE(model.index(1, HistoryModel::Summary).data(Qt::ToolTipRole).toString(), quiet.id);
    }

    void stateColouredByWhatItMeans_data() {
        QTest::addColumn<QString>("state");
        QTest::addColumn<QColor>("colour"); // invalid: the view's own
        const QColor red(0xc6, 0x28, 0x28);
        const QColor blue(0x15, 0x65, 0xc0);
        QTest::newRow("failed") << "failed" << red;
        QTest::newRow("lost") << "lost" << red;
        QTest::newRow("running") << "running" << blue;
        QTest::newRow("launching") << "launching" << blue;
        QTest::newRow("finished") << "finished" << QColor();
        QTest::newRow("stopped") << "stopped" << QColor();
    }
    void stateColouredByWhatItMeans() {
        QFETCH(QString, state);
        QFETCH(QColor, colour);
        RunStore store(m_dir.filePath(QStringLiteral("state-") + state));
        QVERIFY(store.save(run(store, m_morning, QStringLiteral("r"), state)));
        HistoryModel model(&store);
        QCOMPARE(foreground(model, 0, HistoryModel::State), colour);
        // Only the state's cell.
        QCOMPARE(foreground(model, 0, HistoryModel::Name), QColor());
    }

    void refreshShowsRunsStoredSince() {
        RunStore store(m_dir.filePath(QStringLiteral("refresh")));
        HistoryModel model(&store);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 0);
        QVERIFY(store.save(run(store, m_morning, QStringLiteral("late"), QStringLiteral("running"))));
        QCOMPARE(model.rowCount(), 0); // read when asked, not watched
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        model.refresh();
        QCOMPARE(reset.size(), 1);
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.index(0, HistoryModel::Name).data().toString(), QStringLiteral("late"));
        // A table: no row has children.
        QCOMPARE(model.rowCount(model.index(0, 0)), 0);
        QCOMPARE(model.columnCount(model.index(0, 0)), 0);
    }

    void headersNameTheColumns() {
        RunStore store(m_dir.filePath(QStringLiteral("headers")));
        HistoryModel model(&store);
        QStringList headers;
        for (int column = 0; column < model.columnCount(); ++column)
            headers << model.headerData(column, Qt::Horizontal, Qt::DisplayRole).toString();
        QCOMPARE(headers, (QStringList{"Run", "Name", "Mode", "State", "Started", "Ranks", "Summary"}));
        QVERIFY(!model.headerData(0, Qt::Vertical, Qt::DisplayRole).isValid());
        QVERIFY(!model.headerData(0, Qt::Horizontal, Qt::ToolTipRole).isValid());
        QVERIFY(!model.headerData(HistoryModel::ColumnCount, Qt::Horizontal, Qt::DisplayRole).isValid());
        QVERIFY(!model.headerData(-1, Qt::Horizontal, Qt::DisplayRole).isValid());
    }
};

QTEST_MAIN(TestHistoryModel)
#include "tst_historymodel.moc"
