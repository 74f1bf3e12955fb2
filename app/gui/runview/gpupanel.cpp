// SPDX-License-Identifier: MIT
#include "gpupanel.h"

#include "rankpalette.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QLabel>
#include <QLineSeries>
#include <QMouseEvent>
#include <QStackedWidget>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <limits>

namespace rankscope::gui {

namespace {

QString axisTitle(GpuMetric metric) {
    switch (metric) {
    case GpuMetric::Utilization:
        return GpuPanel::tr("utilisation (%)");
    case GpuMetric::Memory:
        return GpuPanel::tr("memory used (MiB)");
    case GpuMetric::Power:
        return GpuPanel::tr("power (W)");
    }
    return {};
}

QString formatValue(GpuMetric metric, double value) {
    switch (metric) {
    case GpuMetric::Utilization:
        return GpuPanel::tr("%1 %").arg(value, 0, 'f', 0);
    case GpuMetric::Memory:
        return GpuPanel::tr("%1 MiB").arg(value, 0, 'f', 0);
    case GpuMetric::Power:
        return GpuPanel::tr("%1 W").arg(value, 0, 'f', 0);
    }
    return {};
}

constexpr double kLineWidth = 1.5;
constexpr double kHoveredWidth = 3.0;

} // namespace

GpuPanel::GpuPanel(RunMetrics* metrics, QWidget* parent)
    : QWidget(parent), m_metrics(metrics), m_stack(new QStackedWidget(this)), m_noTelemetry(new QLabel(this)),
      m_nodeErrors(new QLabel(this)), m_metricBox(new QComboBox(this)), m_chart(new QChart), m_view(new QChartView(m_chart, this)) {
    showErrors();
    m_nodeErrors->setObjectName(QStringLiteral("gpuNodeErrors"));
    m_nodeErrors->setWordWrap(true);
    m_nodeErrors->setStyleSheet(QStringLiteral("QLabel { color: #b71c1c; background: white; padding: 2px 6px; }"));
    m_nodeErrors->hide();
    m_noTelemetry->setObjectName(QStringLiteral("gpuNoTelemetry"));
    m_noTelemetry->setAlignment(Qt::AlignCenter);
    m_noTelemetry->setWordWrap(true);
    m_noTelemetry->setStyleSheet(QStringLiteral("QLabel { color: #555; background: white; padding: 12px; }"));

    styleChart(m_chart, tr("GPUs"));
    m_chart->legend()->setAlignment(Qt::AlignBottom);
    m_xAxis = addAxis(m_chart, Qt::AlignBottom, tr("seconds"), QStringLiteral("%d"));
    m_yAxis = addAxis(m_chart, Qt::AlignLeft, axisTitle(m_metric), QStringLiteral("%d"));
    m_view->setRenderHint(QPainter::Antialiasing);
    m_view->viewport()->installEventFilter(this); // the tooltip follows the pointer along a line

    m_metricBox->addItem(tr("Utilisation"), int(GpuMetric::Utilization));
    m_metricBox->addItem(tr("Memory"), int(GpuMetric::Memory));
    m_metricBox->addItem(tr("Power"), int(GpuMetric::Power));
    connect(m_metricBox, &QComboBox::currentIndexChanged, this,
            [this](int index) { setMetric(GpuMetric(m_metricBox->itemData(index).toInt())); });

    auto* chartPage = new QWidget(this);
    auto* chartLayout = new QVBoxLayout(chartPage);
    chartLayout->setContentsMargins(0, 0, 0, 0);
    chartLayout->setSpacing(2);
    chartLayout->addWidget(m_metricBox, 0, Qt::AlignRight);
    chartLayout->addWidget(m_view, 1);
    chartLayout->addWidget(m_nodeErrors);
    m_stack->addWidget(m_noTelemetry);
    m_stack->addWidget(chartPage);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_stack);
}

QString GpuPanel::noTelemetryText() const {
    if (m_errors.isEmpty())
        return tr("No GPU telemetry: this run's nodes have no GPUs.");
    QStringList lines;
    for (auto it = m_errors.cbegin(); it != m_errors.cend(); ++it)
        lines << tr("No GPU telemetry from %1: %2").arg(it.key(), it.value().join(QStringLiteral("; ")));
    return lines.join(QLatin1Char('\n'));
}

void GpuPanel::addNodeError(const QString& host, const QString& message) {
    QStringList& messages = m_errors[host];
    if (messages.contains(message))
        return;
    messages << message;
    showErrors();
}

void GpuPanel::clearNodeErrors() {
    m_errors.clear();
    showErrors();
}

void GpuPanel::clear() {
    for (const DrawnSeries& drawn : std::as_const(m_series)) {
        m_chart->removeSeries(drawn.series);
        delete drawn.series;
    }
    m_series.clear();
    m_hovered.clear();
    if (!m_hoverText.isEmpty())
        QToolTip::hideText(); // its line is gone
    m_hoverText.clear();
    clearNodeErrors();
}

QLineSeries* GpuPanel::series(const QString& gpu) const {
    const auto found = m_series.constFind(gpu);
    return found != m_series.cend() ? found->series : nullptr;
}

QString GpuPanel::pointText(const QString& gpu, double seconds) const {
    const QMap<QString, const SeriesBuffer*> buffers = m_metrics->gpuSeries(m_metric);
    const SeriesBuffer* own = buffers.value(gpu);
    const QPointF* point = own ? nearestPoint(*own, seconds) : nullptr;
    if (!point)
        return gpu;
    QString text = tr("%1 · %2 s · %3").arg(gpu).arg(point->x(), 0, 'f', 0).arg(formatValue(m_metric, point->y()));
    const QVector<double> then = valuesAt(buffers.values(), point->x()); // the GPUs sampled then
    if (then.size() < 2)
        return text;
    return text + tr(" · median of %1 GPUs %2").arg(then.size()).arg(formatValue(m_metric, median(then)));
}

void GpuPanel::onHovered(const QString& gpu, QPointF point, bool entered) {
    if (!entered && gpu != m_hovered)
        return; // another line's leave, after the pointer went on to this one
    m_hovered = entered ? gpu : QString();
    applyPens();
    if (!entered) {
        m_hoverText.clear();
        QToolTip::hideText();
        return;
    }
    showHoverText(point.x());
}

// A GPU's colour is its place among the GPUs in name order, out of how many there are (the palette changes past
// 10), so a node whose samples come later recolours every line. The hovered line is thicker and, as on the rank
// charts, the others fade.
void GpuPanel::applyPens() {
    const int count = int(m_series.size());
    int index = 0;
    for (auto it = m_series.cbegin(); it != m_series.cend(); ++it, ++index)
        it->series->setPen(overlaidLinePen(rankColor(index, count), kLineWidth, kHoveredWidth, it.key() == m_hovered,
                                           !m_hovered.isEmpty()));
}

void GpuPanel::showHoverText(double seconds) {
    m_hoverText = pointText(m_hovered, seconds);
    const SeriesBuffer* buffer = m_metrics->gpuSeries(m_metric).value(m_hovered);
    if (const QPointF* point = buffer ? nearestPoint(*buffer, seconds) : nullptr)
        showTipAt(m_view, series(m_hovered), *point, m_hoverText);
}

bool GpuPanel::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::MouseMove) { // the filter watches the chart's viewport only
        if (const QLineSeries* line = series(m_hovered))
            showHoverText(valueAt(m_view, line, static_cast<QMouseEvent*>(event)->position().toPoint()));
    }
    return QWidget::eventFilter(watched, event);
}

void GpuPanel::showErrors() {
    const QString text = noTelemetryText();
    QStringList paragraphs;
    for (const QString& line : text.split(QLatin1Char('\n')))
        paragraphs << QStringLiteral("<p>%1</p>").arg(line.toHtmlEscaped());
    m_noTelemetry->setText(QStringLiteral("<p><b>%1</b></p>%2").arg(tr("GPUs"), paragraphs.join(QString())));
    m_nodeErrors->setText(text);
    m_nodeErrors->setVisible(!m_errors.isEmpty());
}

bool GpuPanel::showsChart() const {
    return m_stack->currentIndex() == 1;
}

void GpuPanel::setMetric(GpuMetric metric) {
    if (metric == m_metric)
        return;
    m_metric = metric;
    m_metricBox->setCurrentIndex(m_metricBox->findData(int(metric)));
    m_yAxis->setTitleText(axisTitle(metric));
    for (DrawnSeries& drawn : m_series)
        drawn.revision = ~quint64(0); // another buffer now: redraw
    refresh();
}

void GpuPanel::refresh() {
    if (!m_metrics->hasGpuSamples()) {
        m_stack->setCurrentIndex(0);
        return;
    }
    m_stack->setCurrentIndex(1);
    const QMap<QString, const SeriesBuffer*> buffers = m_metrics->gpuSeries(m_metric);
    double xMax = 1.0;
    double yLo = std::numeric_limits<double>::infinity();
    double yHi = -yLo;
    for (const SeriesBuffer* buffer : buffers) {
        if (!buffer->isEmpty())
            xMax = std::max(xMax, buffer->points().constLast().x());
        yLo = std::min(yLo, buffer->minY());
        yHi = std::max(yHi, buffer->maxY());
    }
    const int width = std::max(int(m_chart->plotArea().width()), 100);
    bool added = false;
    for (auto it = buffers.cbegin(); it != buffers.cend(); ++it) {
        auto found = m_series.find(it.key());
        if (found == m_series.end()) {
            auto* series = new QLineSeries;
            series->setName(it.key());
            m_chart->addSeries(series);
            series->attachAxis(m_xAxis);
            series->attachAxis(m_yAxis);
            connect(series, &QLineSeries::hovered, this,
                    [this, gpu = it.key()](const QPointF& point, bool entered) { onHovered(gpu, point, entered); });
            found = m_series.insert(it.key(), DrawnSeries{series});
            added = true;
        }
        syncSeries(*found, **it, 0.0, xMax, width);
    }
    if (added)
        applyPens();
    m_chart->legend()->setVisible(buffers.size() <= 12);
    m_xAxis->setRange(0.0, xMax);
    setPaddedRange(m_yAxis, yLo, yHi, true);
}

} // namespace rankscope::gui
