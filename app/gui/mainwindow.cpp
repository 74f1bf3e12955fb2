// SPDX-License-Identifier: MIT
#include "mainwindow.h"

#include "bridgehost.h"
#include "diagnosticsview/diagnosticspanel.h"
#include "historymodel.h"
#include "jobview/clusterpanel.h"
#include "jobview/hostkeyprompter.h"
#include "jobview/jobeditor.h"
#include "logview/loginspector.h"
#include "logview/logmodel.h"
#include "ncclview/ncclpanel.h"
#include "runsession.h"
#include "runview/runcharts.h"
#include "runview/runmetrics.h"
#include "runview/runview.h"
#include "stackview/stackpanel.h"

#include "core/rankplan.h"
#include "core/streamlines.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QDateTime>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

#include <cmath>

namespace rankscope::gui {

namespace {

const QString kLocalNode = QString(kLocalNodeName);

} // namespace

MainWindow::MainWindow(Options options, QWidget* parent)
    : QMainWindow(parent), m_options(std::move(options)),
      m_store(std::make_unique<RunStore>(m_options.storeRoot.isEmpty() ? RunStore::defaultRoot()
                                                                       : m_options.storeRoot)) {
    setWindowTitle(QStringLiteral("RankScope"));
    setObjectName(QStringLiteral("mainWindow"));

    m_cluster = new ClusterPanel;
    remote::ConnectionOptions connection;
    connection.knownHostsPath = m_options.knownHostsPath;
    connection.sshConfigPath = m_options.sshConfigPath;
    m_cluster->setConnectionOptions(connection);

    remote::EngineOptions engine;
    engine.knownHostsPath = m_options.knownHostsPath;
    engine.sshConfigPath = m_options.sshConfigPath;
    if (!m_options.localTrainer.isEmpty())
        engine.localTrainer = m_options.localTrainer;
    m_cluster->prompter()->install(engine); // trust-on-first-use and secrets asked in dialogs, from any thread
    m_session = new RunSession(m_store.get(), engine, this);
    m_bridge = new BridgeHost(m_session, engine, this);
    m_bridge->setRuntimeDirectory(m_options.bridgeRuntimeDir);

    buildTabs();
    buildActions();
    connectSession();
    if (m_options.restoreState)
        restoreSavedState();
    else
        m_editor->setJsonText(QString::fromUtf8([] {
            QFile file(QString::fromLatin1(kDefaultJob));
            return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
        }()));
    updateDebugNodes();
    updateActions();
}

MainWindow::~MainWindow() {
    delete m_session; // it uses the store, which goes before the window's children do
}

void MainWindow::buildTabs() {
    m_tabs = new QTabWidget;
    m_tabs->setObjectName(QStringLiteral("mainTabs"));
    m_tabs->setDocumentMode(true);

    m_editor = new JobEditor;
    auto* setup = new QSplitter(Qt::Vertical);
    setup->setObjectName(QStringLiteral("setupSplitter"));
    setup->addWidget(m_cluster);
    setup->addWidget(m_editor);
    setup->setStretchFactor(0, 1);
    setup->setStretchFactor(1, 2);
    m_tabs->addTab(setup, QStringLiteral("Job && cluster"));

    m_runView = new RunView;
    m_tabs->addTab(m_runView, QStringLiteral("Run"));
    m_logs = new LogInspector;
    m_tabs->addTab(m_logs, QStringLiteral("Logs"));

    auto* history = new QWidget;
    auto* historyLayout = new QVBoxLayout(history);
    m_historyModel = new HistoryModel(m_store.get(), this);
    m_historyProxy = new QSortFilterProxyModel(this);
    m_historyProxy->setSourceModel(m_historyModel);
    m_historyProxy->setSortRole(HistoryModel::SortRole);
    m_history = new QTableView;
    m_history->setObjectName(QStringLiteral("historyView"));
    m_history->setModel(m_historyProxy);
    m_history->setSortingEnabled(true);
    m_history->sortByColumn(HistoryModel::Started, Qt::DescendingOrder);
    m_history->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_history->setSelectionMode(QAbstractItemView::SingleSelection);
    m_history->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_history->verticalHeader()->hide();
    m_history->horizontalHeader()->setStretchLastSection(true);
    m_history->setAlternatingRowColors(true);
    connect(m_history, &QTableView::doubleClicked, this, [this] { openSelectedHistory(false); });
    auto* buttons = new QHBoxLayout;
    auto* open = new QPushButton(QStringLiteral("Open (offline)"));
    auto* attach = new QPushButton(QStringLiteral("Attach"));
    attach->setToolTip(QStringLiteral("Follow a run that is still going on on its nodes"));
    auto* editJob = new QPushButton(QStringLiteral("Edit its job"));
    editJob->setObjectName(QStringLiteral("editRunJob"));
    editJob->setToolTip(QStringLiteral("Put the job this run was launched with into the Job tab, to launch it again "
                                       "(say, submitted across every node after a debug run) or change it first"));
    auto* refresh = new QPushButton(QStringLiteral("Refresh"));
    connect(open, &QPushButton::clicked, this, [this] { openSelectedHistory(false); });
    connect(attach, &QPushButton::clicked, this, [this] { openSelectedHistory(true); });
    connect(editJob, &QPushButton::clicked, this, [this] {
        const QModelIndex index = m_history->currentIndex();
        QString error;
        if (!index.isValid())
            showMessage(QStringLiteral("choose a run in the list first"), true);
        else if (!editRunJob(index.data(HistoryModel::RunIdRole).toString(), &error))
            showMessage(error, true);
    });
    connect(refresh, &QPushButton::clicked, m_historyModel, &HistoryModel::refresh);
    buttons->addWidget(open);
    buttons->addWidget(attach);
    buttons->addWidget(editJob);
    buttons->addStretch();
    buttons->addWidget(refresh);
    historyLayout->addWidget(m_history);
    historyLayout->addLayout(buttons);
    m_tabs->addTab(history, QStringLiteral("History"));

    setCentralWidget(m_tabs);

    m_diagnostics = new DiagnosticsPanel;
    m_diagnostics->setObjectName(QStringLiteral("diagnosticsView"));
    connect(m_diagnostics, &DiagnosticsPanel::rankRequested, this, &MainWindow::showRankLog);
    auto* dock = new QDockWidget(QStringLiteral("Diagnostics"));
    dock->setObjectName(QStringLiteral("diagnosticsDock"));
    dock->setWidget(m_diagnostics);
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    addDockWidget(Qt::BottomDockWidgetArea, dock);
    buildStacksDock(dock);
    buildNcclDock(dock);
    dock->raise();
    // The findings dock starts low, under the charts; a restored layout overrides it.
    resizeDocks({dock}, {170}, Qt::Vertical);
    m_runLabel = new QLabel(QStringLiteral("no run"));
    m_runLabel->setObjectName(QStringLiteral("runLabel"));
    statusBar()->addPermanentWidget(m_runLabel);
    m_bridgeLabel = new QLabel;
    m_bridgeLabel->setObjectName(QStringLiteral("bridgeLabel"));
    m_bridgeLabel->setContentsMargins(16, 0, 0, 0); // apart from the run label beside it
    m_bridgeLabel->hide();
    statusBar()->addPermanentWidget(m_bridgeLabel);

    // The job and the cluster are one job: nodes edited in the table go into the editor's text, and the
    // editor's nodes fill the table.
    connect(m_editor, &JobEditor::jobChanged, this, [this] {
        if (const auto job = m_editor->job())
            m_cluster->setJob(*job);
        updateDebugNodes();
        updateActions();
    });
    connect(m_editor, &JobEditor::validityChanged, this, &MainWindow::updateActions);
    connect(m_cluster, &ClusterPanel::nodesEdited, this, [this] {
        if (m_editor->setNodes(m_cluster->job().nodes))
            return;
        statusBar()->showMessage(tr("The node edit was not written: the job's JSON has a syntax error. Fix it first."),
                                 10'000);
        if (const auto job = m_editor->job())
            m_cluster->setJob(*job);
    });
    connect(m_runView, &RunView::rankSelected, this, &MainWindow::focusRank);
}

void MainWindow::buildStacksDock(QDockWidget* besides) {
    m_stacks = new StackPanel;
    m_stacks->setObjectName(QStringLiteral("stackPanel"));
    m_stacks->setCaptureEnabled(false);
    connect(m_stacks, &StackPanel::captureRequested, this, [this] {
        QString error;
        if (!m_session->captureStacks(&error))
            showMessage(error, true);
        else
            showMessage(QStringLiteral("capturing every rank's stacks"));
    });
    connect(m_stacks, &StackPanel::rankRequested, this, &MainWindow::showRankLog);
    m_stacksDock = new QDockWidget(QStringLiteral("Stacks"));
    m_stacksDock->setObjectName(QStringLiteral("stacksDock"));
    m_stacksDock->setWidget(m_stacks);
    m_stacksDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    addDockWidget(Qt::BottomDockWidgetArea, m_stacksDock);
    tabifyDockWidget(besides, m_stacksDock);
}

void MainWindow::buildNcclDock(QDockWidget* besides) {
    m_nccl = new NcclPanel;
    m_nccl->setObjectName(QStringLiteral("ncclPanel"));
    connect(m_nccl, &NcclPanel::rankRequested, this, &MainWindow::showRankLog);
    auto* dock = new QDockWidget(QStringLiteral("NCCL"));
    dock->setObjectName(QStringLiteral("ncclDock"));
    dock->setWidget(m_nccl);
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    addDockWidget(Qt::BottomDockWidgetArea, dock);
    tabifyDockWidget(besides, dock);
}

void MainWindow::showRankLog(int rank) {
    if (rank >= 0 && rank != m_focusedRank)
        focusRank(rank);
    showTab(LogsTab);
}

void MainWindow::buildActions() {
    auto* bar = addToolBar(QStringLiteral("Run"));
    bar->setObjectName(QStringLiteral("runToolBar"));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->setMovable(false);

    m_debugNode = new QComboBox;
    m_debugNode->setObjectName(QStringLiteral("debugNode"));
    m_debugNode->setToolTip(QStringLiteral("Where a debug run goes: this machine, or one node of the cluster"));
    m_debugAction = bar->addAction(QStringLiteral("Debug on one node"), this, [this] {
        QString error;
        if (!debugRun(&error))
            showMessage(error, true);
    });
    m_debugAction->setObjectName(QStringLiteral("debugAction"));
    m_debugAction->setToolTip(
        QStringLiteral("Few steps on one node, verbose NCCL and distributed checks; the run stops with the app"));
    bar->addWidget(m_debugNode);
    m_debugRankAction = bar->addAction(QStringLiteral("Debug a rank in gdb…"), this, &MainWindow::askDebugRank);
    m_debugRankAction->setToolTip(QStringLiteral("Debug on one node with one rank under gdbserver: the others wait "
                                                 "for it in their collectives; gdb attaches at the address shown"));
    bar->addSeparator();
    m_submitAction = bar->addAction(QStringLiteral("Submit distributed"), this, [this] {
        QString error;
        if (!submitRun(&error))
            showMessage(error, true);
    });
    m_submitAction->setToolTip(
        QStringLiteral("Every node of the cluster, detached: closing RankScope does not stop the run"));
    bar->addSeparator();
    m_stopAction = bar->addAction(QStringLiteral("Stop"), this, &MainWindow::stopRun);
    m_stopAction->setToolTip(QStringLiteral("SIGTERM every rank, SIGKILL after the grace period, verified"));
    m_detachAction = bar->addAction(QStringLiteral("Detach"), this, [this] {
        m_session->detach();
        showMessage(QStringLiteral("detached; the run goes on (History → Attach to follow it again)"));
        updateActions();
    });
    bar->addSeparator();

    // Editors and notebooks connect to the app instead of a `rankscope-cli bridge` and see its runs.
    m_bridgeAction = bar->addAction(QStringLiteral("IDE bridge"));
    m_bridgeAction->setObjectName(QStringLiteral("bridgeAction"));
    m_bridgeAction->setCheckable(true);
    m_bridgeAction->setToolTip(QStringLiteral("Serve this app's runs to VS Code and Jupyter (JSON-RPC over WebSocket on "
                                              "127.0.0.1, behind a token in a file only you can read)"));
    connect(m_bridgeAction, &QAction::toggled, this, [this](bool on) {
        QString error;
        if (!setBridgeHosted(on, &error))
            showMessage(QStringLiteral("IDE bridge: %1").arg(error), true);
    });
    connect(m_bridge, &BridgeHost::statusChanged, this, [this](const QString& text) {
        m_bridgeLabel->setText(text);
        m_bridgeLabel->setVisible(!text.isEmpty());
    });
    bar->addSeparator();

    auto* exportButton = new QToolButton;
    exportButton->setText(QStringLiteral("Export"));
    exportButton->setPopupMode(QToolButton::InstantPopup);
    auto* menu = new QMenu(exportButton);
    menu->addAction(QStringLiteral("Chart as PNG…"), this, &MainWindow::exportChart);
    menu->addAction(QStringLiteral("Metrics as CSV…"), this, &MainWindow::exportMetrics);
    menu->addAction(QStringLiteral("Rank log…"), this, &MainWindow::exportRankLog);
    exportButton->setMenu(menu);
    bar->addWidget(exportButton);
}

bool MainWindow::setBridgeHosted(bool hosted, QString* error) {
    bool ok = true;
    if (hosted)
        ok = m_bridge->start(error);
    else
        m_bridge->stop();
    const QSignalBlocker blocker(m_bridgeAction);
    m_bridgeAction->setChecked(m_bridge->isRunning());
    if (ok)
        QSettings().setValue(QStringLiteral("bridge/hosted"), m_bridge->isRunning());
    return ok;
}

void MainWindow::connectSession() {
    connect(m_session, &RunSession::runStarting, this, &MainWindow::onRunStarting);
    connect(m_session, &RunSession::events, m_runView, &RunView::addEvents);
    connect(m_session, &RunSession::logBatch, m_logs->model(), &LogModel::appendLines);
    // Log lines reach the inspector every 100 ms, on every second of the run view's light ticks: never on the
    // tick that applies events and draws the loss chart, so that the two do not make one long frame.
    connect(m_runView, &RunView::lightTick, m_session, [this] {
        m_logTickDue = !m_logTickDue;
        if (!m_logTickDue)
            m_session->flush();
    });
    connect(m_session, &RunSession::rankExited, m_runView, &RunView::rankExited);
    connect(m_session, &RunSession::gpuSamples, m_runView, &RunView::addGpuSamples);
    connect(m_session, &RunSession::gpuTelemetryError, m_runView, &RunView::addGpuError);
    connect(m_session, &RunSession::diagnoses, this, &MainWindow::addDiagnoses);
    connect(m_session, &RunSession::diagnoses, m_runView, &RunView::addDiagnoses);
    connect(m_session, &RunSession::message, this, [this](const QString& text) { showMessage(text); });
    connect(m_session, &RunSession::finished, this, &MainWindow::onFinished);
    connect(m_session, &RunSession::stacksCaptured, this, [this](const StackTree& tree, const QString& path) {
        m_stacks->setTree(tree, path);
        m_stacksDock->raise(); // a capture is asked for, or comes with a hang: either way it is what to look at
    });
    connect(m_session, &RunSession::ncclFacts, m_nccl, &NcclPanel::setFacts);
    connect(m_session, &RunSession::stacksError, this, [this](const QString& text) {
        m_stacks->addError(text);
        showMessage(QStringLiteral("stacks: ") + text, true);
    });
    connect(m_session->engine(), &remote::RunEngine::debugServerReady, this, &MainWindow::showDebugServer);
    connect(m_session->engine(), &remote::RunEngine::debugServerError, this,
            [this](const QString& message) { showMessage(message, true); });
    connect(m_session->engine(), &remote::RunEngine::launched, this, [this] {
        m_runLabel->setText(QStringLiteral("%1 · %2 · running").arg(m_session->record().id, m_session->record().mode));
        m_historyModel->refresh();
    });
}

void MainWindow::onRunStarting(const RunRecord& record) {
    if (m_debugDialog)
        m_debugDialog->close();
    m_runView->clear();
    m_diagnostics->clear();
    m_stacks->clear();
    m_stacks->setFocusRanks({});
    m_nccl->clear();
    m_logs->model()->clear();
    // One name per host everywhere, as the job names its node: tiles, log lines and diagnoses.
    m_runView->setRankHosts(record.rankHosts());
    m_logs->model()->setRankHosts(record.rankHosts());
    // Lines the inspector's window let go are read back from the run store on demand.
    auto pager = std::make_shared<RunLinePager>(m_session->store(), record.id);
    m_logs->setOlderLinesSource([pager](const QVector<RunLinePager::StreamStart>& streams, int count) {
        return pager->before(streams, count);
    });
    m_focusedRank = -1;
    m_runLabel->setText(QStringLiteral("%1 · %2 · %3").arg(record.id, record.mode, record.state));
    setWindowTitle(QStringLiteral("RankScope — %1").arg(record.name.isEmpty() ? record.id : record.name));
    m_historyModel->refresh();
    updateActions();
}

void MainWindow::addDiagnoses(const QVector<Diagnosis>& diagnoses) {
    m_diagnostics->addDiagnoses(diagnoses);
    for (const Diagnosis& d : diagnoses) {
        if (!d.resolved)
            showMessage(d.toString(), true);
        // The stack tree opens where the hung ranks part from the others, for this capture and the next.
        if (d.kind == DiagnosisKind::Hang && !d.resolved && d.culprits > 0)
            m_stacks->setFocusRanks(
                QList<int>(d.ranks.cbegin(), d.ranks.cbegin() + std::min<qsizetype>(d.culprits, d.ranks.size())));
    }
}

void MainWindow::showDebugServer(const remote::DebugServer& server) {
    const QString text =
        QStringLiteral("rank %1 on %2 waits for a debugger at %3").arg(server.rank).arg(server.host, server.address);
    m_diagnostics->addNote(QStringLiteral("debugger"), QStringLiteral("debugger"), server.rank,
                           text + QStringLiteral(": ") + server.gdbCommand);
    showMessage(text);

    // Not modal: the run view stays live while the user attaches.
    auto* dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("debugServerDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(QStringLiteral("Rank %1 waits for a debugger").arg(server.rank));
    auto* layout = new QVBoxLayout(dialog);
    auto* label = new QLabel(text + QStringLiteral(" (the other ranks wait for it in their collectives).\n"
                                                   "Attach with gdb, or an IDE's remote gdb attach to that address "
                                                   "with program %1:")
                                        .arg(server.program));
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* command = new QLineEdit(server.gdbCommand);
    command->setObjectName(QStringLiteral("gdbCommand"));
    command->setReadOnly(true);
    command->setMinimumWidth(640);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    QPushButton* copy = buttons->addButton(QStringLiteral("Copy gdb command"), QDialogButtonBox::ActionRole);
    copy->setObjectName(QStringLiteral("copyGdbCommand"));
    connect(copy, &QPushButton::clicked, dialog, [command] { QApplication::clipboard()->setText(command->text()); });
    connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
    layout->addWidget(label);
    layout->addWidget(command);
    layout->addWidget(buttons);
    if (m_debugDialog)
        m_debugDialog->close();
    m_debugDialog = dialog;
    dialog->show();
}

void MainWindow::askDebugRank() {
    auto job = m_editor->job();
    if (!job)
        return;
    job->debug.node = m_debugNode->currentData().toString();
    if (job->debug.node.isEmpty())
        job->debug.node = kLocalNode;
    const int world = planRanks(*job, RunMode::Debug).worldSize;
    bool ok = false;
    const int rank = QInputDialog::getInt(this, QStringLiteral("Debug a rank in gdb"),
                                          QStringLiteral("Rank to start under gdbserver (0-%1):").arg(world - 1), 0, 0,
                                          std::max(0, world - 1), 1, &ok);
    QString error;
    if (ok && !debugRun(&error, QString(), rank))
        showMessage(error, true);
}

void MainWindow::onFinished(const RunRecord& record) {
    if (m_debugDialog)
        m_debugDialog->close(); // its address went with the run
    m_runLabel->setText(QStringLiteral("%1 · %2 · %3").arg(record.id, record.mode, record.state));
    m_runView->setOutcome(record);
    // A verdict is a finding that outlived the run (a stopped run's hang): it stays, as a failure does.
    showMessage(record.headline().isEmpty() ? QStringLiteral("run %1 %2").arg(record.id, record.state)
                                            : record.headline(),
                record.failedOrLost() || !record.verdict.isEmpty());
    m_historyModel->refresh();
    updateActions();
}

bool MainWindow::openJob(const QString& path, QString* error) {
    return m_editor->openFile(path, error); // the editor's jobChanged fills the cluster and the actions
}

bool MainWindow::editRunJob(const QString& runId, QString* error) {
    const std::optional<RunRecord> record = m_store->load(runId, error);
    if (!record)
        return false;
    if (record->job.isEmpty()) {
        if (error)
            *error = QStringLiteral("run %1 kept no job to edit").arg(runId);
        return false;
    }
    m_editor->openUntitled(QString::fromUtf8(QJsonDocument(record->job).toJson(QJsonDocument::Indented)));
    showTab(JobTab); // the editor's jobChanged filled the cluster and the actions
    showMessage(QStringLiteral("the job of run %1 is in the editor, not saved yet (Save asks where)").arg(runId));
    return true;
}

bool MainWindow::debugRun(QString* error, const QString& debugNode, std::optional<int> debugRank) {
    auto job = m_editor->job();
    if (!job) {
        if (error)
            *error = QStringLiteral("the job has problems: %1").arg(m_editor->issues().value(0).toString());
        return false;
    }
    job->debug.node = !debugNode.isEmpty() ? debugNode : m_debugNode->currentData().toString();
    if (job->debug.node.isEmpty())
        job->debug.node = kLocalNode;
    remote::LaunchOptions options;
    options.debugRank = debugRank;
    if (!m_session->launch(*job, RunMode::Debug, options, error))
        return false;
    showTab(RunTab);
    return true;
}

bool MainWindow::submitRun(QString* error) {
    const auto job = m_editor->job();
    if (!job) {
        if (error)
            *error = QStringLiteral("the job has problems: %1").arg(m_editor->issues().value(0).toString());
        return false;
    }
    if (job->nodes.isEmpty()) {
        if (error)
            *error = QStringLiteral("nodes: a distributed run needs at least one node; add them in the cluster table");
        return false;
    }
    if (!m_session->launch(*job, RunMode::Submit, error))
        return false;
    showTab(RunTab);
    return true;
}

bool MainWindow::attachRun(const QString& runId, QString* error) {
    m_runView->setClock({}); // live: wall-clock time
    if (!m_session->attach(runId, error))
        return false;
    showTab(RunTab);
    updateActions();
    return true;
}

bool MainWindow::openStoredRun(const QString& runId, QString* error) {
    const QString id = m_store->resolveId(runId, error); // "no run 'x'", "'2026' matches several runs: …"
    if (id.isEmpty())
        return false;
    const auto stored = m_store->load(id, error);
    if (!stored)
        return false;
    // Offline, a rank is judged at the moment the run ended, not against today's clock.
    const double end = stored->ended.isValid() ? static_cast<double>(stored->ended.toMSecsSinceEpoch()) / 1000.0
                                               : static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
    m_runView->setClock([end] { return end; });
    if (!m_session->open(stored->id, error))
        return false;
    m_runView->setOutcome(*stored); // "running" (not seen to end) says none
    if (const double until = m_session->engine()->openedKnownUntil(); std::isfinite(until)) {
        // Not seen to end: shown as of where this machine's copy stops, and said so.
        m_runView->setClock([until] { return until; });
        showMessage(
            QStringLiteral("run %1 is %2 as of %3 in this machine's copy: follow it from History to bring "
                           "it up to date")
                .arg(stored->id, stored->state,
                     QDateTime::fromMSecsSinceEpoch(qint64(until * 1000.0)).toString(QStringLiteral("HH:mm:ss"))));
    }
    showTab(RunTab);
    updateActions();
    return true;
}

bool MainWindow::reattachLatest(QString* error) {
    for (const RunRecord& run : m_store->list())
        if (run.inProgress())
            return attachRun(run.id, error);
    if (error)
        *error = QStringLiteral("no run is going on");
    return false;
}

void MainWindow::stopRun() {
    if (!m_session->isActive())
        return;
    showMessage(QStringLiteral("stopping %1: SIGTERM, then SIGKILL after the grace period").arg(m_session->record().id));
    m_session->stop();
}

void MainWindow::showTab(Tab tab) {
    m_tabs->setCurrentIndex(tab);
}

void MainWindow::focusRank(int rank) {
    m_focusedRank = rank == m_focusedRank ? -1 : rank; // a second click on the same rank shows all again
    m_runView->focusRank(m_focusedRank);
    m_logs->focusRank(m_focusedRank);
    showMessage(m_focusedRank < 0 ? QStringLiteral("all ranks") : QStringLiteral("rank %1").arg(m_focusedRank));
}

void MainWindow::updateActions() {
    const bool active = m_session->isActive();
    const bool valid = m_editor->isValid();
    m_debugAction->setEnabled(valid && !active);
    m_debugRankAction->setEnabled(valid && !active);
    m_debugNode->setEnabled(!active);
    m_submitAction->setEnabled(valid && !active && m_editor->job() && !m_editor->job()->nodes.isEmpty());
    m_stopAction->setEnabled(active);
    m_detachAction->setEnabled(active);
    m_stacks->setCaptureEnabled(active);
}

void MainWindow::updateDebugNodes() {
    const QString current = m_debugNode->currentData().toString();
    m_debugNode->clear();
    m_debugNode->addItem(QStringLiteral("this machine"), kLocalNode);
    if (const auto job = m_editor->job()) {
        for (const NodeSpec& node : job->nodes)
            m_debugNode->addItem(node.name, node.name);
        const int preferred = m_debugNode->findData(current.isEmpty() ? job->debug.node : current);
        m_debugNode->setCurrentIndex(preferred >= 0 ? preferred : 0);
    }
}

void MainWindow::openSelectedHistory(bool follow) {
    const QModelIndex index = m_history->currentIndex();
    if (!index.isValid()) {
        showMessage(QStringLiteral("choose a run in the list first"), true);
        return;
    }
    const QString id = index.data(HistoryModel::RunIdRole).toString();
    QString error;
    const bool ok = follow ? attachRun(id, &error) : openStoredRun(id, &error);
    if (!ok)
        showMessage(error, true);
}

void MainWindow::exportChart() {
    const QStringList names = {QStringLiteral("Loss"), QStringLiteral("Images/s"), QStringLiteral("Step time"),
                               QStringLiteral("Validation accuracy"), QStringLiteral("GPU")};
    bool ok = false;
    const QString name = QInputDialog::getItem(this, QStringLiteral("Export chart"), QStringLiteral("Chart:"), names,
                                               0, false, &ok);
    if (!ok)
        return;
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Save chart"),
                                                      name.toLower().replace(QLatin1Char(' '), QLatin1Char('-')) +
                                                          QStringLiteral(".png"),
                                                      QStringLiteral("PNG images (*.png)"));
    QString error;
    if (!path.isEmpty() && !m_runView->charts()->saveChartPng(static_cast<int>(names.indexOf(name)), path, &error))
        showMessage(error, true);
}

void MainWindow::exportMetrics() {
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Save metrics"), QStringLiteral("metrics.csv"),
                                                      QStringLiteral("CSV files (*.csv)"));
    QString error;
    if (!path.isEmpty() && !m_runView->metrics()->exportCsv(path, &error))
        showMessage(error, true);
}

void MainWindow::exportRankLog() {
    const RunRecord& run = m_session->record();
    if (run.id.isEmpty()) {
        showMessage(QStringLiteral("no run to export from: launch one or open one from the history"), true);
        return;
    }
    int rank = m_focusedRank;
    if (rank < 0) {
        bool ok = false;
        rank = QInputDialog::getInt(this, QStringLiteral("Export a rank's log"), QStringLiteral("Rank:"), 0, 0,
                                    std::max(0, run.worldSize - 1), 1, &ok);
        if (!ok)
            return;
    }
    const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Export rank %1's log to").arg(rank));
    QString error;
    if (!dir.isEmpty() && !exportRankStreams(rank, dir, &error))
        showMessage(error, true);
    else if (!dir.isEmpty())
        showMessage(QStringLiteral("rank %1's stdout, stderr and events saved in %2").arg(rank).arg(dir));
}

bool MainWindow::exportRankStreams(int rank, const QString& dir, QString* error) const {
    // From the run store, byte for byte: the whole history, not only the lines the inspector keeps in memory.
    const RunRecord& run = m_session->record();
    for (const RankStream stream : kRankStreams) {
        const QString source = m_store->streamPath(run.id, rank, stream);
        const QString target = QStringLiteral("%1/%2-rank%3.%4").arg(dir, run.id).arg(rank).arg(rankStreamSuffix(stream));
        QFile::remove(target);
        if (QFile::exists(source) && !QFile::copy(source, target)) {
            if (error)
                *error = QStringLiteral("cannot write %1").arg(target);
            return false;
        }
    }
    return true;
}

QString MainWindow::fitStatusText(const QString& text, const QFontMetrics& metrics, int room) {
    if (metrics.horizontalAdvance(text) <= room)
        return text;
    const qsizetype clause = text.indexOf(QLatin1String("; "));
    const QString rest = clause > 0 ? text.mid(clause) : QString();
    const int restWidth = metrics.horizontalAdvance(rest);
    const int headRoom =
        std::min(room / 3, metrics.horizontalAdvance(QStringLiteral("rank 12 on node-a failed first…")));
    return clause > 0 && restWidth <= room - headRoom
               ? metrics.elidedText(text.left(clause), Qt::ElideRight, room - restWidth) + rest
               : metrics.elidedText(text, Qt::ElideMiddle, room);
}

void MainWindow::showMessage(const QString& text, bool error) {
    QStatusBar* bar = statusBar();
    bar->setStyleSheet(error ? QStringLiteral("QStatusBar { color: #b71c1c; }") : QString());
    // A long finding would be drawn under the run's label: it is cut to the room left of the permanent labels.
    int room = bar->width() - 2 * bar->style()->pixelMetric(QStyle::PM_LayoutHorizontalSpacing) - 16;
    for (const QLabel* label : {m_runLabel, m_bridgeLabel})
        if (label && label->isVisible())
            room -= label->sizeHint().width() + 8;
    const QString shown = fitStatusText(text, bar->fontMetrics(), std::max(room, 80));
    bar->showMessage(shown, error ? 0 : 8000);
    bar->setToolTip(text);
}

void MainWindow::saveState() const {
    QSettings settings;
    settings.setValue(QStringLiteral("mainWindow/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("mainWindow/state"), QMainWindow::saveState());
    settings.setValue(QStringLiteral("mainWindow/tab"), m_tabs->currentIndex());
    if (auto* splitter = findChild<QSplitter*>(QStringLiteral("setupSplitter")))
        settings.setValue(QStringLiteral("mainWindow/setupSplitter"), splitter->saveState());
    settings.setValue(QStringLiteral("job/lastPath"), m_editor->filePath());
    if (!m_editor->filePath().isEmpty() || m_editor->jsonText().isEmpty())
        settings.remove(QStringLiteral("job/unsavedText"));
    else
        settings.setValue(QStringLiteral("job/unsavedText"), m_editor->jsonText()); // nothing typed is lost
}

void MainWindow::restoreSavedState() {
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("mainWindow/geometry")).toByteArray());
    QMainWindow::restoreState(settings.value(QStringLiteral("mainWindow/state")).toByteArray());
    if (auto* splitter = findChild<QSplitter*>(QStringLiteral("setupSplitter")))
        splitter->restoreState(settings.value(QStringLiteral("mainWindow/setupSplitter")).toByteArray());
    const QString last = settings.value(QStringLiteral("job/lastPath")).toString();
    const QString unsaved = settings.value(QStringLiteral("job/unsavedText")).toString();
    QString error;
    if (!last.isEmpty() && openJob(last, &error)) {
        // the last job file, with its cluster
    } else if (!unsaved.isEmpty()) {
        m_editor->setJsonText(unsaved);
    } else {
        QFile file(QString::fromLatin1(kDefaultJob));
        if (file.open(QIODevice::ReadOnly))
            m_editor->setJsonText(QString::fromUtf8(file.readAll()));
    }
    if (!error.isEmpty())
        showMessage(QStringLiteral("the last job could not be opened: %1").arg(error), true);
    m_tabs->setCurrentIndex(settings.value(QStringLiteral("mainWindow/tab"), 0).toInt());
    // A submitted run goes on while the app is closed: follow it again.
    reattachLatest();
    if (settings.value(QStringLiteral("bridge/hosted"), false).toBool() && !setBridgeHosted(true, &error))
        showMessage(QStringLiteral("IDE bridge: %1").arg(error), true);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    saveState();
    if (m_session->isActive())
        m_session->detach(); // the run goes on on its nodes; reopening RankScope reattaches
    m_cluster->prompter()->cancel(true);
    event->accept();
}

} // namespace rankscope::gui
