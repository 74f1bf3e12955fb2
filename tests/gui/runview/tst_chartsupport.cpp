// SPDX-License-Identifier: MIT
// The chart helpers every run view chart shares: the padded and nice axis ranges and when an axis is kept, a step
// axis ended at the run's last step, when a series is drawn again, the point under the pointer and the median it
// is told against, and the tooltip put on a line.
#include "chartsupport.h"
#include "seriesbuffer.h"

#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QToolTip>
#include <QValueAxis>
#include <QtTest>

#include <cmath>
#include <limits>

using namespace rankscope::gui;

namespace {

SeriesBuffer bufferOf(const QVector<QPointF>& points) {
    SeriesBuffer buffer(100000);
    buffer.append(points);
    return buffer;
}

} // namespace

class TestChartSupport final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void paddedRangeOfData_data() {
        QTest::addColumn<double>("lo");
        QTest::addColumn<double>("hi");
        QTest::addColumn<bool>("fromZero");
        QTest::addColumn<double>("low");
        QTest::addColumn<double>("high");
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        // 5% of the span on each side.
        QTest::newRow("padded") << 1.0 << 3.0 << false << 0.9 << 3.1;
        QTest::newRow("negative") << -2.0 << -1.0 << false << -2.05 << -0.95;
        // From zero: the axis starts at 0, its span from there.
        QTest::newRow("from zero") << 1.0 << 3.0 << true << 0.0 << 3.15;
        QTest::newRow("from zero, below it") << -1.0 << 3.0 << true << -1.2 << 3.2;
        // Data at or above zero never gets an axis below it.
        QTest::newRow("near zero") << 0.01 << 0.5 << false << 0.0 << 0.5245;
        QTest::newRow("at zero") << 0.0 << 2.0 << false << 0.0 << 2.1;
        // One value: 5% of itself for a span.
        QTest::newRow("flat") << 5.0 << 5.0 << false << 4.9875 << 5.0125;
        QTest::newRow("flat at zero") << 0.0 << 0.0 << false << 0.0 << 5e-8; // a span of 1e-6 at least
        // No data (an empty range, or not numbers): 0 to 1.
        QTest::newRow("NaN") << nan << 3.0 << false << 0.0 << 1.05;
        QTest::newRow("empty") << inf << -inf << false << 0.0 << 1.05;
        QTest::newRow("reversed") << 2.0 << 1.0 << false << 0.0 << 1.05;
    }
    void paddedRangeOfData() {
        QFETCH(double, lo);
        QFETCH(double, hi);
        QFETCH(bool, fromZero);
        QFETCH(double, low);
        QFETCH(double, high);
        const auto [actualLow, actualHigh] = paddedRange(lo, hi, fromZero);
        QVERIFY2(std::abs(actualLow - low) < 1e-12 && std::abs(actualHigh - high) < 1e-12,
                 qPrintable(QStringLiteral("%1 to %2").arg(actualLow, 0, 'g', 17).arg(actualHigh, 0, 'g', 17)));
    }

    // An axis is kept while the data fits and fills at least 40% of it; otherwise it is fitted to nice numbers.
    void axisHoldsAndFits_data() {
        QTest::addColumn<double>("lo");
        QTest::addColumn<double>("hi");
        QTest::addColumn<bool>("holds");
        QTest::newRow("inside") << 2.0 << 8.0 << true;
        QTest::newRow("fills 40%") << 4.0 << 8.0 << true;
        QTest::newRow("fills less") << 2.0 << 5.0 << false;
        QTest::newRow("below") << -1.0 << 8.0 << false;
        QTest::newRow("above") << 2.0 << 11.0 << false;
        QTest::newRow("the whole axis") << 0.0 << 10.0 << true;
    }
    void axisHoldsAndFits() {
        QFETCH(double, lo);
        QFETCH(double, hi);
        QFETCH(bool, holds);
        QValueAxis axis;
        axis.setTickCount(5);
        axis.setRange(0.0, 10.0);
        QCOMPARE(axisHolds(&axis, lo, hi), holds);
        fitAxis(&axis, lo, hi);
        if (holds) {
            QCOMPARE(axis.min(), 0.0);
            QCOMPARE(axis.max(), 10.0);
        } else {
            QVERIFY(axis.min() <= lo && axis.max() >= hi);
            QVERIFY(axisHolds(&axis, lo, hi)); // fitted: the next tick keeps it
        }
    }

    // Fitted ranges end on round numbers, not on the data's own.
    void fittedAxesEndOnNiceNumbers() {
        QValueAxis axis;
        axis.setTickCount(5);
        axis.setRange(0.0, 1.0);
        fitAxis(&axis, 0.3, 9.7);
        QCOMPARE(axis.min(), 0.0);
        QCOMPARE(axis.max(), 10.0);
        QValueAxis padded;
        padded.setTickCount(5);
        setPaddedRange(&padded, 1.0, 3.0, true); // 0 to 3.15, rounded
        QCOMPARE(padded.min(), 0.0);
        QVERIFY2(padded.max() >= 3.15 && padded.max() <= 4.0, qPrintable(QString::number(padded.max())));
    }

    // A step axis past the run's last step ends there, ticked from 0 every 1, 2 or 5 times a power of ten (about a
    // quarter of the axis), at least every step.
    void stepAxisEndsAtTheLastStep_data() {
        QTest::addColumn<double>("min");
        QTest::addColumn<double>("max");
        QTest::addColumn<double>("end");
        QTest::addColumn<double>("interval");
        QTest::newRow("220 steps") << 0.0 << 400.0 << 220.0 << 50.0;
        QTest::newRow("100 steps") << 0.0 << 200.0 << 100.0 << 20.0;
        QTest::newRow("40 steps") << 0.0 << 50.0 << 40.0 << 10.0;
        QTest::newRow("300 steps") << 0.0 << 400.0 << 300.0 << 100.0;
        QTest::newRow("3 steps") << 0.0 << 5.0 << 3.0 << 1.0;
        QTest::newRow("2 steps") << 0.0 << 5.0 << 2.0 << 1.0;
        QTest::newRow("1 step") << 0.0 << 5.0 << 1.0 << 1.0;
        QTest::newRow("from step 10") << 10.0 << 400.0 << 220.0 << 50.0;
    }
    void stepAxisEndsAtTheLastStep() {
        QFETCH(double, min);
        QFETCH(double, max);
        QFETCH(double, end);
        QFETCH(double, interval);
        QValueAxis axis;
        axis.setRange(min, max);
        endStepAxisAt(&axis, end);
        QCOMPARE(axis.min(), min);
        QCOMPARE(axis.max(), end);
        QCOMPARE(axis.tickType(), QValueAxis::TicksDynamic);
        QCOMPARE(axis.tickAnchor(), 0.0);
        QCOMPARE(axis.tickInterval(), interval);
    }

    // An axis within the run's steps, or a run that did not say its length, keeps fixed ticks.
    void stepAxisWithinTheRunKeepsFixedTicks() {
        for (const double end : {0.0, 100.0, 150.0}) {
            QValueAxis axis;
            axis.setRange(0.0, 100.0);
            axis.setTickType(QValueAxis::TicksDynamic);
            endStepAxisAt(&axis, end);
            QCOMPARE(axis.max(), 100.0);
            QCOMPARE(axis.tickType(), QValueAxis::TicksFixed);
        }
    }

    // A series is given its buffer again when the buffer changed, or, for a buffer downsampled to the view, when
    // the view did (width or range); otherwise not.
    void seriesAreReplacedOnlyWhenSomethingChanged() {
        QLineSeries series;
        DrawnSeries drawn{&series};
        QVector<QPointF> few;
        for (int i = 1; i <= 100; ++i)
            few.append(QPointF(i, i % 7));
        SeriesBuffer small = bufferOf(few);
        QVERIFY(syncSeries(drawn, small, 0.0, 100.0, 100));
        QCOMPARE(series.count(), 100);
        QVERIFY(!syncSeries(drawn, small, 0.0, 100.0, 100));
        // Drawn whole: another view shows the same points.
        QVERIFY(!syncSeries(drawn, small, 0.0, 120.0, 80));
        small.append(QPointF(101, 3));
        QVERIFY(syncSeries(drawn, small, 0.0, 120.0, 80));
        QCOMPARE(series.count(), 101);

        QLineSeries longSeries;
        DrawnSeries reduced{&longSeries};
        QVector<QPointF> many;
        for (int i = 1; i <= 5000; ++i)
            many.append(QPointF(i, std::sin(i * 0.01)));
        const SeriesBuffer large = bufferOf(many);
        QVERIFY(syncSeries(reduced, large, 0.0, 5000.0, 100));
        QVERIFY(longSeries.count() <= 2 * 100 + 4);
        QVERIFY(!syncSeries(reduced, large, 0.0, 5000.0, 100));
        QVERIFY(syncSeries(reduced, large, 0.0, 6000.0, 100)); // the axis grew
        QVERIFY(syncSeries(reduced, large, 1000.0, 6000.0, 100));
        QVERIFY(syncSeries(reduced, large, 1000.0, 6000.0, 50)); // the plot narrowed
        QVERIFY(longSeries.count() <= 2 * 50 + 4);
        QVERIFY(!syncSeries(reduced, large, 1000.0, 6000.0, 50));

        // Forgotten: emptied, and drawn whole at the next sync though nothing changed.
        forgetSeries(drawn);
        QCOMPARE(series.count(), 0);
        QVERIFY(syncSeries(drawn, small, 0.0, 120.0, 80));
        QCOMPARE(series.count(), 101);
    }

    void chartsAreStyledAlike() {
        QChart chart;
        styleChart(&chart, QStringLiteral("Loss per rank"));
        QCOMPARE(chart.title(), QStringLiteral("Loss per rank"));
        QCOMPARE(chart.animationOptions(), QChart::NoAnimation);
        QVERIFY(chart.titleFont().bold());
        QValueAxis* axis = addAxis(&chart, Qt::AlignLeft, QStringLiteral("loss"), QStringLiteral("%.3g"));
        QCOMPARE(axis->titleText(), QStringLiteral("loss"));
        QCOMPARE(axis->labelFormat(), QStringLiteral("%.3g"));
        QCOMPARE(axis->tickCount(), 5);
        QCOMPARE(chart.axes(Qt::Vertical).size(), 1);
    }

    // The point a pointer at x is on: the nearest (the earlier of two as near), the first or last past the ends.
    void nearestPointToThePointer_data() {
        QTest::addColumn<double>("x");
        QTest::addColumn<double>("nearest");
        QTest::newRow("before the first") << 0.0 << 1.0;
        QTest::newRow("on a point") << 4.0 << 4.0;
        QTest::newRow("nearer the earlier") << 2.9 << 2.0;
        QTest::newRow("as near: the earlier") << 3.0 << 2.0;
        QTest::newRow("nearer the later") << 3.5 << 4.0;
        QTest::newRow("as near, wide apart") << 6.0 << 4.0;
        QTest::newRow("nearer the last") << 7.0 << 8.0;
        QTest::newRow("past the last") << 9.0 << 8.0;
    }
    void nearestPointToThePointer() {
        QFETCH(double, x);
        QFETCH(double, nearest);
        const SeriesBuffer buffer = bufferOf({{1, 10}, {2, 20}, {4, 40}, {8, 80}});
        const QPointF* point = nearestPoint(buffer, x);
        QVERIFY(point);
        QCOMPARE(point->x(), nearest);
        QCOMPARE(point->y(), nearest * 10);
        QCOMPARE(nearestPoint(SeriesBuffer(), x), nullptr);
    }

    // What a hovered point stands against: the lines that pass its x, each at its point nearest to it.
    void valuesOfTheLinesAtX() {
        const SeriesBuffer whole = bufferOf({{1, 10}, {2, 20}, {6, 60}, {10, 100}});
        const SeriesBuffer late = bufferOf({{5, 5}, {7, 7}, {10, 10}});
        const SeriesBuffer early = bufferOf({{1, 1}, {3, 3}});
        const QVector<const SeriesBuffer*> lines = {&whole, &late, &early};
        QCOMPARE(valuesAt(lines, 2.0), (QVector<double>{20, 1})); // late has not begun; early's nearer point first
        QCOMPARE(valuesAt(lines, 3.0), (QVector<double>{20, 3}));
        QCOMPARE(valuesAt(lines, 6.0), (QVector<double>{60, 5})); // early has ended
        QCOMPARE(valuesAt(lines, 10.0), (QVector<double>{100, 10}));
        QCOMPARE(valuesAt(lines, 0.5), QVector<double>());
        QCOMPARE(valuesAt(lines, 11.0), QVector<double>());
        QCOMPARE(valuesAt({}, 3.0), QVector<double>());
    }

    void medianOfValues_data() {
        QTest::addColumn<QVector<double>>("values");
        QTest::addColumn<double>("median");
        QTest::newRow("one") << QVector<double>{3.0} << 3.0;
        QTest::newRow("two") << QVector<double>{4.0, 1.0} << 2.5;
        QTest::newRow("three, unsorted") << QVector<double>{5.0, 1.0, 3.0} << 3.0;
        QTest::newRow("four, unsorted") << QVector<double>{2.0, 9.0, 4.0, 1.0} << 3.0;
        QTest::newRow("five, descending") << QVector<double>{9.0, 7.0, 5.0, 2.0, 1.0} << 5.0;
    }
    void medianOfValues() {
        QFETCH(QVector<double>, values);
        QFETCH(double, median);
        QCOMPARE(rankscope::gui::median(values), median);
    }

    // The value under the pointer and the tooltip at a point, through a real chart view.
    // One of several overlaid lines highlighted: it wider in its colour, the others faded and thin; with none
    // highlighted, each its own width and colour.
    void overlaidLinePens() {
        const QColor blue(0x4e79a7);
        const QPen alone = overlaidLinePen(blue, 1.6, 3.2, false, false);
        QCOMPARE(alone.color(), blue);
        QCOMPARE(alone.widthF(), 1.6);
        const QPen highlighted = overlaidLinePen(blue, 1.6, 3.2, true, true);
        QCOMPARE(highlighted.color(), blue);
        QCOMPARE(highlighted.widthF(), 3.2);
        const QPen faded = overlaidLinePen(blue, 1.6, 3.2, false, true);
        QCOMPARE(faded.color().rgb(), blue.rgb());
        QCOMPARE(faded.color().alpha(), 50);
        QCOMPARE(faded.widthF(), 1.0);
    }

    void pointerAndTooltipOnALine() {
        auto* chart = new QChart;
        auto* series = new QLineSeries;
        series->append({{0, 0}, {100, 50}});
        chart->addSeries(series);
        chart->createDefaultAxes();
        QChartView view(chart);
        view.resize(600, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const auto at = [&](QPointF value) {
            return view.mapFromScene(chart->mapToScene(chart->mapToPosition(value, series)));
        };
        for (const double x : {10.0, 50.0, 90.0})
            QVERIFY2(std::abs(valueAt(&view, series, at(QPointF(x, x / 2))) - x) < 1.0, qPrintable(QString::number(x)));
        showTipAt(&view, series, QPointF(80, 40), QStringLiteral("rank 1 · step 80"));
        QTRY_COMPARE(QToolTip::text(), QStringLiteral("rank 1 · step 80"));
        const QWidget* tip = nullptr;
        for (QWidget* widget : QApplication::topLevelWidgets())
            if (widget->objectName() == QLatin1String("qtooltip_label") && widget->isVisible())
                tip = widget;
        QVERIFY(tip);
        const QPoint point = view.viewport()->mapToGlobal(at(QPointF(80, 40)));
        // Just below the point (Qt's offset), as far right as the screen lets it.
        QVERIFY2(
            std::abs(tip->y() - point.y()) <= 24 && tip->x() <= point.x() + 4,
            qPrintable(QStringLiteral("%1,%2 for %3,%4").arg(tip->x()).arg(tip->y()).arg(point.x()).arg(point.y())));
        const QPoint low = view.viewport()->mapToGlobal(at(QPointF(10, 5)));
        QVERIFY(std::abs(tip->y() - low.y()) > 24); // not at any point of the line
    }
};

QTEST_MAIN(TestChartSupport)
#include "tst_chartsupport.moc"
