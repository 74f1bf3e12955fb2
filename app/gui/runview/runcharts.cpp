// SPDX-License-Identifier: MIT
#include "runcharts.h"

#include "gpupanel.h"
#include "rankpalette.h"

#include <QChart>
#include <QChartView>
#include <QGridLayout>
#include <QLineSeries>
#include <QMouseEvent>
#include <QPixmap>
#include <QTimer>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace rankscope::gui {

namespace {

constexpr int kDefaultTickMs = 25; // the run view's half tick
constexpr int kLegendMaxRanks = 12;
constexpr double kInf = std::numeric_limits<double>::infinity();

constexpr std::array<QRgb, kStepPartCount> kPartColors = {0x59a14f, 0x4e79a7, 0xf28e2b, 0xe15759, 0xb07aa1};

struct Range {
    double xLo = kInf, xHi = -kInf, yLo = kInf, yHi = -kInf;
    void add(const SeriesBuffer& buffer) {
        if (buffer.isEmpty())
            return;
        xLo = std::min(xLo, buffer.points().constFirst().x());
        xHi = std::max(xHi, buffer.points().constLast().x());
        yLo = std::min(yLo, buffer.minY());
        yHi = std::max(yHi, buffer.maxY());
    }
    [[nodiscard]] bool valid() const { return xLo <= xHi; }
};

// The breakdown's legend sits under a third of the window: short names keep it unelided.
QString stepPartShortName(StepPart part) {
    static const std::array<const char*, kStepPartCount> kNames = {"data", "fwd", "bwd", "comm", "optim"};
    return QString::fromLatin1(kNames[size_t(part)]);
}

// Steps start at 1; a lone point still gets a visible span. When an axis moves, the chart's series are emptied
// first: Qt Charts rebuilds every series' geometry when an axis moves and again when its points are replaced, so
// a move would cost each series twice (the slowest ticks of the GUI pipeline benchmark were those). forgetAll()
// empties them; it runs only on a move, so a tick that keeps its axes does no extra work.
// The step axis ends at the run's last step (`lastStep`, 0 when the start events did not say) where its nice
// numbers would go past it: a run of 220 steps was drawn on 0 to 400, its right half empty for good.
template <typename ForgetAll>
void fitAxes(QValueAxis* x, QValueAxis* y, const Range& range, bool yFromZero, qint64 lastStep, ForgetAll forgetAll) {
    const double xLo = std::min(range.xLo, 0.0);
    const double xHi = std::max(range.xHi, range.xLo + 1.0);
    const double end = xHi <= double(lastStep) ? double(lastStep) : 0.0;
    const auto [yLo, yHi] = paddedRange(range.yLo, range.yHi, yFromZero);
    const bool xMoves = !axisHolds(x, xLo, xHi) || (end > 0.0 && x->max() > end);
    if (!xMoves && axisHolds(y, yLo, yHi))
        return;
    forgetAll();
    if (xMoves) {
        x->setRange(xLo, xHi);
        x->applyNiceNumbers();
        endStepAxisAt(x, end);
    }
    fitAxis(y, yLo, yHi);
}

double normalWidth(int rankCount) {
    return rankCount > kLegendMaxRanks ? 1.0 : 1.6;
}

} // namespace

RunCharts::RunCharts(RunMetrics* metrics, QWidget* parent)
    : QWidget(parent), m_metrics(metrics), m_tick(new QTimer(this)), m_gpuPanel(new GpuPanel(metrics, this)) {
    m_panels[LossChart] = makePanel(tr("Loss per rank"), tr("step"), tr("loss"), QStringLiteral("%.3g"));
    m_panels[ThroughputChart] = makePanel(tr("Images/s per rank"), tr("step"), tr("images/s"), QStringLiteral("%.0f"));
    m_panels[StepTimeChart] =
        makePanel(tr("Step time · mean of ranks"), tr("step"), tr("ms"), QStringLiteral("%.4g")); // 1000, not 1e+03
    m_panels[AccuracyChart] = makePanel(tr("Validation accuracy"), tr("epoch"), tr("accuracy"), QStringLiteral("%.3g"));
    m_panels[ThroughputChart].chart->legend()->hide();
    m_panels[AccuracyChart].chart->legend()->hide();
    m_panels[LossChart].chart->legend()->setAlignment(Qt::AlignRight);
    m_panels[StepTimeChart].chart->legend()->setAlignment(Qt::AlignBottom);

    for (int i = 0; i < kStepPartCount; ++i) {
        auto* series = new QLineSeries;
        series->setName(stepPartShortName(StepPart(i)));
        series->setPen(QPen(QColor(kPartColors[size_t(i)]), 1.6));
        m_panels[StepTimeChart].chart->addSeries(series);
        series->attachAxis(m_panels[StepTimeChart].x);
        series->attachAxis(m_panels[StepTimeChart].y);
        m_stepTime[size_t(i)].series = series;
    }
    m_accuracy = new QLineSeries;
    m_accuracy->setName(tr("validation accuracy"));
    m_accuracy->setPen(QPen(QColor(0x4e79a7), 2.0));
    m_accuracy->setPointsVisible(true);
    m_panels[AccuracyChart].chart->addSeries(m_accuracy);
    m_accuracy->attachAxis(m_panels[AccuracyChart].x);
    m_accuracy->attachAxis(m_panels[AccuracyChart].y);
    m_panels[AccuracyChart].x->setLabelFormat(QStringLiteral("%d"));

    auto* layout = new QGridLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    layout->addWidget(m_panels[LossChart].view, 0, 0, 1, 2);
    layout->addWidget(m_panels[ThroughputChart].view, 0, 2);
    layout->addWidget(m_panels[StepTimeChart].view, 1, 0);
    layout->addWidget(m_panels[AccuracyChart].view, 1, 1);
    layout->addWidget(m_gpuPanel, 1, 2);
    layout->setRowStretch(0, 5);
    layout->setRowStretch(1, 4);
    for (int column = 0; column < 3; ++column)
        layout->setColumnStretch(column, 1);

    // The pointer moving along a hovered line: the tooltip follows it from step to step.
    for (const Chart which : {LossChart, ThroughputChart})
        m_panels[size_t(which)].view->viewport()->installEventFilter(this);

    connect(m_metrics, &RunMetrics::changed, this, [this] { m_dirty = kAllGroups; });
    connect(m_tick, &QTimer::timeout, this, &RunCharts::tick);
    m_tick->setTimerType(Qt::PreciseTimer);
    m_tick->start(kDefaultTickMs);
}

RunCharts::Panel RunCharts::makePanel(const QString& title, const QString& xTitle, const QString& yTitle,
                                      const QString& yFormat) {
    Panel panel;
    panel.chart = new QChart;
    styleChart(panel.chart, title);
    panel.x = addAxis(panel.chart, Qt::AlignBottom, xTitle, QStringLiteral("%d"));
    // Labelled in whole steps: before the first, Qt's 0 to 1 would read 0, 0, 0, 0, 1.
    panel.x->setRange(0.0, panel.x->tickCount() - 1);
    panel.y = addAxis(panel.chart, Qt::AlignLeft, yTitle, yFormat);
    panel.view = new QChartView(panel.chart, this);
    panel.view->setRenderHint(QPainter::Antialiasing);
    panel.view->setMinimumSize(220, 160);
    return panel;
}

void RunCharts::setTickInterval(int milliseconds) {
    m_tick->setInterval(std::clamp(milliseconds, 5, 50)); // every chart at least 10 times a second
    if (m_tick->isActive())
        m_tick->start();
}

void RunCharts::setTickDriven(bool byOwner) {
    if (byOwner)
        m_tick->stop();
    else
        m_tick->start();
}

int RunCharts::tickInterval() const {
    return m_tick->interval();
}

QChart* RunCharts::chart(Chart which) const {
    return which == GpuChart ? m_gpuPanel->chart() : m_panels[size_t(which)].chart;
}

QChartView* RunCharts::chartView(Chart which) const {
    return which == GpuChart ? m_gpuPanel->chartView() : m_panels[size_t(which)].view;
}

QLineSeries* RunCharts::lossSeries(int rank) const {
    const auto found = m_ranks.constFind(rank);
    return found != m_ranks.cend() ? found->loss.series : nullptr;
}

QLineSeries* RunCharts::throughputSeries(int rank) const {
    const auto found = m_ranks.constFind(rank);
    return found != m_ranks.cend() ? found->throughput.series : nullptr;
}

QLineSeries* RunCharts::stepTimeSeries(StepPart part) const {
    return m_stepTime[size_t(part)].series;
}

// The downsampling buckets of a chart: one per two pixels of plot width, each drawn as its min and max. Qt Charts
// strokes every replaced series' whole path again to build its hover shape, so the points per series are what a
// tick costs; at 2 px per bucket a line looks the same and costs half (the GUI pipeline benchmark).
int RunCharts::bucketCount(const Panel& panel) const {
    const int width = int(panel.chart->plotArea().width());
    return width > 10 ? std::max(width / 2, 8) : 300; // not laid out yet: a typical width
}

void RunCharts::addGpuSamples(const QVector<GpuSample>& samples) {
    m_metrics->addGpuSamples(samples);
}

void RunCharts::addRank(int rank) {
    RankLines lines;
    const std::array<std::pair<Chart, DrawnSeries*>, 2> targets = {
        {{LossChart, &lines.loss}, {ThroughputChart, &lines.throughput}}};
    for (const auto& [which, drawn] : targets) {
        auto* series = new QLineSeries;
        series->setName(tr("rank %1").arg(rank));
        Panel& panel = m_panels[size_t(which)];
        panel.chart->addSeries(series);
        series->attachAxis(panel.x);
        series->attachAxis(panel.y);
        connect(series, &QLineSeries::hovered, this, [this, which = which, rank](const QPointF& point, bool entered) {
            onHovered(which, rank, point, entered);
        });
        connect(series, &QLineSeries::clicked, this, [this, rank] { emit rankClicked(rank); });
        drawn->series = series;
    }
    m_ranks.insert(rank, lines);
}

void RunCharts::onHovered(Chart which, int rank, QPointF point, bool entered) {
    if (entered)
        m_hoveredRank = rank;
    else if (m_hoveredRank == rank)
        m_hoveredRank = -1;
    else
        return;
    applyHighlight();
    emit rankHovered(m_hoveredRank);
    if (!entered) {
        m_hoverText.clear();
        QToolTip::hideText();
        return;
    }
    m_hoverChart = which;
    showHoverText(point.x());
}

// The tooltip stands at the point it describes, on the line.
void RunCharts::showHoverText(double step) {
    m_hoverText = pointText(m_hoverChart, m_hoveredRank, step);
    QChartView* view = m_panels[size_t(m_hoverChart)].view;
    QLineSeries* line = m_hoverChart == LossChart ? lossSeries(m_hoveredRank) : throughputSeries(m_hoveredRank);
    const RunMetrics::RankSeries* series = m_metrics->rank(m_hoveredRank);
    const QPointF* point =
        series ? nearestPoint(m_hoverChart == LossChart ? series->loss : series->imagesPerSec, step) : nullptr;
    if (point && line)
        showTipAt(view, line, *point, m_hoverText);
}

bool RunCharts::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::MouseMove) {
        QChartView* view = m_panels[size_t(m_hoverChart)].view;
        QLineSeries* line = m_hoverChart == LossChart ? lossSeries(m_hoveredRank) : throughputSeries(m_hoveredRank);
        if (watched == view->viewport() && line)
            showHoverText(valueAt(view, line, static_cast<QMouseEvent*>(event)->position().toPoint()));
    }
    return QWidget::eventFilter(watched, event);
}

QString RunCharts::pointText(Chart which, int rank, double step) const {
    if (which != LossChart && which != ThroughputChart)
        return {};
    const auto values = [which](const RunMetrics::RankSeries& series) -> const SeriesBuffer& {
        return which == LossChart ? series.loss : series.imagesPerSec;
    };
    const auto format = [which](double value) {
        return which == LossChart ? tr("loss %1").arg(value, 0, 'g', 4) : tr("%1 images/s").arg(value, 0, 'f', 0);
    };
    QString text = tr("rank %1").arg(rank);
    if (const RankState* state = m_metrics->summary().rank(rank); state && !state->host.isEmpty())
        text += tr(" on %1").arg(state->host);
    const RunMetrics::RankSeries* own = m_metrics->rank(rank);
    const QPointF* point = own ? nearestPoint(values(*own), step) : nullptr;
    if (!point)
        return text;
    text += tr(" · step %1 · %2").arg(std::llround(point->x())).arg(format(point->y()));
    QVector<const SeriesBuffer*> lines;
    for (const int other : m_metrics->ranks())
        lines.append(&values(*m_metrics->rank(other)));
    const QVector<double> atStep = valuesAt(lines, point->x());
    if (atStep.size() < 2)
        return text;
    const double middle = median(atStep);
    if (which == ThroughputChart && middle > 0.0)
        return text + tr(" · %1× the median of %2 ranks (%3)")
                          .arg(point->y() / middle, 0, 'f', 2)
                          .arg(atStep.size())
                          .arg(middle, 0, 'f', 0);
    return text + tr(" · median of %1 ranks %2").arg(atStep.size()).arg(middle, 0, 'g', 4);
}

void RunCharts::pointAtRank(int rank) {
    if (rank == m_hoveredRank)
        return;
    m_hoveredRank = rank;
    applyHighlight();
}

void RunCharts::focusRank(int rank) {
    if (rank == m_focusedRank)
        return;
    m_focusedRank = rank;
    applyHighlight();
    m_dirty |= 1u << OtherGroup; // the step-time breakdown follows the focus
}

void RunCharts::restyleRanks() {
    m_panels[LossChart].chart->legend()->setVisible(m_ranks.size() <= kLegendMaxRanks);
    applyHighlight();
}

// Colours depend on the rank count (the palette changes past 10), so every pen is set here.
void RunCharts::applyHighlight() {
    const int count = int(m_ranks.size());
    const int highlighted = highlightedRank();
    for (auto it = m_ranks.cbegin(); it != m_ranks.cend(); ++it) {
        const QPen pen = overlaidLinePen(rankColor(it.key(), count), normalWidth(count), 3.2, it.key() == highlighted,
                                         highlighted >= 0);
        it->loss.series->setPen(pen);
        it->throughput.series->setPen(pen);
    }
}

void RunCharts::addNewRanks() {
    bool added = false;
    for (int rank : m_metrics->ranks()) {
        const RunMetrics::RankSeries* series = m_metrics->rank(rank);
        if (!m_ranks.contains(rank) && series && !series->loss.isEmpty()) {
            addRank(rank);
            added = true;
        }
    }
    if (added)
        restyleRanks();
}

int RunCharts::drawnPoints() const {
    int points = 0;
    for (const RankLines& lines : m_ranks)
        points += int(lines.loss.series->count() + lines.throughput.series->count());
    for (const DrawnSeries& drawn : m_stepTime)
        points += int(drawn.series->count());
    return points;
}

void RunCharts::tick() {
    // A resize changes the buckets of every series: everything is drawn again at the new width.
    if (!m_ranks.isEmpty() && m_ranks.first().loss.width != bucketCount(m_panels[LossChart]))
        m_dirty = kAllGroups;
    if (!m_dirty) {
        m_nextGroup = m_nextGroup == LossGroup ? OtherGroup : LossGroup;
        return;
    }
    addNewRanks();
    m_split = drawnPoints() > m_pointBudget;
    if (!m_split) {
        refresh();
        return;
    }
    // Taking turns, strictly alternating so that a driver knows which tick draws the loss chart.
    const Group group = m_nextGroup;
    m_nextGroup = group == LossGroup ? OtherGroup : LossGroup;
    if (m_dirty & (1u << group))
        refreshGroup(group);
}

void RunCharts::refresh() {
    addNewRanks();
    refreshGroup(LossGroup);
    refreshGroup(OtherGroup);
}

void RunCharts::refreshGroup(Group group) {
    m_dirty &= quint8(~(1u << group));
    if (group == LossGroup) {
        refreshRankChart(LossChart);
        return;
    }
    refreshRankChart(ThroughputChart);
    refreshStepTime();
    refreshAccuracy();
    m_gpuPanel->refresh();
}

void RunCharts::clear() {
    m_gpuPanel->clear();
    for (const RankLines& lines : std::as_const(m_ranks)) {
        m_panels[LossChart].chart->removeSeries(lines.loss.series);
        m_panels[ThroughputChart].chart->removeSeries(lines.throughput.series);
        delete lines.loss.series;
        delete lines.throughput.series;
    }
    m_ranks.clear();
    for (DrawnSeries& drawn : m_stepTime) {
        drawn.series->clear();
        drawn.revision = ~quint64(0);
    }
    m_stepTimeSource = -2;
    m_accuracy->clear();
    m_accuracyDrawn = -1;
    m_hoveredRank = -1;
    if (!m_hoverText.isEmpty())
        QToolTip::hideText(); // its line is gone
    m_hoverText.clear();
    m_focusedRank = -1;
    m_dirty = kAllGroups;
    m_nextGroup = LossGroup;
    m_split = false;
}

void RunCharts::refreshRankChart(Chart which) {
    const bool loss = which == LossChart;
    Range range;
    for (auto it = m_ranks.cbegin(); it != m_ranks.cend(); ++it)
        if (const RunMetrics::RankSeries* series = m_metrics->rank(it.key()))
            range.add(loss ? series->loss : series->imagesPerSec);
    if (!range.valid())
        return;
    Panel& panel = m_panels[size_t(which)];
    fitAxes(panel.x, panel.y, range, which == ThroughputChart, m_metrics->totalSteps(), [this, loss] {
        for (RankLines& lines : m_ranks)
            forgetSeries(loss ? lines.loss : lines.throughput);
    });
    const int width = bucketCount(panel);
    for (auto it = m_ranks.begin(); it != m_ranks.end(); ++it) {
        const RunMetrics::RankSeries* series = m_metrics->rank(it.key());
        if (!series)
            continue;
        DrawnSeries& drawn = loss ? it->loss : it->throughput;
        if (syncSeries(drawn, loss ? series->loss : series->imagesPerSec, panel.x->min(), panel.x->max(), width))
            ++m_replaceCount;
    }
}

void RunCharts::refreshStepTime() {
    const RunMetrics::RankSeries* focused = m_focusedRank >= 0 ? m_metrics->rank(m_focusedRank) : nullptr;
    const int source = focused ? m_focusedRank : -1;
    Panel& panel = m_panels[StepTimeChart];
    if (source != m_stepTimeSource) {
        m_stepTimeSource = source;
        panel.chart->setTitle(source >= 0 ? tr("Step time · rank %1").arg(source) : tr("Step time · mean of ranks"));
        for (DrawnSeries& drawn : m_stepTime)
            drawn.revision = ~quint64(0);
    }
    Range range;
    for (int i = 0; i < kStepPartCount; ++i)
        range.add(focused ? focused->partsMs[size_t(i)] : m_metrics->meanPartMs(StepPart(i)));
    if (!range.valid()) {
        for (DrawnSeries& drawn : m_stepTime)
            drawn.series->clear();
        return;
    }
    fitAxes(panel.x, panel.y, range, true, m_metrics->totalSteps(), [this] {
        for (DrawnSeries& part : m_stepTime)
            forgetSeries(part);
    });
    const int width = bucketCount(panel);
    for (int i = 0; i < kStepPartCount; ++i) {
        const SeriesBuffer& buffer = focused ? focused->partsMs[size_t(i)] : m_metrics->meanPartMs(StepPart(i));
        if (syncSeries(m_stepTime[size_t(i)], buffer, panel.x->min(), panel.x->max(), width))
            ++m_replaceCount;
    }
}

void RunCharts::refreshAccuracy() {
    const QVector<QPointF>& points = m_metrics->validationAccuracy();
    const RunProgress progress = m_metrics->progress();
    // Points, epochs or the run's end changed.
    const int drawn = (int(points.size()) * 1000 + int(progress.epochs)) * 2 + (progress.done ? 1 : 0);
    if (drawn == m_accuracyDrawn)
        return;
    m_accuracyDrawn = drawn;
    m_accuracy->replace(points);
    ++m_replaceCount;
    Panel& panel = m_panels[AccuracyChart];
    // An empty chart says why: the trainer validates after each full epoch only (not after a --max-steps cut, not
    // with --no-eval).
    if (!points.isEmpty())
        panel.chart->setTitle(tr("Validation accuracy"));
    else if (progress.done)
        panel.chart->setTitle(tr("Validation accuracy · no full epoch was validated"));
    else
        panel.chart->setTitle(tr("Validation accuracy · after each full epoch"));
    double xHi = 1.0;
    double yLo = kInf;
    double yHi = -kInf;
    for (const QPointF& p : points) {
        xHi = std::max(xHi, p.x());
        yLo = std::min(yLo, p.y());
        yHi = std::max(yHi, p.y());
    }
    // Whole epochs on the axis: 0..epochs with a tick per epoch (nice numbers past 10).
    xHi = std::max(xHi, double(m_metrics->progress().epochs));
    panel.x->setRange(0.0, std::ceil(xHi));
    if (xHi <= 10.0)
        panel.x->setTickCount(int(std::ceil(xHi)) + 1);
    else
        panel.x->applyNiceNumbers();
    if (points.isEmpty())
        panel.y->setRange(0.0, 1.0);
    else
        setPaddedRange(panel.y, yLo, yHi);
}

bool RunCharts::saveChartPng(int which, const QString& path, QString* error) {
    if (which < 0 || which >= ChartCount) {
        if (error)
            *error = tr("no chart %1").arg(which);
        return false;
    }
    refresh();
    QWidget* widget = which == GpuChart ? static_cast<QWidget*>(m_gpuPanel) : m_panels[size_t(which)].view;
    if (!widget->grab().save(path, "PNG")) {
        if (error)
            *error = tr("cannot write %1").arg(path);
        return false;
    }
    return true;
}

} // namespace rankscope::gui
