// SPDX-License-Identifier: MIT
// The main window driven as a user would: a real 2-rank debug run of the trainer on this machine (the local
// transport, Gloo), then the same run reopened offline from the history. Offscreen platform, real widgets.
#include "historymodel.h"
#include "jobview/jobeditor.h"
#include "logview/logfilterproxy.h"
#include "logview/loginspector.h"
#include "logview/logmodel.h"
#include "mainwindow.h"
#include "runsession.h"
#include "runview/rankgridmodel.h"
#include "runview/runcharts.h"
#include "runview/runmetrics.h"
#include "runview/runview.h"

#include <QAbstractItemModelTester>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineSeries>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

using namespace rankscope;
using namespace rankscope::gui;

namespace {

const QString kTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");
constexpr int kSteps = 12;

QString localDebugJob(const QJsonArray& faults = {}) {
    QJsonArray extra{"--threads", "1"};
    for (const QJsonValue& fault : faults)
        extra.append(fault);
    const QJsonObject job{
        {"version", 1},
        {"name", "gui-debug"},
        {"mode", "debug"},
        {"master_port", 29700 + QRandomGenerator::global()->bounded(200)},
        {"trainer", QJsonObject{{"dataset", "synthetic"}, {"model", "mlp"}, {"batch_size", 16}, {"backend", "gloo"},
                                {"device", "cpu"}, {"max_steps", kSteps}, {"extra_args", extra}}},
        {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"max_steps", kSteps}, {"verbose", false}}}};
    return QString::fromUtf8(QJsonDocument(job).toJson());
}

RankLiveState gridState(const RankGridModel* grid, int rank) {
    for (int row = 0; row < grid->rowCount(); ++row) {
        const QModelIndex index = grid->index(row, RankGridModel::StateColumn);
        if (index.data(RankGridModel::RankRole).toInt() == rank)
            return static_cast<RankLiveState>(index.data(RankGridModel::StateRole).toInt());
    }
    return RankLiveState::Starting;
}

// The steps of a rank's loss series: 1..n, each once, none missing.
bool lossIsContiguous(const RunMetrics* metrics, int rank, int expected) {
    const RunMetrics::RankSeries* series = metrics->rank(rank);
    if (!series || series->loss.size() != expected)
        return false;
    for (int i = 0; i < expected; ++i)
        if (series->loss.points()[i].x() != i + 1)
            return false;
    return true;
}

} // namespace

class tst_MainWindow final : public QObject {
    Q_OBJECT

private:
    MainWindow::Options options() const {
        MainWindow::Options o;
        o.storeRoot = m_dir.filePath(QStringLiteral("store"));
        o.localTrainer = kTrainer;
        o.sshConfigPath = QStringLiteral("none");
        o.restoreState = false;
        return o;
    }

    QTemporaryDir m_dir;
    QString m_runId;

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true); // QSettings of this test only
        QVERIFY(QFileInfo(kTrainer).isExecutable());
    }
    void cleanupTestCase() { QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-f"), m_dir.path()}); }

    // Debug on one node, this machine: both ranks' loss series fill, the grid reaches "finished" for both,
    // and a rank chosen in the grid filters the inspector to that rank's lines.
    void debugRunOnThisMachine() {
        MainWindow window(options());
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.jobEditor()->setJsonText(localDebugJob());
        QTRY_VERIFY_WITH_TIMEOUT(window.jobEditor()->isValid(), 5000);

        QSignalSpy finished(window.session(), &RunSession::finished);
        QString error;
        QVERIFY2(window.debugRun(&error, QStringLiteral("local")), qPrintable(error));
        QVERIFY(finished.wait(120000));
        const auto record = finished.front().front().value<RunRecord>();
        QCOMPARE(record.state, QStringLiteral("finished"));
        m_runId = record.id;

        window.runView()->flush();
        for (int rank = 0; rank < 2; ++rank) {
            QLineSeries* loss = window.runView()->charts()->lossSeries(rank);
            QVERIFY2(loss, qPrintable(QStringLiteral("no loss series for rank %1").arg(rank)));
            QCOMPARE(loss->count(), kSteps); // fewer points than pixels: drawn at full resolution
            QVERIFY(lossIsContiguous(window.runView()->metrics(), rank, kSteps));
            QCOMPARE(gridState(window.runView()->gridModel(), rank), RankLiveState::Finished);
        }

        // A click on rank 1's tile focuses every view on it.
        LogInspector* logs = window.logInspector();
        QVERIFY(logs->model()->rowCount() > 0);
        emit window.runView()->rankSelected(1);
        const LogFilterProxy* proxy = logs->filterProxy();
        QVERIFY(proxy->rowCount() > 0);
        QVERIFY(proxy->rowCount() < logs->model()->rowCount());
        for (int row = 0; row < proxy->rowCount(); ++row)
            QCOMPARE(proxy->index(row, 0).data(LogModel::RankRole).toInt(), 1);
        QCOMPARE(window.runView()->focusedRank(), 1);
        // A rank's log exported from the run store is the node's bytes, whole.
        const QString exportDir = m_dir.filePath(QStringLiteral("export"));
        QDir().mkpath(exportDir);
        QVERIFY2(window.exportRankStreams(1, exportDir, &error), qPrintable(error));
        for (const RankStream stream : kRankStreams) {
            QFile exported(QStringLiteral("%1/%2-rank1.%3").arg(exportDir, record.id, rankStreamSuffix(stream)));
            QFile stored(window.store()->streamPath(record.id, 1, stream));
            QCOMPARE(exported.exists(), stored.exists()); // a stream the rank never wrote is not stored
            if (stored.open(QIODevice::ReadOnly)) {
                QVERIFY(exported.open(QIODevice::ReadOnly));
                QCOMPARE(exported.readAll(), stored.readAll());
            }
        }
        QVERIFY(QFileInfo(QStringLiteral("%1/%2-rank1.events").arg(exportDir, record.id)).size() > 0);

        // The history lists the run, finished, and stays a well-behaved model across refreshes.
        QAbstractItemModelTester tester(window.historyModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        window.historyModel()->refresh();
        const int row = window.historyModel()->rowOf(record.id);
        QVERIFY(row >= 0);
        QCOMPARE(window.historyModel()->record(row).state, QStringLiteral("finished"));
        QCOMPARE(window.historyModel()->index(row, HistoryModel::Ranks).data(HistoryModel::SortRole).toInt(), 2);
        QCOMPARE(window.historyModel()->index(row, HistoryModel::Started).data(HistoryModel::SortRole).toLongLong(),
                 record.created.toMSecsSinceEpoch());
    }

    // The same run from the history, offline: the same views from the run store alone.
    void storedRunOpensOffline() {
        QVERIFY(!m_runId.isEmpty());
        MainWindow window(options());
        window.show();
        QString error;
        QVERIFY2(window.openStoredRun(m_runId, &error), qPrintable(error));
        QVERIFY(!window.session()->isActive());
        window.runView()->flush();
        for (int rank = 0; rank < 2; ++rank) {
            QVERIFY(lossIsContiguous(window.runView()->metrics(), rank, kSteps));
            QCOMPARE(gridState(window.runView()->gridModel(), rank), RankLiveState::Finished);
        }
        QVERIFY(window.logInspector()->model()->rowCount() > 0);
    }

    // A rank that fails: the diagnostics panel names it as the root cause; a click on the finding focuses
    // the views on that rank and shows its log.
    void failedRankIsTheRootCauseInThePanel() {
        MainWindow window(options());
        window.show();
        window.jobEditor()->setJsonText(localDebugJob({"--fail-at-step", "4", "--fail-rank", "1", "--timeout-s", "5"}));
        QTRY_VERIFY_WITH_TIMEOUT(window.jobEditor()->isValid(), 5000);
        QSignalSpy finished(window.session(), &RunSession::finished);
        QString error;
        QVERIFY2(window.debugRun(&error, QStringLiteral("local")), qPrintable(error));
        QVERIFY(finished.wait(120000));
        QTreeWidget* panel = window.diagnosticsView();
        QTreeWidgetItem* cause = nullptr;
        for (int i = 0; i < panel->topLevelItemCount(); ++i)
            if (panel->topLevelItem(i)->text(0) == QLatin1String("root-cause"))
                cause = panel->topLevelItem(i);
        QVERIFY(cause);
        QCOMPARE(cause->text(1), QStringLiteral("1"));
        QVERIFY2(cause->text(2).contains(QLatin1String("rank 1")), qPrintable(cause->text(2)));
        emit panel->itemClicked(cause, 0);
        QCOMPARE(window.runView()->focusedRank(), 1);
        const LogFilterProxy* proxy = window.logInspector()->filterProxy();
        QVERIFY(proxy->rowCount() > 0);
        for (int row = 0; row < proxy->rowCount(); ++row)
            QCOMPARE(proxy->index(row, 0).data(LogModel::RankRole).toInt(), 1);
    }

    // Submit needs nodes: the error names the field rather than launching nothing.
    void submitWithoutNodesNamesTheField() {
        MainWindow window(options());
        window.jobEditor()->setJsonText(localDebugJob());
        QTRY_VERIFY_WITH_TIMEOUT(window.jobEditor()->isValid(), 5000);
        QString error;
        QVERIFY(!window.submitRun(&error));
        QVERIFY2(error.startsWith(QLatin1String("nodes:")), qPrintable(error));
        QVERIFY(!window.session()->isActive());
    }
};

QTEST_MAIN(tst_MainWindow)
#include "tst_mainwindow.moc"
