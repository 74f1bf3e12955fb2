// SPDX-License-Identifier: MIT
#pragma once

#include "runmetrics.h"

#include "core/rankstatus.h"
#include "core/trainerevent.h"

#include <QVector>
#include <QWidget>

#include <functional>

class QLabel;
class QSplitter;
class QTimer;

namespace rankscope {
struct RunRecord;
}

namespace rankscope::gui {

class RankGrid;
class RankGridModel;
class RunCharts;

// The live run view: a progress line, the rank grid and the charts. The main window forwards the engine's
// signals here. Batches are queued and applied on a fixed tick (50 ms): one RunMetrics update and one row
// insertion per tick, however many batches arrived. The charts draw on the tick's two halves (RunCharts).
class RunView final : public QWidget {
    Q_OBJECT

public:
    explicit RunView(QWidget* parent = nullptr);

    void addEvents(const QVector<rankscope::TrainerEvent>& events);
    void rankExited(int rank, const QString& host, int status, bool stopped = false);
    void setRankHosts(const QHash<int, QString>& hosts); // RunRecord::rankHosts, before the run's first events
    // The engine's findings, applied after the events of the same tick: the grid's hung, slow and failed.
    void addDiagnoses(const QVector<rankscope::Diagnosis>& diagnoses);
    void addGpuSamples(const QVector<GpuSample>& samples);
    void addGpuError(const QString& host, const QString& message); // a node that sends no GPU samples, and why
    // Every view on one rank: its tile outlined, its lines highlighted, its step-time breakdown; -1: none.
    void focusRank(int rank);
    [[nodiscard]] int focusedRank() const { return m_focusedRank; }
    void clear();
    // Applies what is queued now, and redraws (the tick does this on its own).
    void flush();
    // The whole tick (50 ms by default); the charts draw on its halves.
    void setTickInterval(int milliseconds);
    [[nodiscard]] int tickInterval() const;

    // The clock heartbeat ages are measured against; wall-clock Unix seconds by default. An offline
    // view of a stored run passes the run's last event time.
    void setClock(std::function<double()> clock);
    void setStatusOptions(const RankStatusOptions& options);
    // How the run ended, as its engine judged it (its state: "finished", "failed", "stopped", "lost"): the progress
    // line says it. A run in progress clears it, as clear() does.
    void setOutcome(const RunRecord& run);
    [[nodiscard]] QString progressText() const;

    [[nodiscard]] RunMetrics* metrics() const { return m_metrics; }
    [[nodiscard]] RankGridModel* gridModel() const { return m_gridModel; }
    [[nodiscard]] RankGrid* grid() const { return m_grid; }
    [[nodiscard]] RunCharts* charts() const { return m_charts; }

signals:
    void rankSelected(int rank);
    // A tick that applied no events and drew no loss chart (every 50 ms): a slot for other periodic GUI work,
    // so that it does not add to the heaviest ticks.
    void lightTick();

private:
    void tick();
    void applyPending();
    void updateLabels();
    [[nodiscard]] bool everyRankEnded() const;

    RunMetrics* m_metrics;
    RankGridModel* m_gridModel;
    RankGrid* m_grid;
    RunCharts* m_charts;
    QLabel* m_progress;
    QLabel* m_stateCounts;
    QSplitter* m_splitter;
    QTimer* m_tick;
    std::function<double()> m_clock;
    QVector<rankscope::TrainerEvent> m_pendingEvents;
    struct PendingExit {
        int rank;
        QString host;
        int status;
        bool stopped;
    };
    QVector<PendingExit> m_pendingExits;
    QVector<rankscope::Diagnosis> m_pendingDiagnoses;
    QList<int> m_plannedRanks; // the run's ranks, from setRankHosts
    QString m_outcome;         // setOutcome's: empty while the run goes on
    int m_focusedRank = -1;
    bool m_halfTick = true; // the last tick was a half one (while the charts do not take turns)
};

} // namespace rankscope::gui
