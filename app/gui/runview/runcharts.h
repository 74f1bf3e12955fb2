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
// the GPU panel. Nothing is drawn when data arrives: a timer tick (50 ms by default) replaces only the series
// whose buffers changed, with points downsampled to the plot's width, and rescales the axes once.
class RunCharts final : public QWidget {
    Q_OBJECT

public:
    enum Chart { LossChart, ThroughputChart, StepTimeChart, AccuracyChart, GpuChart, ChartCount };

    explicit RunCharts(RunMetrics* metrics, QWidget* parent = nullptr);

    // Highlights a rank's lines (thicker, the others faded) and shows its step-time breakdown; -1: none, mean.
    void focusRank(int rank);
    [[nodiscard]] int focusedRank() const { return m_focusedRank; }
    // The rank drawn highlighted: the hovered one, else the focused one; -1 for none.
    [[nodiscard]] int highlightedRank() const { return m_hoveredRank >= 0 ? m_hoveredRank : m_focusedRank; }

    void addGpuSamples(const QVector<GpuSample>& samples);
    void setTickInterval(int milliseconds);
    [[nodiscard]] int tickInterval() const;
    // The tick's work, now: tests and the PNG export call it to draw what is buffered.
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

private:
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
    void onHovered(int rank, bool entered);
    void refreshRankCharts();
    void refreshStepTime();
    void refreshAccuracy();
    [[nodiscard]] int bucketCount(const Panel& panel) const;

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
    bool m_dirty = true;
    qint64 m_replaceCount = 0;
};

} // namespace rankscope::gui
