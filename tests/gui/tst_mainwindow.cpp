// SPDX-License-Identifier: MIT
// The main window driven as a user would: a real 2-rank debug run of the trainer on this machine (the local
// transport, Gloo), then the same run reopened offline from the history. Offscreen platform, real widgets.
#include "bridgehost.h"
#include "diagnosticsview/diagnosticspanel.h"
#include "fixtures/sshdfixture.h"
#include "historymodel.h"
#include "jobview/jobeditor.h"
#include "jobview/nodetablemodel.h"
#include "logview/logfilterproxy.h"
#include "logview/loginspector.h"
#include "logview/logmodel.h"
#include "mainwindow.h"
#include "ncclview/ncclpanel.h"
#include "runsession.h"
#include "runview/rankgridmodel.h"
#include "runview/runcharts.h"
#include "runview/runmetrics.h"
#include "runview/runview.h"
#include "stackview/stackpanel.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QClipboard>
#include <QDialog>
#include <QDockWidget>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QNetworkRequest>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTreeView>
#include <QTreeWidget>
#include <QWebSocket>
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
        {"master_port", test::freePort()},
        {"trainer", QJsonObject{{"dataset", "synthetic"}, {"model", "mlp"}, {"batch_size", 16}, {"backend", "gloo"},
                                {"device", "cpu"}, {"max_steps", kSteps}, {"extra_args", extra}}},
        {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"max_steps", kSteps}, {"verbose", false}}}};
    return QString::fromUtf8(QJsonDocument(job).toJson());
}

QByteArray recordedStacks(const QString& name) {
    QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/stacks/") + name);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("missing test data %s", qPrintable(name));
    return file.readAll();
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
        QVERIFY2(window.runView()->progressText().endsWith(QStringLiteral(" · done")),
                 qPrintable(window.runView()->progressText()));
        for (int rank = 0; rank < 2; ++rank) {
            QVERIFY(lossIsContiguous(window.runView()->metrics(), rank, kSteps));
            QCOMPARE(gridState(window.runView()->gridModel(), rank), RankLiveState::Finished);
        }
        QVERIFY(window.logInspector()->model()->rowCount() > 0);
        // Lines read back from the store show when they arrived (as they did live), not when the window opened.
        // (Their merge by arrival is pinned by tst_runengine and tst_cli_remote: this run's few lines would not
        // tell it from rank by rank.)
        const LogModel* logs = window.logInspector()->model();
        const QRegularExpression clock(QStringLiteral("^\\d\\d:\\d\\d:\\d\\d\\.\\d\\d\\d$"));
        QString previous;
        for (int row = 0; row < logs->rowCount(); ++row) {
            const QString time = logs->index(row, LogModel::TimeColumn).data().toString();
            QVERIFY2(clock.match(time).hasMatch(), qPrintable(time));
            QVERIFY2(time >= previous || previous.startsWith(QLatin1String("23:")), qPrintable(previous + time));
            previous = time;
        }

        // A long finding in the status bar is cut to the room left of the run's label, and whole in its tooltip.
        window.resize(900, 600);
        QApplication::processEvents();
        const QString finding =
            QStringLiteral("root-cause: rank 1 on node-b failed first: ") + QString(400, QChar('x'));
        window.showMessage(finding, true);
        QStatusBar* bar = window.statusBar();
        const QLabel* runLabel = window.findChild<QLabel*>(QStringLiteral("runLabel"));
        QVERIFY(runLabel);
        QVERIFY2(bar->currentMessage().contains(QChar(0x2026)) &&
                     bar->currentMessage().startsWith(QLatin1String("root-cause: rank 1 on node-b")),
                 qPrintable(bar->currentMessage()));
        QVERIFY(bar->fontMetrics().horizontalAdvance(bar->currentMessage()) <=
                bar->width() - runLabel->sizeHint().width());
        QCOMPARE(bar->toolTip(), finding);

        // A run that is not there is named in the error, as the CLI names it.
        QVERIFY(!window.openStoredRun(QStringLiteral("no-such-run"), &error));
        QVERIFY2(error.contains(QLatin1String("no-such-run")), qPrintable(error));
    }

    // History's "Edit its job" puts the job the run was launched with into the Job tab, untitled: the job file the
    // editor had (one with a problem here) stays as it was (Save asks where), and the job can be launched again at
    // once. A run that kept no
    // job, or is not there, says so and leaves the editor alone.
    void aRunsJobGoesBackIntoTheEditor() {
        QVERIFY(!m_runId.isEmpty());
        MainWindow window(options());
        window.show();
        const QString otherPath = m_dir.filePath(QStringLiteral("other-job.json"));
        {
            QFile other(otherPath);
            QVERIFY(other.open(QIODevice::WriteOnly));
            // A job with a problem: nothing can be launched from it until the run's job replaces it.
            other.write(localDebugJob().replace(QLatin1String("\"gui-debug\""), QLatin1String("7")).toUtf8());
        }
        const QByteArray otherBytes = [&] {
            QFile file(otherPath);
            return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
        }();
        QString error;
        QVERIFY2(window.openJob(otherPath, &error), qPrintable(error));
        QVERIFY(!window.jobEditor()->isValid());
        const auto* debugAction = window.findChild<QAction*>(QStringLiteral("debugAction"));
        QVERIFY(debugAction && !debugAction->isEnabled());

        // Chosen in the history view, as a user does.
        auto* history = window.findChild<QTableView*>(QStringLiteral("historyView"));
        auto* button = window.findChild<QPushButton*>(QStringLiteral("editRunJob"));
        QVERIFY(history && button);
        window.historyModel()->refresh();
        const QModelIndexList rows = history->model()->match(history->model()->index(0, 0), HistoryModel::RunIdRole,
                                                             m_runId, 1, Qt::MatchExactly);
        QCOMPARE(rows.size(), 1);
        history->setCurrentIndex(rows.front());
        button->click();
        const std::optional<RunRecord> record = window.store()->load(m_runId);
        QVERIFY(record);
        const std::optional<JobSpec> job = window.jobEditor()->job();
        QVERIFY2(job, qPrintable(window.jobEditor()->issues().value(0).toString()));
        QCOMPARE(job->name, QStringLiteral("gui-debug"));
        QCOMPARE(job->masterPort, record->job.value(QStringLiteral("master_port")).toInt());
        QCOMPARE(job->trainer.extraArgs, (QStringList{QStringLiteral("--threads"), QStringLiteral("1")}));
        QVERIFY(window.jobEditor()->filePath().isEmpty());
        QVERIFY(debugAction->isEnabled()); // the actions follow the editor's new job
        QCOMPARE(window.findChild<QTabWidget*>(QStringLiteral("mainTabs"))->currentIndex(), int(MainWindow::JobTab));
        QVERIFY(window.statusBar()->currentMessage().contains(m_runId));
        QFile other(otherPath);
        QVERIFY(other.open(QIODevice::ReadOnly));
        QCOMPARE(other.readAll(), otherBytes); // not written over

        // Launched again from there: the same job, a new run.
        QSignalSpy finished(window.session(), &RunSession::finished);
        QVERIFY2(window.debugRun(&error, QStringLiteral("local")), qPrintable(error));
        QVERIFY(finished.wait(120000));
        const auto again = finished.front().front().value<RunRecord>();
        QCOMPARE(again.state, QStringLiteral("finished"));
        QVERIFY(again.id != m_runId);
        QCOMPARE(again.job, record->job);

        // A run stored without its job, and a run that is not there.
        RunRecord bare;
        bare.id = window.store()->newRunId();
        QVERIFY(window.store()->save(bare));
        QVERIFY(!window.editRunJob(bare.id, &error));
        QVERIFY2(error.contains(bare.id) && error.contains(QLatin1String("no job")), qPrintable(error));
        QVERIFY(!window.editRunJob(QStringLiteral("no-such-run"), &error));
        QVERIFY2(error.contains(QLatin1String("no-such-run")), qPrintable(error));
        QCOMPARE(window.jobEditor()->job()->name, QStringLiteral("gui-debug")); // left alone
    }

    // A stored run not seen to end (left detached) is shown as of where this machine's copy stops, and says so; an
    // ended one does not.
    void runNotSeenToEndSaysHowOldItsCopyIs() {
        QVERIFY(!m_runId.isEmpty());
        MainWindow window(options());
        window.show();
        QString error;
        QVERIFY2(window.openStoredRun(m_runId, &error), qPrintable(error));
        QVERIFY2(!window.statusBar()->currentMessage().contains(QLatin1String("copy")),
                 qPrintable(window.statusBar()->currentMessage()));

        auto record = window.store()->load(m_runId, &error);
        QVERIFY2(record, qPrintable(error));
        const QString source = record->id;
        record->id = window.store()->newRunId(record->created.addSecs(1));
        record->state = QStringLiteral("running");
        record->ended = {};
        record->exits.clear();
        QVERIFY2(window.store()->save(*record, &error), qPrintable(error));
        for (int rank = 0; rank < 2; ++rank) {
            QFile events(window.store()->streamPath(source, rank, RankStream::Events));
            QVERIFY(events.open(QIODevice::ReadOnly));
            QVERIFY(window.store()->appendStream(record->id, rank, RankStream::Events, 0, events.readAll()));
        }
        QVERIFY2(window.openStoredRun(record->id, &error), qPrintable(error));
        const QString message = window.statusBar()->toolTip().isEmpty() ? window.statusBar()->currentMessage()
                                                                        : window.statusBar()->toolTip();
        QVERIFY2(message.contains(record->id + QLatin1String(" is running as of ")) &&
                     message.contains(QLatin1String("in this machine's copy")),
                 qPrintable(message));
    }

    // A stored run with a stack capture (the recorded hung Gloo pair, saved as the engine saves its own):
    // opened, the Stacks dock shows the newest capture; a click on rank 1's own frame shows rank 1's log.
    void storedStacksShowAndAClickFocusesTheLog() {
        QVERIFY(!m_runId.isEmpty());
        MainWindow window(options());
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QString error;
        QVERIFY2(window.openStoredRun(m_runId, &error), qPrintable(error));
        QCOMPARE(window.stackPanel()->model()->rowCount(), 0); // no capture yet
        QVERIFY(!window.stackPanel()->captureButton()->isEnabled()); // nothing is followed

        StackTree older;
        older.addRank(0, parseStacks(recordedStacks(QStringLiteral("sleep.eu-stack.txt"))));
        const QDateTime at = QDateTime::currentDateTimeUtc();
        QVERIFY(!window.store()->saveStacks(m_runId, older.toJson(), at.addSecs(-60), &error).isEmpty());
        StackTree tree;
        tree.addRank(0, parseStacks(recordedStacks(QStringLiteral("gloo-hang-rank0.gdb.txt"))));
        tree.addRank(1, parseStacks(recordedStacks(QStringLiteral("gloo-hang-rank1.gdb.txt"))));
        tree.capturedAt = static_cast<double>(at.toMSecsSinceEpoch()) / 1000.0;
        const QString path = window.store()->saveStacks(m_runId, tree.toJson(), at, &error);
        QVERIFY2(!path.isEmpty(), qPrintable(error));
        QVERIFY2(window.openStoredRun(m_runId, &error), qPrintable(error));
        StackPanel* panel = window.stackPanel();
        QCOMPARE(panel->model()->tree().ranks(), (QVector<int>{0, 1})); // the newest capture, not the older one
        QVERIFY(panel->summaryLabel()->text().contains(QFileInfo(path).fileName()));
        QVERIFY(window.stacksDock()->isVisible());

        window.showTab(MainWindow::RunTab);
        const QModelIndex inject = panel->model()->find(QStringLiteral("injectFaults"));
        QVERIFY(inject.isValid());
        panel->view()->scrollTo(inject);
        QTest::mouseClick(panel->view()->viewport(), Qt::LeftButton, {}, panel->view()->visualRect(inject).center());
        const LogFilterProxy* proxy = window.logInspector()->filterProxy();
        QVERIFY(proxy->rowCount() > 0);
        for (int row = 0; row < proxy->rowCount(); ++row)
            QCOMPARE(proxy->index(row, 0).data(LogModel::RankRole).toInt(), 1);
        QCOMPARE(window.runView()->focusedRank(), 1);
        QCOMPARE(qobject_cast<QTabWidget*>(window.centralWidget())->currentIndex(), int(MainWindow::LogsTab));
        const QImage shot = window.grab().toImage();
        QVERIFY(shot.save(QStringLiteral("/tmp/rankscope-mainwindow-stacks.png")));
    }

    // A live hang: the engine captures every rank's stacks by itself and the Stacks dock shows them with
    // the hung rank apart; Capture stacks is offered while the run is followed, and not after it stopped.
    // Skipped where gdb cannot attach (the cause the engine gave is said).
    void liveHangFillsTheStacksDock() {
        MainWindow window(options());
        window.show();
        window.jobEditor()->setJsonText(
            localDebugJob({"--heartbeat-s", "0.5", "--hang-at-step", "5", "--hang-rank", "1"}));
        QTRY_VERIFY_WITH_TIMEOUT(window.jobEditor()->isValid(), 5000);
        QSignalSpy captured(window.session(), &RunSession::stacksCaptured);
        QSignalSpy finished(window.session(), &RunSession::finished);
        QString error;
        QVERIFY2(window.debugRun(&error, QStringLiteral("local")), qPrintable(error));
        QVERIFY(window.stackPanel()->captureButton()->isEnabled());
        QTRY_COMPARE_WITH_TIMEOUT(captured.size(), 1, 150000);
        StackPanel* panel = window.stackPanel();
        if (panel->model()->tree().isEmpty()) {
            const QString why = panel->errorsLabel()->text();
            window.stopRun();
            QVERIFY(finished.wait(60000));
            QSKIP(qPrintable(QStringLiteral("no stacks could be taken here: ") + why));
        }
        const QModelIndex inject = panel->model()->find(QStringLiteral("injectFaults"));
        QVERIFY(inject.isValid());
        QCOMPARE(inject.data(StackTreeModel::RanksRole).value<QList<int>>(), QList<int>{1});
        QVERIFY(window.stacksDock()->isVisible());
        QVERIFY(panel->summaryLabel()->text().contains(QLatin1String("stacks-")));
        window.resize(1400, 900);
        QVERIFY(window.grab().save(QStringLiteral("/tmp/rankscope-mainwindow-live-stacks.png")));
        window.stopRun();
        QVERIFY(finished.wait(60000));
        QVERIFY(!panel->captureButton()->isEnabled());
        // Stopped while rank 1 hung: the status bar and the history say so, not "stopped by the user" alone; the
        // status bar in a failure's colour (the verdict is a finding that outlived the run).
        const RunRecord record = finished.front().front().value<RunRecord>();
        const QString verdict = QStringLiteral("stopped by the user; hang: rank 1 on localhost stuck at step 5");
        QVERIFY2(window.statusBar()->toolTip().startsWith(verdict), qPrintable(window.statusBar()->toolTip()));
        QVERIFY2(window.statusBar()->styleSheet().contains(QLatin1String("#b71c1c")),
                 qPrintable(window.statusBar()->styleSheet()));
        const int row = window.historyModel()->rowOf(record.id);
        QVERIFY(row >= 0);
        const QString listed = window.historyModel()->index(row, HistoryModel::Summary).data().toString();
        QVERIFY2(listed.startsWith(verdict), qPrintable(listed));
    }

    // The session's NCCL snapshot fills the NCCL dock (sorted by rank, the odd network marked); a click on
    // a rank's row shows its log; a new run empties it.
    void ncclFactsFillTheNcclDock() {
        QVERIFY(!m_runId.isEmpty());
        MainWindow window(options());
        window.show();
        QString error;
        QVERIFY2(window.openStoredRun(m_runId, &error), qPrintable(error));
        QCOMPARE(window.ncclPanel()->model()->rowCount(), 0); // a Gloo run without NCCL_DEBUG: no NCCL lines
        RankNcclFacts socket;
        socket.rank = 1;
        socket.host = QStringLiteral("local");
        socket.network = QStringLiteral("Socket");
        RankNcclFacts other = socket;
        other.rank = 0;
        other.network = QStringLiteral("IB");
        RankNcclFacts third = socket;
        third.rank = 2;
        emit window.session()->ncclFacts({socket, other, third});
        NcclPanel* panel = window.ncclPanel();
        QCOMPARE(panel->model()->rowCount(), 3);
        const QModelIndex rank0 = panel->proxy()->index(0, NcclFactsModel::NetworkColumn);
        QCOMPARE(rank0.data(NcclFactsModel::RankRole).toInt(), 0);
        QVERIFY(rank0.data(NcclFactsModel::DiffersRole).toBool());
        const QModelIndex rank1 = panel->proxy()->index(1, NcclFactsModel::NetworkColumn);
        QVERIFY(!rank1.data(NcclFactsModel::DiffersRole).toBool());
        emit panel->rankRequested(1);
        QCOMPARE(window.runView()->focusedRank(), 1);
        QCOMPARE(qobject_cast<QTabWidget*>(window.centralWidget())->currentIndex(), int(MainWindow::LogsTab));
        QVERIFY2(window.openStoredRun(m_runId, &error), qPrintable(error));
        QCOMPARE(panel->model()->rowCount(), 0);
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
        // One name for the host everywhere: the diagnosis, the rank's tile and its log lines say "localhost" (the
        // job's node), not the machine's own host name in one place and "local" in another.
        window.runView()->flush();
        // The run's header says how it ended, as the engine judged it; so does the stored run's, opened offline.
        QVERIFY2(window.runView()->progressText().endsWith(QStringLiteral(" · failed")),
                 qPrintable(window.runView()->progressText()));
        {
            MainWindow offline(options());
            QVERIFY2(offline.openStoredRun(finished.front().front().value<RunRecord>().id, &error), qPrintable(error));
            offline.runView()->flush();
            QVERIFY2(offline.runView()->progressText().endsWith(QStringLiteral(" · failed")),
                     qPrintable(offline.runView()->progressText()));
        }
        QVERIFY2(cause->text(2).contains(QLatin1String("rank 1 on localhost ")), qPrintable(cause->text(2)));
        // Under it, shown at once, what rank 1 wrote last: its error last, as the trainer printed it on stderr.
        QVERIFY(cause->childCount() > 0);
        QVERIFY(cause->isExpanded());
        QCOMPARE(cause->child(0)->text(0), QStringLiteral("rank 1 said last"));
        QCOMPARE(cause->child(cause->childCount() - 1)->text(2),
                 QStringLiteral("[err] [rank 1] error: injected failure at step 4 (--fail-at-step)"));
        QCOMPARE(cause->child(0)->data(1, Qt::UserRole).toInt(), 1); // a click on it shows rank 1's log
        const RankGridModel* grid = window.runView()->gridModel();
        QCOMPARE(grid->index(grid->rowOfRank(1), RankGridModel::HostColumn).data().toString(),
                 QStringLiteral("localhost"));
        QCOMPARE(window.logInspector()->model()->index(0, LogModel::RankColumn).data().toString().section(':', 0, 0),
                 QStringLiteral("localhost"));
        emit panel->itemClicked(cause, 0);
        QCOMPARE(window.runView()->focusedRank(), 1);
        const LogFilterProxy* proxy = window.logInspector()->filterProxy();
        QVERIFY(proxy->rowCount() > 0);
        for (int row = 0; row < proxy->rowCount(); ++row)
            QCOMPARE(proxy->index(row, 0).data(LogModel::RankRole).toInt(), 1);
    }

    // Debug a rank in gdb: once rank 1 waits under gdbserver, the window shows its address and a gdb command
    // line (a row in the diagnostics panel, and a dialog whose button copies the command); stopping the run ends
    // it and closes the dialog. tst_debugrank attaches a real gdb to the same address.
    void debugRankShowsTheGdbCommand() {
        if (QStandardPaths::findExecutable(QStringLiteral("gdbserver")).isEmpty())
            QSKIP("no gdbserver (Debian: apt install gdbserver)");
        MainWindow window(options());
        window.show();
        window.jobEditor()->setJsonText(localDebugJob());
        QTRY_VERIFY_WITH_TIMEOUT(window.jobEditor()->isValid(), 5000);
        QSignalSpy finished(window.session(), &RunSession::finished);
        QString error;
        QVERIFY(!window.debugRun(&error, QStringLiteral("local"), 2));
        QVERIFY2(error.startsWith(QLatin1String("debug rank 2 ")), qPrintable(error));
        QVERIFY2(window.debugRun(&error, QStringLiteral("local"), 1), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(window.debugServerDialog(), 90000);
        const auto* command = window.debugServerDialog()->findChild<QLineEdit*>(QStringLiteral("gdbCommand"));
        QVERIFY(command);
        QVERIFY2(command->text().startsWith(QLatin1String("gdb -q ")) &&
                     command->text().contains(QLatin1String("-ex 'target remote 127.0.0.1:")) &&
                     command->text().endsWith(kTrainer),
                 qPrintable(command->text()));
        window.debugServerDialog()->findChild<QPushButton*>(QStringLiteral("copyGdbCommand"))->click();
        QCOMPARE(QGuiApplication::clipboard()->text(), command->text());
        const QTreeWidgetItem* row = window.diagnosticsView()->findingOf(QStringLiteral("debugger"));
        QVERIFY(row);
        QCOMPARE(row->text(0), QStringLiteral("debugger"));
        QCOMPARE(row->text(1), QStringLiteral("1"));
        QVERIFY2(row->text(2).contains(command->text()), qPrintable(row->text(2)));

        window.stopRun();
        QVERIFY(finished.wait(60000));
        QTRY_VERIFY_WITH_TIMEOUT(!window.debugServerDialog(), 5000);
    }

    // Submit needs nodes: the error names the field rather than launching nothing.
    // The app hosting the IDE bridge: an editor connected to it sees the run the app launches, live, and the
    // bridge's connection file goes when the app stops hosting it.
    void hostedBridgeShowsTheAppsRunToEditors() {
        MainWindow::Options o = options();
        o.bridgeRuntimeDir = m_dir.filePath(QStringLiteral("runtime"));
        MainWindow window(o);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.jobEditor()->setJsonText(localDebugJob());
        QTRY_VERIFY_WITH_TIMEOUT(window.jobEditor()->isValid(), 5000);
        QString error;
        QVERIFY2(window.setBridgeHosted(true, &error), qPrintable(error));
        auto* action = window.findChild<QAction*>(QStringLiteral("bridgeAction"));
        QVERIFY(action && action->isChecked());
        const QString file = window.bridgeHost()->server()->connectionFile();
        QVERIFY(QFileInfo::exists(file));
        QFile connection(file);
        QVERIFY(connection.open(QIODevice::ReadOnly));
        const QByteArray token =
            QJsonDocument::fromJson(connection.readAll()).object().value(QStringLiteral("token")).toString().toLatin1();
        auto* label = window.findChild<QLabel*>(QStringLiteral("bridgeLabel"));
        QVERIFY(label && label->isVisible());
        QVERIFY(label->text().contains(window.bridgeHost()->server()->url()));
        QVERIFY(!label->text().contains(QString::fromLatin1(token)));

        QWebSocket editor;
        QList<QJsonObject> notifications;
        QHash<int, QJsonObject> answers;
        connect(&editor, &QWebSocket::textMessageReceived, this, [&](const QString& text) {
            const QJsonObject message = QJsonDocument::fromJson(text.toUtf8()).object();
            if (message.contains(QStringLiteral("id")))
                answers.insert(message.value(QStringLiteral("id")).toInt(), message);
            else
                notifications.append(message);
        });
        QNetworkRequest request{QUrl(window.bridgeHost()->server()->url())};
        request.setRawHeader("Authorization", "Bearer " + token);
        editor.open(request);
        QTRY_COMPARE_WITH_TIMEOUT(editor.state(), QAbstractSocket::ConnectedState, 10000);
        QTRY_VERIFY(label->text().contains(QLatin1String("1 client")));

        QSignalSpy finished(window.session(), &RunSession::finished);
        QVERIFY2(window.debugRun(&error, QStringLiteral("local")), qPrintable(error));
        const QString run = window.session()->record().id;
        editor.sendTextMessage(QString::fromUtf8(
            QJsonDocument(QJsonObject{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "run.subscribe"}, {"params", QJsonObject{{"run", run}}}})
                .toJson(QJsonDocument::Compact)));
        QTRY_VERIFY_WITH_TIMEOUT(answers.contains(1), 10000);
        QCOMPARE(answers.value(1).value("result").toObject().value("run").toObject().value("id").toString(), run);
        QVERIFY(finished.wait(120000));
        const auto has = [&](const QString& method) {
            return std::any_of(notifications.begin(), notifications.end(),
                               [&](const QJsonObject& m) { return m.value("method").toString() == method; });
        };
        QTRY_VERIFY_WITH_TIMEOUT(has(QStringLiteral("run.finished")), 10000);
        QVERIFY(has(QStringLiteral("run.events")));
        QVERIFY(has(QStringLiteral("run.ranks")));

        QVERIFY(window.setBridgeHosted(false));
        QVERIFY(!QFileInfo::exists(file));
        QVERIFY(!action->isChecked());
        QVERIFY(!label->isVisible());
        QTRY_COMPARE(editor.state(), QAbstractSocket::UnconnectedState);
    }

    // The status bar's cut of a long verdict keeps who failed first and the hung rank it waited on, the clause the
    // end of the line says; a text without clauses, or whose later clauses would not leave room, loses its middle.
    void statusTextKeepsTheVerdictsLastClauses() {
        const QFontMetrics metrics(QApplication::font());
        const QString detail =
            QStringLiteral(" (collective: gradient all-reduce in backward (collective #34) failed on rank 0: "
                           "[./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 6000ms)");
        const QString hang =
            QStringLiteral("; it was waiting on a hung rank: rank 1 on localhost stuck at step 30 in phase "
                           "forward (collective #33); ranks 0,2 waiting in collective #34");
        const QString verdict = QStringLiteral("rank 0 on localhost failed first: exit status 1") + detail + hang;
        const int room =
            metrics.horizontalAdvance(hang) + metrics.horizontalAdvance(QStringLiteral("rank 0 on localhost "
                                                                                       "failed first: exit"));
        const QString shown = MainWindow::fitStatusText(verdict, metrics, room);
        QVERIFY2(metrics.horizontalAdvance(shown) <= room, qPrintable(shown));
        QVERIFY2(shown.startsWith(QLatin1String("rank 0 on localhost failed")) && shown.endsWith(hang),
                 qPrintable(shown));
        QCOMPARE(MainWindow::fitStatusText(verdict, metrics, 100000), verdict); // room enough: whole
        // Too little room for the clause after the first: the middle goes, both ends stay.
        const QString narrow = MainWindow::fitStatusText(verdict, metrics, room / 3);
        QVERIFY2(metrics.horizontalAdvance(narrow) <= room / 3, qPrintable(narrow));
        QVERIFY2(narrow.startsWith(QLatin1String("rank 0")) && narrow.endsWith(QLatin1String("collective #34")) &&
                     narrow.contains(QChar(0x2026)),
                 qPrintable(narrow));
        const QString plain = QStringLiteral("node-b: cannot connect to 10.0.0.2:22 (connection refused) ") + detail;
        const QString cut = MainWindow::fitStatusText(plain, metrics, metrics.horizontalAdvance(plain) / 2);
        QVERIFY2(cut.startsWith(QLatin1String("node-b")) && cut.endsWith(QLatin1String("6000ms)")), qPrintable(cut));
    }

    // A run that fails before any rank starts (its master port is taken) has no root cause, so no verdict: the
    // status bar still says why in the colour of a failure, and keeps it (no timeout), as it does a root cause.
    void aLaunchFailureStaysInTheStatusBarAsAFailure() {
        QTcpServer other;
        QVERIFY(other.listen(QHostAddress::Any));
        QJsonObject job = QJsonDocument::fromJson(localDebugJob().toUtf8()).object();
        job.insert(QStringLiteral("master_port"), other.serverPort());
        MainWindow window(options());
        window.show();
        window.jobEditor()->setJsonText(QString::fromUtf8(QJsonDocument(job).toJson()));
        QTRY_VERIFY_WITH_TIMEOUT(window.jobEditor()->isValid(), 5000);
        QSignalSpy finished(window.session(), &RunSession::finished);
        QString error;
        QVERIFY2(window.debugRun(&error, QStringLiteral("local")), qPrintable(error));
        QVERIFY(finished.wait(60000));
        const auto record = finished.front().front().value<RunRecord>();
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.verdict, QString());
        QStatusBar* bar = window.statusBar();
        const QString said = QStringLiteral("master port %1 is already in use").arg(other.serverPort());
        QVERIFY2(bar->toolTip().contains(said), qPrintable(bar->toolTip()));
        QVERIFY2(bar->styleSheet().contains(QLatin1String("#b71c1c")), qPrintable(bar->styleSheet()));
    }

    void submitWithoutNodesNamesTheField() {
        MainWindow window(options());
        window.jobEditor()->setJsonText(localDebugJob());
        QTRY_VERIFY_WITH_TIMEOUT(window.jobEditor()->isValid(), 5000);
        QString error;
        QVERIFY(!window.submitRun(&error));
        QVERIFY2(error.startsWith(QLatin1String("nodes:")), qPrintable(error));
        QVERIFY(!window.session()->isActive());
    }

    // A node edited in the cluster table goes into the job's text as that one change.
    void aNodeEditInTheTableChangesOnlyItsField() {
        MainWindow window(options());
        QString error;
        QVERIFY2(window.openJob(QStringLiteral(RANKSCOPE_JOBS_DIR "/example.json"), &error), qPrintable(error));
        const QString before = window.jobEditor()->jsonText();
        auto* model = window.findChild<NodeTableModel*>();
        QVERIFY(model);
        QCOMPARE(model->rowCount(), 2);
        QVERIFY(model->setData(model->index(1, NodeTableModel::Port), 2223));
        QCOMPARE(window.jobEditor()->jsonText(), QString(before).replace(QLatin1String("2222"), QLatin1String("2223")));
        QCOMPARE(window.jobEditor()->job()->nodes[1].port, 2223);

        // With a syntax error in the JSON nothing is written, and the window says why.
        window.jobEditor()->setJsonText(QStringLiteral("{ oops"));
        QVERIFY(model->setData(model->index(1, NodeTableModel::Port), 2224));
        QCOMPARE(window.jobEditor()->jsonText(), QStringLiteral("{ oops"));
        QVERIFY2(window.statusBar()->currentMessage().contains(QLatin1String("syntax error")),
                 qPrintable(window.statusBar()->currentMessage()));
    }
};

QTEST_MAIN(tst_MainWindow)
#include "tst_mainwindow.moc"
