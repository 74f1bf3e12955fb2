// SPDX-License-Identifier: MIT
#pragma once

#include <QPointF>
#include <QVector>

namespace rankscope::gui {

// Reduces points (sorted by x) to what `pixelColumns` columns can show between xMin and xMax: per column the
// lowest and the highest point, in x order, so spikes survive; plus the first and last point in the range (where
// the line starts and ends) and the nearest point outside each end, so a line still reaches the edges.
// Output: at most 2 * pixelColumns + 4 points, every one an input point, x order kept. Input that already fits
// is returned unchanged (within the range).
[[nodiscard]] QVector<QPointF> downsample(const QVector<QPointF>& points, double xMin, double xMax, int pixelColumns);

// One series, bounded: the newest points at full resolution up to `capacity`; beyond that the older half is
// merged in groups of four into (min, max) pairs (the very first point kept), so the whole history stays visible at a
// coarser resolution and a spike is never merged away. Memory is O(capacity) however long the run. Points are expected
// in x order (steps); a point with a smaller x than the last one is still stored.
class SeriesBuffer final {
public:
    SeriesBuffer() : SeriesBuffer(5000) {}
    explicit SeriesBuffer(int capacity);

    void append(QPointF point);
    void append(const QVector<QPointF>& points);
    void clear();
    void setCapacity(int capacity); // at least 16

    [[nodiscard]] const QVector<QPointF>& points() const { return m_points; }
    [[nodiscard]] int size() const { return int(m_points.size()); }
    [[nodiscard]] bool isEmpty() const { return m_points.isEmpty(); }
    [[nodiscard]] int capacity() const { return m_capacity; }
    [[nodiscard]] qint64 appendedCount() const { return m_appended; } // points ever appended
    // Grows with every change: a view redraws a series when the revision differs from the one it drew.
    [[nodiscard]] quint64 revision() const { return m_revision; }
    [[nodiscard]] double minY() const { return m_minY; }
    [[nodiscard]] double maxY() const { return m_maxY; }

    // The points between xMin and xMax reduced for pixelColumns columns (see downsample()).
    [[nodiscard]] QVector<QPointF> forDisplay(double xMin, double xMax, int pixelColumns) const {
        return downsample(m_points, xMin, xMax, pixelColumns);
    }

private:
    void compact();

    QVector<QPointF> m_points;
    int m_capacity;
    qint64 m_appended = 0;
    quint64 m_revision = 0;
    double m_minY;
    double m_maxY;
};

} // namespace rankscope::gui
