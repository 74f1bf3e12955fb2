// SPDX-License-Identifier: MIT
#include "chartsupport.h"

#include "seriesbuffer.h"

#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace rankscope::gui {

bool syncSeries(DrawnSeries& drawn, const SeriesBuffer& buffer, double xMin, double xMax, int pixelColumns) {
    const bool dataChanged = drawn.revision != buffer.revision();
    const bool reduced = buffer.size() > 2 * pixelColumns + 2;
    const bool viewChanged = drawn.width != pixelColumns || drawn.xMin != xMin || drawn.xMax != xMax;
    if (!dataChanged && !(reduced && viewChanged))
        return false;
    drawn.series->replace(buffer.forDisplay(xMin, xMax, pixelColumns));
    drawn.revision = buffer.revision();
    drawn.width = pixelColumns;
    drawn.xMin = xMin;
    drawn.xMax = xMax;
    return true;
}

void forgetSeries(DrawnSeries& drawn) {
    drawn.series->clear();
    drawn.revision = ~quint64(0);
}

void styleChart(QChart* chart, const QString& title) {
    chart->setAnimationOptions(QChart::NoAnimation);
    chart->setBackgroundRoundness(0);
    chart->setMargins(QMargins(4, 4, 4, 4));
    QFont titleFont = QApplication::font();
    titleFont.setBold(true);
    chart->setTitleFont(titleFont);
    chart->setTitle(title);
    chart->legend()->setFont(QApplication::font());
}

QValueAxis* addAxis(QChart* chart, Qt::Alignment alignment, const QString& title, const QString& labelFormat) {
    auto* axis = new QValueAxis(chart);
    QFont font = QApplication::font();
    axis->setLabelsFont(font);
    font.setPointSizeF(font.pointSizeF() * 0.95);
    axis->setTitleFont(font);
    axis->setTitleText(title);
    axis->setLabelFormat(labelFormat);
    axis->setGridLineColor(QColor(0xe4, 0xe4, 0xe4));
    axis->setMinorTickCount(0);
    axis->setTickCount(5);
    chart->addAxis(axis, alignment);
    return axis;
}

bool axisHolds(const QValueAxis* axis, double lo, double hi) {
    // Keep the axis while the data fits in it and fills a fair part of it: a range change makes Qt Charts
    // rebuild the geometry of every series on the chart, so it must not happen on every tick.
    const double span = axis->max() - axis->min();
    return lo >= axis->min() && hi <= axis->max() && hi - lo >= 0.4 * span;
}

void fitAxis(QValueAxis* axis, double lo, double hi) {
    if (axisHolds(axis, lo, hi))
        return;
    axis->setRange(lo, hi);
    axis->applyNiceNumbers();
}

void endStepAxisAt(QValueAxis* axis, double end) {
    if (end <= 0.0 || axis->max() <= end) {
        axis->setTickType(QValueAxis::TicksFixed);
        return;
    }
    const double span = end - axis->min();
    // The nice step nearest a quarter of the span: 1, 2 or 5 times a power of ten, and a whole step.
    const double raw = span / 4.0;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double fraction = raw / magnitude;
    const double nice = fraction < 1.5 ? 1.0 : fraction < 3.0 ? 2.0 : fraction < 7.0 ? 5.0 : 10.0;
    axis->setRange(axis->min(), end);
    axis->setTickType(QValueAxis::TicksDynamic);
    axis->setTickAnchor(0.0);
    axis->setTickInterval(std::max(1.0, std::round(nice * magnitude)));
}

void setPaddedRange(QValueAxis* axis, double lo, double hi, bool fromZero) {
    const auto [low, high] = paddedRange(lo, hi, fromZero);
    fitAxis(axis, low, high);
}

std::pair<double, double> paddedRange(double lo, double hi, bool fromZero) {
    if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) {
        lo = 0.0;
        hi = 1.0;
    }
    if (fromZero)
        lo = std::min(lo, 0.0);
    const double span = std::max(hi - lo, std::max(std::abs(hi) * 0.05, 1e-6));
    const double pad = span * 0.05;
    // Data that never goes below zero (loss, images/s, milliseconds) keeps its axis at or above zero: a
    // padding below zero would make applyNiceNumbers() round the axis down to a whole negative tick.
    double low = lo - pad;
    if (lo >= 0.0 && low < 0.0)
        low = 0.0;
    return {low, hi + pad};
}

const QPointF* nearestPoint(const SeriesBuffer& buffer, double x) {
    const QVector<QPointF>& points = buffer.points();
    if (points.isEmpty())
        return nullptr;
    const auto after = std::lower_bound(points.cbegin(), points.cend(), x,
                                        [](const QPointF& point, double value) { return point.x() < value; });
    if (after == points.cbegin())
        return &*after;
    if (after == points.cend())
        return &points.constLast();
    const auto before = std::prev(after);
    return x - before->x() <= after->x() - x ? &*before : &*after;
}

QVector<double> valuesAt(const QVector<const SeriesBuffer*>& buffers, double x) {
    QVector<double> values;
    for (const SeriesBuffer* buffer : buffers) {
        if (buffer->isEmpty() || x < buffer->points().constFirst().x() || x > buffer->points().constLast().x())
            continue;
        values.append(nearestPoint(*buffer, x)->y());
    }
    return values;
}

double median(QVector<double> values) {
    std::sort(values.begin(), values.end());
    const qsizetype middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

double valueAt(const QChartView* view, const QLineSeries* series, QPoint position) {
    QChart* chart = view->chart();
    return chart->mapToValue(chart->mapFromScene(view->mapToScene(position)), const_cast<QLineSeries*>(series)).x();
}

void showTipAt(QChartView* view, const QLineSeries* series, QPointF point, const QString& text) {
    QChart* chart = view->chart();
    const QPointF scene = chart->mapToScene(chart->mapToPosition(point, const_cast<QLineSeries*>(series)));
    QToolTip::showText(view->viewport()->mapToGlobal(view->mapFromScene(scene)), text, view);
}

QPen overlaidLinePen(QColor color, double width, double highlightedWidth, bool highlighted, bool anyHighlighted) {
    if (highlighted)
        return QPen(color, highlightedWidth);
    if (!anyHighlighted)
        return QPen(color, width);
    color.setAlpha(50);
    return QPen(color, 1.0);
}

} // namespace rankscope::gui
