// SPDX-License-Identifier: MIT
#include "seriesbuffer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace rankscope::gui {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Appends the lowest and the highest of [begin, end) in x order, and the bucket's first and/or last point
// when asked (the ends of a line), each point once.
void appendBucket(QVector<QPointF>& out, const QPointF* begin, const QPointF* end, bool withFirst = false,
                  bool withLast = false) {
    if (begin == end)
        return;
    const auto [lo, hi] =
        std::minmax_element(begin, end, [](const QPointF& a, const QPointF& b) { return a.y() < b.y(); });
    std::array<const QPointF*, 4> picked = {lo, hi, withFirst ? begin : lo, withLast ? end - 1 : hi};
    std::sort(picked.begin(), picked.end());
    const auto last = std::unique(picked.begin(), picked.end());
    for (auto it = picked.begin(); it != last; ++it)
        out.append(**it);
}

} // namespace

QVector<QPointF> downsample(const QVector<QPointF>& points, double xMin, double xMax, int pixelColumns) {
    const auto byX = [](const QPointF& p, double x) { return p.x() < x; };
    const auto xBefore = [](double x, const QPointF& p) { return x < p.x(); };
    const QPointF* const all = points.constData();
    const QPointF* first = std::lower_bound(all, all + points.size(), xMin, byX);
    const QPointF* last = std::upper_bound(first, all + points.size(), xMax, xBefore);
    // One neighbour outside on each side, so lines reach the plot's edges.
    if (first != all)
        --first;
    if (last != all + points.size())
        ++last;
    const qsizetype count = last - first;
    pixelColumns = std::max(pixelColumns, 1);
    if (count <= 2 * qsizetype(pixelColumns) + 2 || !(xMax > xMin))
        return QVector<QPointF>(first, last);

    QVector<QPointF> out;
    out.reserve(2 * pixelColumns + 4);
    const QPointF* it = first;
    if (it->x() < xMin)
        out.append(*it++);
    const QPointF* end = last;
    const bool tail = (end - 1)->x() > xMax;
    if (tail)
        --end;
    const double columnWidth = (xMax - xMin) / pixelColumns;
    const QPointF* const rangeBegin = it;
    while (it != end) {
        int column = std::min(int((it->x() - xMin) / columnWidth), pixelColumns - 1);
        const auto endOf = [&](int c) { return c == pixelColumns - 1 ? kInf : xMin + (c + 1) * columnWidth; };
        // Rounding can put a point on the end of the column its division names (550 / (600 / 132) is
        // 120.99999999999999, and column 120 ends at 550.0): it starts the next one.
        while (endOf(column) <= it->x())
            ++column;
        // From the point after `it`, which is in this column: the search moves on whatever the input.
        const QPointF* next = std::lower_bound(it + 1, end, endOf(column), byX);
        appendBucket(out, it, next, it == rangeBegin, next == end);
        it = next;
    }
    if (tail)
        out.append(*end);
    return out;
}

SeriesBuffer::SeriesBuffer(int capacity) : m_capacity(std::max(capacity, 16)), m_minY(kInf), m_maxY(-kInf) {}

void SeriesBuffer::append(QPointF point) {
    if (!std::isfinite(point.x()) || !std::isfinite(point.y()))
        return; // a NaN loss is a fact for the grid and the CSV, but a chart line cannot carry it
    m_points.append(point);
    m_minY = std::min(m_minY, point.y());
    m_maxY = std::max(m_maxY, point.y());
    ++m_appended;
    ++m_revision;
    if (m_points.size() > m_capacity)
        compact();
}

void SeriesBuffer::append(const QVector<QPointF>& points) {
    for (const QPointF& p : points)
        append(p);
}

void SeriesBuffer::clear() {
    m_points.clear();
    m_minY = kInf;
    m_maxY = -kInf;
    m_appended = 0;
    ++m_revision;
}

void SeriesBuffer::setCapacity(int capacity) {
    m_capacity = std::max(capacity, 16);
    while (m_points.size() > m_capacity)
        compact();
    ++m_revision;
}

// The older half, in groups of four, becomes each group's min and max: half the points, every extreme kept.
void SeriesBuffer::compact() {
    const qsizetype older = (m_points.size() / 2) & ~qsizetype(3);
    QVector<QPointF> merged;
    merged.reserve(older / 2 + (m_points.size() - older));
    for (qsizetype i = 0; i < older; i += 4)
        appendBucket(merged, m_points.constData() + i, m_points.constData() + i + 4, i == 0); // the line's start stays
    merged.append(m_points.mid(older));
    m_points = std::move(merged);
}

} // namespace rankscope::gui
