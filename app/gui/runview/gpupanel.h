// SPDX-License-Identifier: MIT
#pragma once

#include "chartsupport.h"
#include "runmetrics.h"

#include <QMap>
#include <QWidget>

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QStackedWidget;
class QValueAxis;

namespace rankscope::gui {

// GPU utilisation, memory or power (one at a time, chosen in a combo box) per GPU per node, against seconds
// since the first sample. Until a sample arrives it shows a sentence instead of an empty chart.
class GpuPanel final : public QWidget {
    Q_OBJECT

public:
    explicit GpuPanel(RunMetrics* metrics, QWidget* parent = nullptr);

    void refresh(); // the tick: replaces changed series, rescales the axes once
    void setMetric(GpuMetric metric);
    [[nodiscard]] GpuMetric metric() const { return m_metric; }
    [[nodiscard]] bool showsChart() const;
    [[nodiscard]] QString noTelemetryText() const;
    // Why a node sends no samples (the engine's gpuTelemetryError): said in place of the chart, or under it when
    // other nodes do send.
    void addNodeError(const QString& host, const QString& message);
    void clearNodeErrors();
    // Forgets every GPU's line and every node's reason: a new run. The metrics are cleared by their owner.
    void clear();
    [[nodiscard]] QChart* chart() const { return m_chart; }
    [[nodiscard]] QChartView* chartView() const { return m_view; }
    [[nodiscard]] QLineSeries* series(const QString& gpu) const; // "node/gpuN"; nullptr before its first sample

    // What the pointer on a GPU's line is told (the tooltip), empty when it is on none: the GPU, the time, its value
    // and the median of the GPUs then ("node-a/gpu1 · 42 s · 12 % · median of 16 GPUs 97 %"). A cluster's GPUs are
    // too many for a legend; this says whose line it is, and which one idles while the others work.
    [[nodiscard]] QString hoverText() const { return m_hoverText; }
    [[nodiscard]] QString pointText(const QString& gpu, double seconds) const;

private:
    void onHovered(const QString& gpu, QPointF point, bool entered);
    void showHoverText(double seconds);
    void applyPens();
    bool eventFilter(QObject* watched, QEvent* event) override;

    RunMetrics* m_metrics;
    GpuMetric m_metric = GpuMetric::Utilization;
    QStackedWidget* m_stack;
    QLabel* m_noTelemetry;
    QLabel* m_nodeErrors;
    QMap<QString, QStringList> m_errors; // by host, in arrival order
    void showErrors();
    QComboBox* m_metricBox;
    QChart* m_chart;
    QChartView* m_view;
    QValueAxis* m_xAxis;
    QValueAxis* m_yAxis;
    QMap<QString, DrawnSeries> m_series;
    QString m_hovered; // the GPU whose line the pointer is on
    QString m_hoverText;
};

} // namespace rankscope::gui
