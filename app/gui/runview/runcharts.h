// SPDX-License-Identifier: MIT
#pragma once

#include "chartsupport.h"
#include "runmetrics.h"

#include <QMap>
#include <QWidget>

#include <array>

class QChart;
class QChartView;
class QLineSeries;
class QTimer;
class QValueAxis;

namespace rankscope::gui {

class GpuPanel;

// The run's charts, drawn from a RunMetrics: loss per rank and images/s per rank (all ranks overlaid),
// the step-time breakdown of the focused rank (or the mean of all ranks), validation accuracy per epoch, and
// the GPU panel. Nothing is drawn when data arrives: a tick replaces only the series whose buffers changed, with
// points downsampled to the plot's width, and rescales the axes once.
//
// Qt Charts strokes a replaced series' whole path again (for its hover shape), so a tick costs the points it
// replaces. While the charts hold few points a tick draws everything that changed; past kTickPointBudget the
// ticks take turns: the loss chart on one, the other charts on the next, so no frame carries every series and
// only one chart view repaints per tick. Each chart is then drawn every second tick: with the 25 ms tick, 20 times
// a second, as before the split. The charts tick on their own timer, or on their owner's (setTickDriven).
class RunCharts final : public QWidget {
    Q_OBJECT

public:
    enum Chart { LossChart, ThroughputChart, StepTimeChart, AccuracyChart, GpuChart, ChartCount };

    // Points a tick may replace before the charts take turns (about 4 ms of Qt Charts' geometry on this
    // machine; the GUI pipeline benchmark: 16 ranks hold about 15,000).
    static constexpr int kTickPointBudget = 4000;

    explicit RunCharts(RunMetrics* metrics, QWidget* parent = nullptr);

    // Highlights a rank's lines (thicker, the others faded) and shows its step-time breakdown; -1: none, mean.
    void focusRank(int rank);
    [[nodiscard]] int focusedRank() const { return m_focusedRank; }
    // Highlights a rank's lines while the pointer is on something else of it (its tile in the grid), as the pointer
    // on one of its lines does; -1 lets go.
    void pointAtRank(int rank);
    // The rank drawn highlighted: the hovered one, else the focused one; -1 for none.
    [[nodiscard]] int highlightedRank() const { return m_hoveredRank >= 0 ? m_hoveredRank : m_focusedRank; }
    // What the pointer on a rank's line is told (the tooltip), empty when it is on none: the rank, its host, the
    // step under the pointer, the rank's value there and how it stands against the median of the ranks at that step
    // ("rank 3 on node-b · step 120 · 201 images/s · 0.62× the median of 16 ranks (324)"; for the loss, "loss 0.312 ·
    // median of 16 ranks 0.298"), so that a line in a run too large for a legend says whose it is, and a slow one
    // how slow. It follows the pointer along the line.
    [[nodiscard]] QString hoverText() const { return m_hoverText; }
    [[nodiscard]] QString pointText(Chart which, int rank, double step) const;

    void addGpuSamples(const QVector<GpuSample>& samples);
    void setTickInterval(int milliseconds);
    [[nodiscard]] int tickInterval() const;
    // One tick's work (see above); the timer calls it, or the owner that drives the ticks.
    void tick();
    // Whether the next tick draws the loss chart: a driver applies new events just before it.
    [[nodiscard]] bool nextTickDrawsLoss() const { return !m_split || m_nextGroup == LossGroup; }
    // true: the owner calls tick() and the charts' own timer stops; false: the timer ticks (the default).
    void setTickDriven(bool byOwner);
    // The budget above (the GUI pipeline benchmark compares budgets; a huge one never takes turns).
    void setTickPointBudget(int points) { m_pointBudget = points; }
    // Whether the last tick drew one group only (the charts held more than kTickPointBudget points).
    [[nodiscard]] bool ticksTakeTurns() const { return m_split; }
    // Everything that changed, now: tests, the PNG export and a final flush call it to draw what is buffered.
    void refresh();
    // Forgets every series (a new run); the metrics are cleared by their owner.
    void clear();

    bool saveChartPng(int which, const QString& path, QString* error = nullptr);

    [[nodiscard]] QChart* chart(Chart which) const;
    [[nodiscard]] QChartView* chartView(Chart which) const;
    [[nodiscard]] GpuPanel* gpuPanel() const { return m_gpuPanel; }
    [[nodiscard]] QLineSeries* lossSeries(int rank) const;
    [[nodiscard]] QLineSeries* throughputSeries(int rank) const;
    [[nodiscard]] QLineSeries* stepTimeSeries(StepPart part) const;
    [[nodiscard]] QLineSeries* accuracySeries() const { return m_accuracy; }
    [[nodiscard]] qint64 replaceCount() const { return m_replaceCount; } // series replaced so far

signals:
    void rankHovered(int rank); // -1 when the pointer leaves a line
    void rankClicked(int rank); // a click on a rank's loss or images/s line

private:
    enum Group : quint8 { LossGroup = 0, OtherGroup = 1 };
    static constexpr quint8 kAllGroups = 0b11;

    struct RankLines {
        DrawnSeries loss;
        DrawnSeries throughput;
    };
    struct Panel {
        QChart* chart = nullptr;
        QChartView* view = nullptr;
        QValueAxis* x = nullptr;
        QValueAxis* y = nullptr;
    };

    Panel makePanel(const QString& title, const QString& xTitle, const QString& yTitle, const QString& yFormat);
    void addRank(int rank);
    void restyleRanks();
    void applyHighlight();
    void onHovered(Chart which, int rank, QPointF point, bool entered);
    void showHoverText(double step);
    bool eventFilter(QObject* watched, QEvent* event) override;
    void addNewRanks();
    void refreshGroup(Group group);
    void refreshRankChart(Chart which);
    void refreshStepTime();
    void refreshAccuracy();
    [[nodiscard]] int bucketCount(const Panel& panel) const;
    [[nodiscard]] int drawnPoints() const; // the points the rank and step-time series hold now

    RunMetrics* m_metrics;
    QTimer* m_tick;
    std::array<Panel, ChartCount - 1> m_panels;
    GpuPanel* m_gpuPanel;
    QMap<int, RankLines> m_ranks;
    std::array<DrawnSeries, kStepPartCount> m_stepTime;
    int m_stepTimeSource = -2; // the rank the breakdown shows, -1 the mean; -2 before the first draw
    QLineSeries* m_accuracy = nullptr;
    int m_accuracyDrawn = -1;
    int m_focusedRank = -1;
    int m_hoveredRank = -1;
    Chart m_hoverChart = LossChart; // the chart of the hovered line
    QString m_hoverText;
    quint8 m_dirty = kAllGroups; // the groups whose data changed since they were drawn
    Group m_nextGroup = LossGroup;
    bool m_split = false;
    int m_pointBudget = kTickPointBudget;
    qint64 m_replaceCount = 0;
};

} // namespace rankscope::gui
