// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"
#include "core/runstore.h"
#include "remote/runengine.h"

#include <QDialog>
#include <QFontMetrics>
#include <QMainWindow>
#include <QPointer>

#include <optional>

class QAction;
class QComboBox;
class QDockWidget;
class QLabel;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;

namespace rankscope::gui {

class ClusterPanel;
class DiagnosticsPanel;
class HistoryModel;
class JobEditor;
class LogInspector;
class RunSession;
class RunView;
class NcclPanel;
class StackPanel;

// Where the user lives: the job and its cluster, the two buttons (Debug on one node, Submit distributed),
// the live run view, the log inspector and the history of runs. A front end over core/ and remote/: it
// drives the same RunEngine as rankscope-cli through a RunSession and never talks to a node itself.
class MainWindow final : public QMainWindow {
    Q_OBJECT

public:
    struct Options {
        QString storeRoot;        // empty: RunStore::defaultRoot()
        QString knownHostsPath;   // empty: ~/.ssh/known_hosts
        QString sshConfigPath;    // empty: ~/.ssh/config
        QString localTrainer;     // empty: rankscope-trainer next to this executable
        bool restoreState = true; // window layout, last job, and reattaching to the newest live run
        QString bridgeRuntimeDir; // where the IDE bridge's connection file goes; empty: the user's runtime dir
    };
    static constexpr const char* kDefaultJob = ":/rankscope/jobs/demo.json";

    explicit MainWindow(Options options, QWidget* parent = nullptr);
    ~MainWindow() override;

    enum Tab { JobTab, RunTab, LogsTab, HistoryTab };

    bool openJob(const QString& path, QString* error);
    // In the status bar, left of the run's label: elided to the room there (whole in its tooltip); an error stays
    // until the next message, anything else for 8 s.
    void showMessage(const QString& text, bool error = false);
    // `text` cut to `room` pixels for the status bar (its tooltip keeps it whole). A verdict's clauses after its first
    // say the most ("…; it was waiting on a hung rank: rank 1 on node-b stuck at …"): where they leave the first
    // clause room for its start (who failed), that clause is cut instead of them; any other text loses its middle.
    [[nodiscard]] static QString fitStatusText(const QString& text, const QFontMetrics& metrics, int room);
    // The editor's job, with `debugNode` ("local" or a node's name) for a debug run; `debugRank` starts that
    // rank under gdbserver, and its address and a gdb command line are shown once it waits.
    bool debugRun(QString* error, const QString& debugNode = QString(), std::optional<int> debugRank = std::nullopt);
    bool submitRun(QString* error);
    // Hosts the IDE bridge (docs/bridge.md) in the app, or stops it; remembered across starts.
    bool setBridgeHosted(bool hosted, QString* error = nullptr);
    [[nodiscard]] class BridgeHost* bridgeHost() const { return m_bridge; }
    bool attachRun(const QString& runId, QString* error);
    bool openStoredRun(const QString& runId, QString* error); // offline
    // Puts the job a stored run was launched with into the editor, untitled (Save asks where), with its cluster:
    // to launch it again, or change it first. False with *error when the run is unknown or kept no job.
    bool editRunJob(const QString& runId, QString* error);
    // Reattaches to the newest submitted run that is still going on; false when there is none.
    bool reattachLatest(QString* error = nullptr);
    void stopRun();
    void showTab(Tab tab);
    // Copies the stored stdout, stderr and events of `rank` of the current run into dir, byte for byte, as
    // RUN-rankR.out|err|events.
    bool exportRankStreams(int rank, const QString& dir, QString* error) const;

    [[nodiscard]] JobEditor* jobEditor() const { return m_editor; }
    [[nodiscard]] ClusterPanel* clusterPanel() const { return m_cluster; }
    [[nodiscard]] RunView* runView() const { return m_runView; }
    [[nodiscard]] LogInspector* logInspector() const { return m_logs; }
    [[nodiscard]] HistoryModel* historyModel() const { return m_historyModel; }
    // One row per finding of the engine's diagnosis (root cause, hang, straggler, divergence); a click
    // focuses every view on the rank it is about.
    [[nodiscard]] DiagnosticsPanel* diagnosticsView() const { return m_diagnostics; }
    // The latest merged stack capture (automatic on a hang, or Capture stacks); a click on a frame of one rank
    // focuses the log inspector on it.
    [[nodiscard]] StackPanel* stackPanel() const { return m_stacks; }
    [[nodiscard]] QDockWidget* stacksDock() const { return m_stacksDock; }
    // What NCCL printed on each rank, side by side, values most ranks do not share marked.
    [[nodiscard]] NcclPanel* ncclPanel() const { return m_nccl; }
    [[nodiscard]] RunSession* session() const { return m_session; }
    // The window that shows a debugged rank's address and gdb command line (with Copy), while it is open.
    [[nodiscard]] QDialog* debugServerDialog() const { return m_debugDialog; }
    [[nodiscard]] RunStore* store() const { return m_store.get(); }

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void buildActions();
    void buildTabs();
    void connectSession();
    void buildStacksDock(QDockWidget* besides);
    void buildNcclDock(QDockWidget* besides);
    void showRankLog(int rank);
    void onRunStarting(const RunRecord& record);
    void onFinished(const RunRecord& record);
    void addDiagnoses(const QVector<Diagnosis>& diagnoses);
    void showDebugServer(const remote::DebugServer& server);
    void askDebugRank();
    void focusRank(int rank);
    void updateActions();
    void updateDebugNodes();
    void openSelectedHistory(bool follow);
    void exportChart();
    void exportMetrics();
    void exportRankLog();
    void saveState() const;
    void restoreSavedState();

    Options m_options;
    std::unique_ptr<RunStore> m_store;
    RunSession* m_session = nullptr;
    QTabWidget* m_tabs = nullptr;
    JobEditor* m_editor = nullptr;
    ClusterPanel* m_cluster = nullptr;
    RunView* m_runView = nullptr;
    LogInspector* m_logs = nullptr;
    HistoryModel* m_historyModel = nullptr;
    QSortFilterProxyModel* m_historyProxy = nullptr;
    QTableView* m_history = nullptr;
    DiagnosticsPanel* m_diagnostics = nullptr;
    StackPanel* m_stacks = nullptr;
    QDockWidget* m_stacksDock = nullptr;
    NcclPanel* m_nccl = nullptr;
    QComboBox* m_debugNode = nullptr;
    QAction* m_debugAction = nullptr;
    QAction* m_debugRankAction = nullptr;
    QPointer<QDialog> m_debugDialog;
    QAction* m_submitAction = nullptr;
    QAction* m_stopAction = nullptr;
    QAction* m_detachAction = nullptr;
    QLabel* m_runLabel = nullptr;
    QLabel* m_bridgeLabel = nullptr;
    class BridgeHost* m_bridge = nullptr;
    QAction* m_bridgeAction = nullptr;
    int m_focusedRank = -1;
    bool m_logTickDue = false; // the run view's light ticks alternate: flush the session's log lines, or not
};

} // namespace rankscope::gui
