// SPDX-License-Identifier: MIT
#pragma once

#include <QPen>
#include <QPointF>
#include <QString>
#include <QVector>
#include <QtGlobal>

#include <utility>

class QChart;
class QChartView;
class QLineSeries;
class QValueAxis;

namespace rankscope::gui {

class SeriesBuffer;

// What a QLineSeries was last given, so that a tick only replaces series whose data or view changed.
struct DrawnSeries {
    QLineSeries* series = nullptr;
    quint64 revision = ~quint64(0);
    int width = 0;
    double xMin = 0.0;
    double xMax = 0.0;
};

// Replaces the series' points with the buffer's, downsampled to `pixelColumns` between xMin and xMax, when
// the buffer changed since the last call or, for a downsampled series, the view did. One replace(), never
// per-point appends. Returns whether it replaced.
bool syncSeries(DrawnSeries& drawn, const SeriesBuffer& buffer, double xMin, double xMax, int pixelColumns);

// The look every run view chart shares: no animation, tight margins, a title in the widget's font.
void styleChart(QChart* chart, const QString& title);
[[nodiscard]] QValueAxis* addAxis(QChart* chart, Qt::Alignment alignment, const QString& title,
                                  const QString& labelFormat);
// Empties a drawn series and forgets what it was given: the next syncSeries() draws it whole.
void forgetSeries(DrawnSeries& drawn);

// Sets [lo, hi] padded by 5% (at least a small span), with round tick values.
void setPaddedRange(QValueAxis* axis, double lo, double hi, bool fromZero = false);
// The range setPaddedRange() fits the axis to.
[[nodiscard]] std::pair<double, double> paddedRange(double lo, double hi, bool fromZero);
// Sets [lo, hi] rounded to nice numbers, unless the current range already holds it and is not more than
// about twice as wide: axes change rarely, not on every tick.
void fitAxis(QValueAxis* axis, double lo, double hi);
// Whether fitAxis(axis, lo, hi) leaves the axis as it is.
[[nodiscard]] bool axisHolds(const QValueAxis* axis, double lo, double hi);
// A step axis that fitAxis() rounded up past the run's last step (`end`, > 0) ends there instead, ticked in whole
// steps from 0 (0, 50, … for an end of 220); under `end` its ticks are fixed again (fitAxis's nice numbers).
void endStepAxisAt(QValueAxis* axis, double end);

// Hovering a line: the point of a buffer nearest to x (points in x order); nullptr for an empty buffer.
[[nodiscard]] const QPointF* nearestPoint(const SeriesBuffer& buffer, double x);
// The lines that pass x (from their first point to their last), each at its point nearest to x: what a hovered
// point is told against.
[[nodiscard]] QVector<double> valuesAt(const QVector<const SeriesBuffer*>& buffers, double x);
// The median of some values (at least one).
[[nodiscard]] double median(QVector<double> values);
// The x, in a series' values, under a position of a chart view's viewport.
[[nodiscard]] double valueAt(const QChartView* view, const QLineSeries* series, QPoint position);
// Shows a tooltip standing at a point (in a series' values) on the series' line.
void showTipAt(QChartView* view, const QLineSeries* series, QPointF point, const QString& text);
// The pen of one of several overlaid lines (a rank's, a GPU's) while one of them may be highlighted: that one
// `highlightedWidth` wide in its colour, the others faded (alpha 50, 1 px); each `width` wide in its colour while
// none is.
[[nodiscard]] QPen overlaidLinePen(QColor color, double width, double highlightedWidth, bool highlighted,
                                   bool anyHighlighted);

} // namespace rankscope::gui
