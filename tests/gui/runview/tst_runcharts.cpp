// SPDX-License-Identifier: MIT
// RunCharts: one series per rank with the recorded points after a tick, bounded point counts for long series,
// highlight on hover and focus, the GPU panel's sentence, PNG export.
#include "gpupanel.h"
#include "rankpalette.h"
#include "recording.h"
#include "runcharts.h"

#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QImage>
#include <QLabel>
#include <QLineSeries>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QValueAxis>
#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace rankscope;
using namespace rankscope::gui;
using rankscope::test::recordedEvents;

namespace {

// Charts on the screen at a window's size, ticked by the test itself (their own timer stopped).
bool showTickDriven(RunCharts& charts) {
    charts.setTickDriven(true);
    charts.resize(1200, 700);
    charts.show();
    return QTest::qWaitForWindowExposed(&charts);
}

// The tooltip on the screen, if one is shown.
const QLabel* shownTooltip() {
    for (QWidget* widget : QApplication::topLevelWidgets())
        if (widget->objectName() == QLatin1String("qtooltip_label") && widget->isVisible())
            return qobject_cast<QLabel*>(widget);
    return nullptr;
}

// Whether the tooltip says `text` and stands at `point` (of the view's viewport): Qt puts it just below and right of
// the point, moved left as far as the screen needs (offscreen, the screen is 800 px wide: the charts go past it).
bool tooltipAt(const QChartView* view, QPoint point, const QString& text, QString* what) {
    const QLabel* tip = shownTooltip();
    const QPoint global = view->viewport()->mapToGlobal(point);
    if (!tip) {
        *what = QStringLiteral("no tooltip shown");
        return false;
    }
    *what = QStringLiteral("\"%1\" at %2,%3 for the point %4,%5")
                .arg(tip->text())
                .arg(tip->x())
                .arg(tip->y())
                .arg(global.x())
                .arg(global.y());
    return tip->text() == text && std::abs(tip->y() - global.y()) <= 24 && tip->x() <= global.x() + 4;
}

} // namespace

class TestRunCharts final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void tickDrawsOneSeriesPerRank() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        charts.resize(1200, 700);
        charts.show();
        QVERIFY(QTest::qWaitForWindowExposed(&charts));
        metrics.addEvents(recordedEvents(QStringLiteral("recorded-ok")));
        // No refresh() here: the timer's tick must draw.
        QTRY_VERIFY_WITH_TIMEOUT(charts.lossSeries(1) && charts.lossSeries(1)->count() == 12, 2000);
        QCOMPARE(charts.chart(RunCharts::LossChart)->series().size(), 2);
        for (int rank : {0, 1}) {
            QCOMPARE(charts.lossSeries(rank)->count(), 12);
            QCOMPARE(charts.throughputSeries(rank)->count(), 12);
            QCOMPARE(charts.lossSeries(rank)->points(), metrics.rank(rank)->loss.points());
        }
        QCOMPARE(charts.stepTimeSeries(StepPart::CommWait)->count(), 12); // the mean of both ranks
        QVERIFY(charts.tickInterval() <= 100);
        // Nothing new: a tick replaces nothing.
        const qint64 replaced = charts.replaceCount();
        charts.refresh();
        QCOMPARE(charts.replaceCount(), replaced);
    }

    // The step axes are labelled in whole steps, before the first step (Qt's 0 to 1 labelled its five ticks 0, 0, 0,
    // 0, 1) and after only a few.
    void stepAxesTickInWholeSteps() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        charts.resize(1200, 700);
        charts.show();
        QVERIFY(QTest::qWaitForWindowExposed(&charts));
        const auto wholeTicks = [&charts](RunCharts::Chart which) {
            const auto* axis = qobject_cast<QValueAxis*>(charts.chart(which)->axes(Qt::Horizontal).first());
            const double step = (axis->max() - axis->min()) / (axis->tickCount() - 1);
            return step >= 1.0 && step == std::floor(step) && axis->min() == std::floor(axis->min());
        };
        for (const auto which : {RunCharts::LossChart, RunCharts::ThroughputChart, RunCharts::StepTimeChart})
            QVERIFY(wholeTicks(which));
        for (const qint64 last : {1, 2}) { // a lone point, then two
            QVector<TrainerEvent> first;
            for (const TrainerEvent& event : recordedEvents(QStringLiteral("recorded-ok")))
                if (event.type != TrainerEventType::Step || event.integer("step") <= last)
                    first.append(event);
            metrics.clear();
            metrics.addEvents(first);
            charts.refresh();
            QVERIFY(charts.lossSeries(0) && charts.lossSeries(0)->count() == last);
            for (const auto which : {RunCharts::LossChart, RunCharts::ThroughputChart, RunCharts::StepTimeChart})
                QVERIFY2(wholeTicks(which),
                         qPrintable(QStringLiteral("chart %1 at step %2").arg(int(which)).arg(last)));
        }
    }

    // A run of 220 steps ended on a step axis of 0 to 400 (nice numbers round 201 up): half of each chart stayed
    // empty. The axis ends at the run's last step instead, ticked in whole steps from 0; a run that does not say
    // its length keeps the nice numbers.
    void stepAxesEndAtTheRunsLastStep() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        QVERIFY(showTickDriven(charts));
        const auto axis = [&charts](RunCharts::Chart which) {
            return qobject_cast<QValueAxis*>(charts.chart(which)->axes(Qt::Horizontal).first());
        };
        const auto addSteps = [&metrics](qint64 from, qint64 to) {
            QVector<TrainerEvent> events;
            for (int rank = 0; rank < 2; ++rank)
                for (qint64 step = from; step <= to; ++step)
                    events.append(
                        rankscope::test::syntheticStep(rank, 1000.0 + double(step), step, 1.0 / double(step)));
            metrics.addEvents(events);
        };
        metrics.addEvents({rankscope::test::syntheticStart(0, 2, 1000.0, QStringLiteral("node-a"), 220),
                           rankscope::test::syntheticStart(1, 2, 1000.0, QStringLiteral("node-a"), 220)});
        for (const qint64 last : {30, 120, 201, 220}) {
            addSteps(last < 120 ? 1 : last == 120 ? 31 : last == 201 ? 121 : 202, last);
            charts.tick();
            for (const auto which : {RunCharts::LossChart, RunCharts::ThroughputChart, RunCharts::StepTimeChart}) {
                const QValueAxis* x = axis(which);
                const QString where = QStringLiteral("chart %1 at step %2: %3 to %4, tick type %5, interval %6")
                                          .arg(int(which))
                                          .arg(last)
                                          .arg(x->min())
                                          .arg(x->max())
                                          .arg(int(x->tickType()))
                                          .arg(x->tickInterval());
                QVERIFY2(x->max() >= double(last) && x->max() <= 220.0, qPrintable(where));
                if (last >= 201) {
                    QVERIFY2(x->max() == 220.0 && x->tickType() == QValueAxis::TicksDynamic, qPrintable(where));
                    QVERIFY2(x->tickAnchor() == 0.0 && x->tickInterval() == 50.0, qPrintable(where));
                }
            }
        }
        QCOMPARE(charts.lossSeries(0)->at(charts.lossSeries(0)->count() - 1).x(), 220.0);
        // Steps past the last one the start events said (a run resumed with more steps): the axis follows them.
        addSteps(221, 300);
        charts.tick();
        QVERIFY2(axis(RunCharts::LossChart)->max() >= 300.0,
                 qPrintable(QString::number(axis(RunCharts::LossChart)->max())));

        // No start event: the same steps on the nice numbers' axis, past the last step.
        RunMetrics unsaid;
        RunCharts plain(&unsaid);
        QVERIFY(showTickDriven(plain));
        QVector<TrainerEvent> events;
        for (qint64 step = 1; step <= 220; ++step)
            events.append(rankscope::test::syntheticStep(0, 1000.0 + double(step), step, 1.0 / double(step)));
        unsaid.addEvents(events);
        plain.tick();
        const auto* x = qobject_cast<QValueAxis*>(plain.chart(RunCharts::LossChart)->axes(Qt::Horizontal).first());
        QVERIFY2(x->max() > 220.0 && x->tickType() == QValueAxis::TicksFixed, qPrintable(QString::number(x->max())));
        // The start events come after the steps (events of a rank arrive in order, but a reader may start late): the
        // axis, past the last step by its nice numbers, ends there once it is known.
        unsaid.addEvents({rankscope::test::syntheticStart(0, 1, 1000.0, QStringLiteral("node-a"), 230)});
        plain.tick();
        QVERIFY2(x->max() == 230.0 && x->tickType() == QValueAxis::TicksDynamic, qPrintable(QString::number(x->max())));
    }

    void longSeriesAreDownsampled() {
        RunMetrics metrics;
        metrics.setWindow(200000);
        RunCharts charts(&metrics);
        charts.resize(1200, 700);
        charts.show();
        QVERIFY(QTest::qWaitForWindowExposed(&charts));
        for (int rank = 0; rank < 2; ++rank) {
            QVector<TrainerEvent> events;
            events.reserve(100000);
            for (int step = 1; step <= 100000; ++step)
                events.append(rankscope::test::syntheticStep(rank, step * 0.1, step, 1.0 + std::sin(step * 0.001)));
            metrics.addEvents(events);
        }
        QCOMPARE(metrics.rank(0)->loss.size(), 100000);
        charts.refresh();
        charts.refresh(); // the first one laid the legend out: now at the final plot width
        const int width = int(charts.chart(RunCharts::LossChart)->plotArea().width());
        QVERIFY(width > 100);
        for (int rank = 0; rank < 2; ++rank) {
            const int count = charts.lossSeries(rank)->count();
            // A bucket of 2 px holds its lowest and highest point; the line's ends add up to 4.
            QVERIFY2(count <= width + 4 && count >= width / 2,
                     qPrintable(QStringLiteral("%1 points for %2 px").arg(count).arg(width)));
        }
    }

    // Past the point budget a tick draws the loss chart or the other charts, in turn; under it, everything.
    void manyRanksTakeTurnsFewDoNot() {
        RunMetrics metrics;
        metrics.setWindow(20000);
        RunCharts charts(&metrics);
        QVERIFY(showTickDriven(charts));
        const auto addSteps = [&metrics](int ranks, qint64 from, qint64 to) {
            QVector<TrainerEvent> events;
            for (int rank = 0; rank < ranks; ++rank)
                for (qint64 step = from; step <= to; ++step)
                    events.append(rankscope::test::syntheticStep(rank, double(step), step, 2.0 / double(step), 50.0 + rank));
            metrics.addEvents(events);
        };
        const auto lastX = [](const QLineSeries* series) { return series->at(series->count() - 1).x(); };

        // Two ranks: far under the budget, one tick draws every chart.
        addSteps(2, 1, 50);
        charts.tick();
        QVERIFY(!charts.ticksTakeTurns());
        QCOMPARE(lastX(charts.lossSeries(1)), 50.0);
        QCOMPARE(lastX(charts.throughputSeries(1)), 50.0);
        QCOMPARE(lastX(charts.stepTimeSeries(StepPart::Forward)), 50.0);
        addSteps(2, 51, 60);
        charts.tick();
        QCOMPARE(lastX(charts.lossSeries(0)), 60.0);
        QCOMPARE(lastX(charts.throughputSeries(0)), 60.0);
        // Rank 0 alone runs far past the axis: the axes move, and rank 1's unchanged lines are drawn again whole
        // (a moving axis empties every series first, so that Qt Charts builds each one's geometry once).
        const double axisMax = charts.chart(RunCharts::LossChart)->axes(Qt::Horizontal).first()->property("max").toDouble();
        QVector<TrainerEvent> ahead;
        for (qint64 step = 61; step <= 500; ++step)
            ahead.append(rankscope::test::syntheticStep(0, double(step), step, 2.0 / double(step), 50.0));
        metrics.addEvents(ahead);
        charts.tick();
        QVERIFY(charts.chart(RunCharts::LossChart)->axes(Qt::Horizontal).first()->property("max").toDouble() > axisMax);
        QCOMPARE(charts.lossSeries(1)->points(), metrics.rank(1)->loss.points());
        QCOMPARE(charts.throughputSeries(1)->points(), metrics.rank(1)->imagesPerSec.points());
        QCOMPARE(lastX(charts.lossSeries(0)), 500.0);

        // Sixteen ranks with long series: each holds about one point per plot pixel, far over the budget.
        charts.clear();
        metrics.clear();
        addSteps(16, 1, 3000);
        charts.refresh();
        charts.refresh(); // laid out at the final width
        int points = 0;
        for (int rank = 0; rank < 16; ++rank)
            points += int(charts.lossSeries(rank)->count() + charts.throughputSeries(rank)->count());
        QVERIFY2(points > RunCharts::kTickPointBudget, qPrintable(QString::number(points)));
        addSteps(16, 3001, 3100);
        QVERIFY(charts.nextTickDrawsLoss() || !charts.ticksTakeTurns());
        charts.tick(); // loss only
        QVERIFY(charts.ticksTakeTurns());
        QVERIFY(!charts.nextTickDrawsLoss());
        for (int rank = 0; rank < 16; ++rank) {
            QCOMPARE(lastX(charts.lossSeries(rank)), 3100.0);
            QVERIFY(lastX(charts.throughputSeries(rank)) < 3001.0);
        }
        QVERIFY(lastX(charts.stepTimeSeries(StepPart::Backward)) < 3001.0);
        charts.tick(); // the others
        QVERIFY(charts.nextTickDrawsLoss());
        for (int rank = 0; rank < 16; ++rank)
            QCOMPARE(lastX(charts.throughputSeries(rank)), 3100.0);
        QCOMPARE(lastX(charts.stepTimeSeries(StepPart::Backward)), 3100.0);
        // Nothing new: the turns go on and replace nothing.
        const qint64 replaced = charts.replaceCount();
        charts.tick();
        QVERIFY(!charts.nextTickDrawsLoss());
        charts.tick();
        QCOMPARE(charts.replaceCount(), replaced);
        QVERIFY(charts.nextTickDrawsLoss());
        // A focus while taking turns: the step-time breakdown follows it on the others' turn.
        charts.focusRank(5);
        charts.tick();
        charts.tick();
        QCOMPARE(charts.chart(RunCharts::StepTimeChart)->title(), QStringLiteral("Step time · rank 5"));
        charts.focusRank(-1);
        charts.tick();
        charts.tick();
        QCOMPARE(charts.chart(RunCharts::StepTimeChart)->title(), QStringLiteral("Step time · mean of ranks"));
        // A narrower window: on their turns, every chart is drawn again at the new width, with no new data.
        const auto plotWidth = [&charts](RunCharts::Chart which) {
            return int(charts.chart(which)->plotArea().width());
        };
        const int wide = plotWidth(RunCharts::ThroughputChart);
        charts.resize(700, 700);
        QTest::qWait(20); // the layout
        charts.tick();
        charts.tick();
        charts.tick();
        QVERIFY2(plotWidth(RunCharts::ThroughputChart) < wide * 3 / 4, qPrintable(QString::number(wide)));
        for (const auto which : {RunCharts::LossChart, RunCharts::ThroughputChart}) {
            const QLineSeries* line = which == RunCharts::LossChart ? charts.lossSeries(0) : charts.throughputSeries(0);
            QVERIFY2(line->count() <= plotWidth(which) + 4, qPrintable(QStringLiteral("chart %1: %2 points for %3 px")
                                                                           .arg(int(which))
                                                                           .arg(line->count())
                                                                           .arg(plotWidth(which))));
        }
        // A budget no run reaches: back to drawing everything on each tick.
        charts.setTickPointBudget(1 << 30);
        addSteps(16, 3101, 3110);
        charts.tick();
        QVERIFY(!charts.ticksTakeTurns());
        QCOMPARE(lastX(charts.lossSeries(15)), 3110.0);
        QCOMPARE(lastX(charts.throughputSeries(15)), 3110.0);
    }

    void hoverAndFocusHighlight() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        metrics.addEvents(recordedEvents(QStringLiteral("recorded-ok")));
        charts.refresh();
        QLineSeries* zero = charts.lossSeries(0);
        QLineSeries* one = charts.lossSeries(1);
        const double normal = zero->pen().widthF();
        QCOMPARE(one->pen().widthF(), normal);
        QCOMPARE(zero->pen().color().alpha(), 255);

        emit one->hovered(QPointF(3, 2.0), true);
        QCOMPARE(charts.highlightedRank(), 1);
        QVERIFY(one->pen().widthF() > normal);
        QVERIFY(zero->pen().color().alpha() < 128);
        QVERIFY(charts.throughputSeries(1)->pen().widthF() > normal);
        emit one->hovered(QPointF(3, 2.0), false);
        QCOMPARE(charts.highlightedRank(), -1);
        QCOMPARE(one->pen().widthF(), normal);
        QCOMPARE(zero->pen().color().alpha(), 255);

        // Pointed at from elsewhere (the rank's tile): the same highlight.
        charts.pointAtRank(1);
        QCOMPARE(charts.highlightedRank(), 1);
        QCOMPARE(charts.focusedRank(), -1); // a pointer passing over is no focus
        QVERIFY(one->pen().widthF() > normal);
        QVERIFY(zero->pen().color().alpha() < 128);
        charts.pointAtRank(-1);
        QCOMPARE(charts.highlightedRank(), -1);
        QCOMPARE(one->pen().widthF(), normal);

        charts.focusRank(0);
        QVERIFY(zero->pen().widthF() > normal);
        QVERIFY(one->pen().color().alpha() < 128);
        charts.refresh();
        QCOMPARE(charts.chart(RunCharts::StepTimeChart)->title(), QStringLiteral("Step time · rank 0"));
        QCOMPARE(charts.stepTimeSeries(StepPart::Forward)->points(),
                 metrics.rank(0)->partsMs[int(StepPart::Forward)].points());
        charts.focusRank(-1);
        charts.refresh();
        QCOMPARE(zero->pen().widthF(), normal);
        QCOMPARE(charts.chart(RunCharts::StepTimeChart)->title(), QStringLiteral("Step time · mean of ranks"));
    }

    // The pointer on a line says whose it is and how it stands at that step: in a run too large for a legend, a line
    // is otherwise no one's. Ranks 0 to 2 run at 300, 310 and 320 images/s, rank 3 at 150 to step 80; ranks 1 and 2
    // to step 100, rank 0 to 120.
    void hoveredLineSaysWhoseItIsAndHowItStands() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        QVERIFY(showTickDriven(charts));
        QVector<TrainerEvent> events;
        for (int rank = 0; rank < 4; ++rank)
            events.append(
                rankscope::test::syntheticStart(rank, 4, 1000.0, QStringLiteral("node-%1").arg(rank / 2), 200));
        for (int rank = 0; rank < 4; ++rank)
            for (qint64 step = 1; step <= (rank == 0 ? 120 : rank == 3 ? 80 : 100); ++step)
                events.append(rankscope::test::syntheticStep(rank, 1000.0 + double(step), step,
                                                             2.0 - 0.01 * double(step) + 0.1 * rank,
                                                             rank == 3 ? 150.0 : 300.0 + 10.0 * rank));
        metrics.addEvents(events);
        charts.refresh();
        charts.refresh(); // laid out at the final width

        const struct {
            RunCharts::Chart chart;
            int rank;
            double step;
            const char* text;
        } points[] = {
            {RunCharts::ThroughputChart, 3, 40.2,
             "rank 3 on node-1 · step 40 · 150 images/s · 0.49× the median of 4 ranks (305)"},
            {RunCharts::ThroughputChart, 2, 39.6,
             "rank 2 on node-1 · step 40 · 320 images/s · 1.05× the median of 4 ranks (305)"},
            {RunCharts::LossChart, 1, 40.0, "rank 1 on node-0 · step 40 · loss 1.7 · median of 4 ranks 1.75"},
            // Past rank 3's last step, three ranks: the middle one.
            {RunCharts::ThroughputChart, 0, 90.0,
             "rank 0 on node-0 · step 90 · 300 images/s · 0.97× the median of 3 ranks (310)"},
            {RunCharts::LossChart, 2, 100.0, "rank 2 on node-1 · step 100 · loss 1.2 · median of 3 ranks 1.1"},
            // Past every other's, rank 0 has none to stand against.
            {RunCharts::ThroughputChart, 0, 110.0, "rank 0 on node-0 · step 110 · 300 images/s"},
            // The nearest step of the line, at either end.
            {RunCharts::ThroughputChart, 3, 500.0,
             "rank 3 on node-1 · step 80 · 150 images/s · 0.49× the median of 4 ranks (305)"},
            {RunCharts::ThroughputChart, 3, -5.0,
             "rank 3 on node-1 · step 1 · 150 images/s · 0.49× the median of 4 ranks (305)"},
            // The others stand at the step of the point shown, not at the one asked for: 1.2 to 1.5 at step 80.
            {RunCharts::LossChart, 3, 500.0, "rank 3 on node-1 · step 80 · loss 1.5 · median of 4 ranks 1.35"},
        };
        for (const auto& point : points)
            QCOMPARE(charts.pointText(point.chart, point.rank, point.step), QString::fromUtf8(point.text));
        QCOMPARE(charts.pointText(RunCharts::ThroughputChart, 9, 40.0), QStringLiteral("rank 9"));
        QVERIFY(charts.pointText(RunCharts::StepTimeChart, 3, 40.0).isEmpty());
        // The accuracy chart spans the run's 5 epochs, one tick each, 0 to 1 while it holds no point.
        const auto* epochs =
            qobject_cast<QValueAxis*>(charts.chart(RunCharts::AccuracyChart)->axes(Qt::Horizontal).first());
        QCOMPARE(epochs->max(), 5.0);
        QCOMPARE(epochs->tickCount(), 6);
        const auto* accuracy =
            qobject_cast<QValueAxis*>(charts.chart(RunCharts::AccuracyChart)->axes(Qt::Vertical).first());
        QCOMPARE(accuracy->min(), 0.0);
        QCOMPARE(accuracy->max(), 1.0);

        // The real pointer, through the chart view: onto rank 3's line, along it, off it.
        QChartView* view = charts.chartView(RunCharts::ThroughputChart);
        QLineSeries* slow = charts.throughputSeries(3);
        const auto at = [view, slow](double step, double y) {
            return view->mapFromScene(view->chart()->mapToScene(view->chart()->mapToPosition(QPointF(step, y), slow)));
        };
        const auto move = [view](QPoint position) {
            QMouseEvent event(QEvent::MouseMove, position, view->viewport()->mapToGlobal(position), Qt::NoButton,
                              Qt::NoButton, Qt::NoModifier);
            QCoreApplication::sendEvent(view->viewport(), &event);
        };
        QSignalSpy hovered(&charts, &RunCharts::rankHovered);
        move(at(40.0, 150.0));
        QCOMPARE(hovered.count(), 1);
        QCOMPARE(hovered.last().at(0).toInt(), 3);
        QCOMPARE(charts.highlightedRank(), 3);
        QVERIFY2(charts.hoverText().startsWith(QStringLiteral("rank 3 on node-1 · step ")),
                 qPrintable(charts.hoverText()));
        const auto shownStep = [&charts] {
            return charts.hoverText().section(QStringLiteral(" · "), 1, 1).mid(5).toInt();
        };
        QVERIFY2(std::abs(shownStep() - 40) <= 1, qPrintable(charts.hoverText()));
        move(at(70.0, 150.0));
        QVERIFY2(std::abs(shownStep() - 70) <= 1, qPrintable(charts.hoverText()));
        QString what;
        QVERIFY2(tooltipAt(view, at(shownStep(), 150.0), charts.hoverText(), &what), qPrintable(what));
        QVERIFY(charts.hoverText().endsWith(QStringLiteral("150 images/s · 0.49× the median of 4 ranks (305)")));
        // A move over the other chart is not along this line.
        QChartView* lossView = charts.chartView(RunCharts::LossChart);
        const QString onLine = charts.hoverText();
        QMouseEvent elsewhere(QEvent::MouseMove, QPoint(30, 30), lossView->viewport()->mapToGlobal(QPoint(30, 30)),
                              Qt::NoButton, Qt::NoButton, Qt::NoModifier);
        QCoreApplication::sendEvent(lossView->viewport(), &elsewhere);
        QCOMPARE(charts.hoverText(), onLine);
        // Lines close together: the pointer enters the next before it leaves the first, whose leave then changes
        // nothing.
        emit charts.throughputSeries(2)->hovered(QPointF(70.0, 320.0), true);
        emit slow->hovered(QPointF(70.0, 150.0), false);
        QCOMPARE(charts.highlightedRank(), 2);
        QVERIFY2(charts.hoverText().startsWith(QStringLiteral("rank 2 on node-1 · step 70 · 320 images/s")),
                 qPrintable(charts.hoverText()));
        emit charts.throughputSeries(2)->hovered(QPointF(70.0, 320.0), false);
        QCOMPARE(charts.highlightedRank(), -1);
        const QPoint offTheLines =
            view->mapFromScene(view->chart()->mapToScene(view->chart()->plotArea().topLeft())) + QPoint(2, 2);
        move(offTheLines); // where the view itself sees the pointer leave rank 3's line
        move(at(70.0, 150.0));
        QCOMPARE(charts.highlightedRank(), 3);
        hovered.clear();
        move(offTheLines);
        QCOMPARE(hovered.count(), 1);
        QCOMPARE(hovered.last().at(0).toInt(), -1);
        QCOMPARE(charts.highlightedRank(), -1);
        QVERIFY(charts.hoverText().isEmpty());
        // A move that is on no line keeps still.
        move(at(50.0, 150.0) + QPoint(0, -60));
        QVERIFY(charts.hoverText().isEmpty());

        // A click on the line asks for its rank.
        QSignalSpy clicked(&charts, &RunCharts::rankClicked);
        QTest::mousePress(view->viewport(), Qt::LeftButton, {}, at(60.0, 150.0));
        QCOMPARE(clicked.count(), 0); // a click is a press and its release
        QTest::mouseRelease(view->viewport(), Qt::LeftButton, {}, at(60.0, 150.0));
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked.last().at(0).toInt(), 3);

        // A new run forgets the hovered line.
        move(at(40.0, 150.0));
        QVERIFY(!charts.hoverText().isEmpty());
        charts.clear();
        QVERIFY(charts.hoverText().isEmpty());
        QCOMPARE(charts.highlightedRank(), -1);

        // A rank that joined late (rank 1, from step 6) stands beside the others only where its line is.
        RunMetrics late;
        RunCharts lateCharts(&late);
        QVector<TrainerEvent> steps;
        for (qint64 step = 1; step <= 10; ++step)
            steps.append(rankscope::test::syntheticStep(0, 1000.0 + double(step), step, 1.0, 100.0));
        for (qint64 step = 6; step <= 10; ++step)
            steps.append(rankscope::test::syntheticStep(1, 1000.0 + double(step), step, 1.0, 200.0));
        late.addEvents(steps);
        QCOMPARE(lateCharts.pointText(RunCharts::ThroughputChart, 0, 3.0),
                 QStringLiteral("rank 0 · step 3 · 100 images/s"));
        QCOMPARE(lateCharts.pointText(RunCharts::ThroughputChart, 0, 8.0),
                 QStringLiteral("rank 0 · step 8 · 100 images/s · 0.67× the median of 2 ranks (150)"));
    }

    // Every point is inside its chart: the axes grow to a spike even where the step axis stays; images/s from zero.
    void axesHoldEveryPoint() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        QVERIFY(showTickDriven(charts));
        const auto add = [&metrics](int rank, qint64 from, qint64 to, double loss, double imagesPerSec) {
            QVector<TrainerEvent> events;
            for (qint64 step = from; step <= to; ++step)
                events.append(rankscope::test::syntheticStep(rank, 1000.0 + double(step), step,
                                                             loss + 0.001 * double(step % 7),
                                                             imagesPerSec + double(step % 5)));
            metrics.addEvents(events);
        };
        const auto holds = [&charts](RunCharts::Chart which, QString* where) {
            const auto* x = qobject_cast<QValueAxis*>(charts.chart(which)->axes(Qt::Horizontal).first());
            const auto* y = qobject_cast<QValueAxis*>(charts.chart(which)->axes(Qt::Vertical).first());
            for (QAbstractSeries* abstract : charts.chart(which)->series())
                for (const QPointF& point : static_cast<QLineSeries*>(abstract)->points())
                    if (point.x() < x->min() || point.x() > x->max() || point.y() < y->min() || point.y() > y->max()) {
                        *where = QStringLiteral("chart %1: (%2, %3) outside %4..%5 x %6..%7")
                                     .arg(int(which))
                                     .arg(point.x())
                                     .arg(point.y())
                                     .arg(x->min())
                                     .arg(x->max())
                                     .arg(y->min())
                                     .arg(y->max());
                        return false;
                    }
            return true;
        };
        add(0, 1, 100, 1.0, 300.0);
        add(1, 1, 50, 1.1, 320.0);
        charts.tick();
        QString where;
        for (const auto which : {RunCharts::LossChart, RunCharts::ThroughputChart, RunCharts::StepTimeChart})
            QVERIFY2(holds(which, &where), qPrintable(where));
        const auto* throughputY =
            qobject_cast<QValueAxis*>(charts.chart(RunCharts::ThroughputChart)->axes(Qt::Vertical).first());
        QCOMPARE(throughputY->min(), 0.0);
        const auto* lossY = qobject_cast<QValueAxis*>(charts.chart(RunCharts::LossChart)->axes(Qt::Vertical).first());
        QVERIFY2(lossY->min() > 0.5, qPrintable(QString::number(lossY->min()))); // a loss is drawn where it is
        const double xMax =
            charts.chart(RunCharts::LossChart)->axes(Qt::Horizontal).first()->property("max").toDouble();
        // Rank 1 catches up with a spike: no new step on the axis, a new top.
        add(1, 51, 60, 50.0, 2000.0);
        charts.tick();
        QCOMPARE(charts.chart(RunCharts::LossChart)->axes(Qt::Horizontal).first()->property("max").toDouble(), xMax);
        for (const auto which : {RunCharts::LossChart, RunCharts::ThroughputChart})
            QVERIFY2(holds(which, &where), qPrintable(where));
    }

    // Up to twelve lines a chart has a legend; past twelve none (the pointer says whose a line is), and the rank
    // lines are thinner; at twelve, both as with two. The loss chart's ranks and the GPU panel's GPUs alike.
    void legendsEndAtTwelveLines() {
        for (const int lines : {12, 13}) {
            RunMetrics metrics;
            RunCharts charts(&metrics);
            QVector<TrainerEvent> events;
            QVector<GpuSample> samples;
            for (int line = 0; line < lines; ++line) {
                for (qint64 step = 1; step <= 5; ++step)
                    events.append(rankscope::test::syntheticStep(line, double(step), step, 1.0 + line));
                samples.append({QStringLiteral("node-%1").arg(line / 8), line % 8, 1000.0, 50.0, 100.0, 16000, 70.0});
            }
            metrics.addEvents(events);
            charts.addGpuSamples(samples);
            charts.refresh();
            QCOMPARE(charts.chart(RunCharts::LossChart)->legend()->isVisible(), lines <= 12);
            QCOMPARE(charts.lossSeries(0)->pen().widthF(), lines <= 12 ? 1.6 : 1.0);
            QCOMPARE(charts.throughputSeries(lines - 1)->pen().widthF(), lines <= 12 ? 1.6 : 1.0);
            QCOMPARE(charts.chart(RunCharts::GpuChart)->series().size(), lines);
            QCOMPARE(charts.chart(RunCharts::GpuChart)->legend()->isVisible(), lines <= 12);
        }
    }

    // A rank has a line once it reports a loss: its start event alone draws nothing, not even a legend entry.
    void aRankIsDrawnFromItsFirstStep() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        metrics.addEvents({rankscope::test::syntheticStart(0, 2, 1000.0, QStringLiteral("node-a"), 100),
                           rankscope::test::syntheticStart(1, 2, 1000.0, QStringLiteral("node-a"), 100)});
        metrics.rankExited(1, 1); // rank 1 died before its first step
        charts.refresh();
        QCOMPARE(charts.lossSeries(0), nullptr);
        QCOMPARE(charts.chart(RunCharts::LossChart)->series().size(), 0);
        metrics.addEvents({rankscope::test::syntheticStep(0, 1001.0, 1, 2.0)});
        charts.refresh();
        QVERIFY(charts.lossSeries(0));
        QCOMPARE(charts.lossSeries(1), nullptr);
        QCOMPARE(charts.chart(RunCharts::LossChart)->series().size(), 1);
    }

    // The charts' own timer: 5 to 50 ms, and still when their owner drives the ticks.
    void theTimerTicksUnlessTheOwnerDoes() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        charts.setTickInterval(400);
        QCOMPARE(charts.tickInterval(), 50);
        charts.setTickInterval(1);
        QCOMPARE(charts.tickInterval(), 5);
        charts.setTickDriven(true);
        metrics.addEvents(recordedEvents(QStringLiteral("recorded-ok")));
        QTest::qWait(100);
        QCOMPARE(charts.lossSeries(0), nullptr);
        charts.setTickDriven(false);
        QTRY_VERIFY_WITH_TIMEOUT(charts.lossSeries(0) && charts.lossSeries(0)->count() == 12, 2000);
    }

    // The step-time breakdown of a focused rank: the rank's own, empty where it has none; a rank the run does not
    // know leaves the mean.
    void stepTimeOfTheFocusedRank() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        metrics.addEvents(recordedEvents(QStringLiteral("recorded-ok")));
        metrics.rankExited(2, 1); // a third rank that never stepped
        charts.refresh();
        const QChart* stepTime = charts.chart(RunCharts::StepTimeChart);
        QCOMPARE(charts.stepTimeSeries(StepPart::Forward)->count(), 12);
        charts.focusRank(9);
        charts.refresh();
        QCOMPARE(stepTime->title(), QStringLiteral("Step time · mean of ranks"));
        QCOMPARE(charts.stepTimeSeries(StepPart::Forward)->points(), metrics.meanPartMs(StepPart::Forward).points());
        charts.focusRank(2);
        charts.refresh();
        QCOMPARE(stepTime->title(), QStringLiteral("Step time · rank 2"));
        for (int part = 0; part < kStepPartCount; ++part)
            QCOMPARE(charts.stepTimeSeries(StepPart(part))->count(), 0);
    }

    // A new run in the same charts starts as the first did: no focus, the mean's breakdown, its own accuracy.
    void clearStartsAnew() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        const QVector<TrainerEvent> validated = recordedEvents(QStringLiteral("clean"), QStringLiteral(".events"));
        metrics.addEvents(validated);
        charts.focusRank(0);
        charts.refresh();
        QCOMPARE(charts.accuracySeries()->count(), 2);
        const auto* accuracyY =
            qobject_cast<QValueAxis*>(charts.chart(RunCharts::AccuracyChart)->axes(Qt::Vertical).first());
        QVERIFY2(accuracyY->min() > 0.4 && accuracyY->max() >= 0.75, qPrintable(QString::number(accuracyY->min())));
        QCOMPARE(charts.chart(RunCharts::StepTimeChart)->title(), QStringLiteral("Step time · rank 0"));

        charts.clear();
        metrics.clear();
        QCOMPARE(charts.focusedRank(), -1);
        metrics.addEvents(validated); // the same run again: nothing of the last drawing may be taken for it
        charts.refresh();
        QCOMPARE(charts.chart(RunCharts::StepTimeChart)->title(), QStringLiteral("Step time · mean of ranks"));
        QCOMPARE(charts.accuracySeries()->count(), 2);
        QCOMPARE(charts.lossSeries(0)->points(), metrics.rank(0)->loss.points());
    }

    // A new run draws its own GPUs only: the last run's lines go, and a GPU of the same name starts anew.
    void aNewRunDrawsOnlyItsOwnGpus() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        QVector<GpuSample> samples;
        for (int t = 0; t < 30; ++t)
            for (int gpu = 0; gpu < 2; ++gpu)
                samples.append({QStringLiteral("node-a"), gpu, 1000.0 + t, 50.0 + gpu * 20, 4000, 16000, 150});
        charts.addGpuSamples(samples);
        charts.refresh();
        QCOMPARE(charts.chart(RunCharts::GpuChart)->series().size(), 2);

        charts.clear();
        metrics.clear();
        QVERIFY(!charts.gpuPanel()->series(QStringLiteral("node-a/gpu1")));
        samples.clear();
        for (int t = 0; t < 3; ++t)
            samples.append({QStringLiteral("node-a"), 0, 2000.0 + t, 90.0, 1000, 16000, 200});
        charts.addGpuSamples(samples);
        charts.refresh();
        QCOMPARE(charts.chart(RunCharts::GpuChart)->series().size(), 1);
        const QLineSeries* gpu0 = charts.gpuPanel()->series(QStringLiteral("node-a/gpu0"));
        QVERIFY(gpu0);
        QCOMPARE(gpu0->points(), QList<QPointF>({{0, 90}, {1, 90}, {2, 90}}));
    }

    // A GPU's colour is its place among all the GPUs: a node whose samples come later does not repeat the colours of
    // the nodes before it. node-b's two GPUs are drawn first; node-a's two, sorted before them, come a tick later.
    void aLateNodeGetsColoursOfItsOwn() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        const auto sample = [&charts](const char* node, int gpus) {
            QVector<GpuSample> samples;
            for (int gpu = 0; gpu < gpus; ++gpu)
                samples.append({QString::fromLatin1(node), gpu, 1000.0, 50.0, 4000, 16000, 150});
            charts.addGpuSamples(samples);
            charts.refresh();
        };
        sample("node-b", 2);
        QStringList names{QStringLiteral("node-b/gpu0"), QStringLiteral("node-b/gpu1")};
        for (const auto& [node, gpus] : {std::pair("node-a", 2), std::pair("node-c", 9)}) {
            sample(node, gpus);
            for (int gpu = 0; gpu < gpus; ++gpu)
                names << QStringLiteral("%1/gpu%2").arg(QLatin1String(node)).arg(gpu);
            names.sort(); // the panel's order
            QCOMPARE(charts.chart(RunCharts::GpuChart)->series().size(), names.size());
            QSet<QRgb> colors;
            for (int index = 0; index < names.size(); ++index) {
                const QLineSeries* line = charts.gpuPanel()->series(names[index]);
                QVERIFY2(line, qPrintable(names[index]));
                QCOMPARE(line->pen().color(), rankColor(index, int(names.size())));
                colors.insert(line->pen().color().rgb());
            }
            QCOMPARE(colors.size(), names.size());
        }
    }

    // The pointer on a GPU's line says which GPU, when, and how it stands against the GPUs sampled then: a cluster's
    // sixteen GPUs have no legend, and the one that idles is the one to find. node-a's GPUs 0 and 1 work at 90 and
    // 91 %, its GPU 2 climbs from 10 %, node-b's GPU comes 30 s late at 50 %.
    void hoveredGpuLineSaysWhichGpu() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        QVERIFY(showTickDriven(charts));
        QVector<GpuSample> samples;
        for (int t = 0; t <= 60; ++t) {
            for (int gpu = 0; gpu < 3; ++gpu)
                samples.append({QStringLiteral("node-a"), gpu, 1000.0 + t, gpu == 2 ? 10.0 + t : 90.0 + gpu,
                                4000.0 + gpu, 16000, 150.0 + t});
            if (t >= 30)
                samples.append({QStringLiteral("node-b"), 0, 1000.0 + t, 50.0, 8000.0, 16000, 150.0 + t});
        }
        charts.addGpuSamples(samples);
        charts.refresh();
        charts.refresh();
        GpuPanel* panel = charts.gpuPanel();
        QCOMPARE(panel->pointText(QStringLiteral("node-a/gpu2"), 30.2),
                 QStringLiteral("node-a/gpu2 · 30 s · 40 % · median of 4 GPUs 70 %"));
        QCOMPARE(panel->pointText(QStringLiteral("node-a/gpu1"), 99.0),
                 QStringLiteral("node-a/gpu1 · 60 s · 91 % · median of 4 GPUs 80 %"));
        // Before node-b's first sample, three GPUs.
        QCOMPARE(panel->pointText(QStringLiteral("node-a/gpu0"), 10.0),
                 QStringLiteral("node-a/gpu0 · 10 s · 90 % · median of 3 GPUs 90 %"));
        QCOMPARE(panel->pointText(QStringLiteral("node-c/gpu0"), 3.0), QStringLiteral("node-c/gpu0"));
        const auto* y = qobject_cast<QValueAxis*>(panel->chart()->axes(Qt::Vertical).first());
        QVERIFY2(y->min() <= 10.0 && y->max() >= 91.0,
                 qPrintable(QStringLiteral("%1 to %2").arg(y->min()).arg(y->max())));
        panel->setMetric(GpuMetric::Memory);
        QCOMPARE(y->titleText(), QStringLiteral("memory used (MiB)"));
        QCOMPARE(panel->pointText(QStringLiteral("node-a/gpu0"), 5.0),
                 QStringLiteral("node-a/gpu0 · 5 s · 4000 MiB · median of 3 GPUs 4001 MiB"));
        panel->setMetric(GpuMetric::Power);
        QCOMPARE(y->titleText(), QStringLiteral("power (W)"));
        QCOMPARE(panel->pointText(QStringLiteral("node-a/gpu0"), 5.0),
                 QStringLiteral("node-a/gpu0 · 5 s · 155 W · median of 3 GPUs 155 W"));
        // Asked before node-b's first sample: its first, against the others then.
        QCOMPARE(panel->pointText(QStringLiteral("node-b/gpu0"), 5.0),
                 QStringLiteral("node-b/gpu0 · 30 s · 180 W · median of 4 GPUs 180 W"));
        panel->setMetric(GpuMetric::Utilization);
        QCOMPARE(y->titleText(), QStringLiteral("utilisation (%)"));
        charts.refresh();

        // The real pointer: onto gpu2's line, along it, off it.
        QChartView* view = panel->chartView();
        QLineSeries* idle = panel->series(QStringLiteral("node-a/gpu2"));
        const auto at = [view, idle](double seconds, double value) {
            return view->mapFromScene(
                view->chart()->mapToScene(view->chart()->mapToPosition(QPointF(seconds, value), idle)));
        };
        const auto move = [view](QPoint position) {
            QMouseEvent event(QEvent::MouseMove, position, view->viewport()->mapToGlobal(position), Qt::NoButton,
                              Qt::NoButton, Qt::NoModifier);
            QCoreApplication::sendEvent(view->viewport(), &event);
        };
        QLineSeries* busy = panel->series(QStringLiteral("node-a/gpu0"));
        const double normal = idle->pen().widthF();
        const QColor idleColor = idle->pen().color();
        const QColor busyColor = busy->pen().color();
        move(at(20.0, 30.0));
        QVERIFY2(panel->hoverText().startsWith(QStringLiteral("node-a/gpu2 · ")), qPrintable(panel->hoverText()));
        QVERIFY(idle->pen().widthF() > normal);
        // The others fade, thinner, as on the rank charts; the hovered line keeps its colour.
        QCOMPARE(idle->pen().color(), idleColor);
        QVERIFY(busy->pen().color().alpha() < 255);
        QVERIFY(busy->pen().widthF() < normal);
        QCOMPARE(busy->pen().color().rgb(), busyColor.rgb());
        const auto shownSeconds = [panel] {
            return panel->hoverText().section(QStringLiteral(" · "), 1, 1).chopped(2).toInt();
        };
        QVERIFY2(std::abs(shownSeconds() - 20) <= 1, qPrintable(panel->hoverText()));
        move(at(45.0, 55.0));
        QVERIFY2(std::abs(shownSeconds() - 45) <= 1, qPrintable(panel->hoverText()));
        QVERIFY2(panel->hoverText().contains(QStringLiteral(" s · %1 % · median of 4 GPUs ").arg(10 + shownSeconds())),
                 qPrintable(panel->hoverText()));
        QString what;
        QVERIFY2(tooltipAt(view, at(shownSeconds(), 10.0 + shownSeconds()), panel->hoverText(), &what),
                 qPrintable(what));
        // Close lines: the next entered before the first is left.
        emit busy->hovered(QPointF(45.0, 90.0), true);
        emit idle->hovered(QPointF(45.0, 55.0), false);
        QVERIFY2(panel->hoverText().startsWith(QStringLiteral("node-a/gpu0 · 45 s · 90 %")),
                 qPrintable(panel->hoverText()));
        QVERIFY(idle->pen().widthF() < normal);
        QVERIFY(idle->pen().color().alpha() < 255);
        QVERIFY(busy->pen().widthF() > normal);
        QCOMPARE(busy->pen().color(), busyColor);
        emit busy->hovered(QPointF(45.0, 90.0), false);
        QVERIFY(panel->hoverText().isEmpty());
        for (const QLineSeries* line : {idle, busy})
            QCOMPARE(line->pen().widthF(), normal);
        QCOMPARE(idle->pen().color(), idleColor);
        QCOMPARE(busy->pen().color(), busyColor);
        // Off every line, a move says nothing.
        const QPoint offTheLines =
            view->mapFromScene(view->chart()->mapToScene(view->chart()->plotArea().topLeft())) + QPoint(2, 2);
        move(offTheLines);
        move(at(45.0, 55.0) + QPoint(0, -40));
        QVERIFY(panel->hoverText().isEmpty());
        // A new run forgets the hovered line: the same GPU's line again is not hovered until the pointer is on it.
        move(at(20.0, 30.0));
        QVERIFY(!panel->hoverText().isEmpty());
        charts.clear();
        QVERIFY(panel->hoverText().isEmpty());
        metrics.clear();
        charts.addGpuSamples(samples);
        charts.refresh();
        move(offTheLines);
        QVERIFY2(panel->hoverText().isEmpty(), qPrintable(panel->hoverText()));

        // A GPU alone has no median to stand against.
        RunMetrics single;
        RunCharts alone(&single);
        alone.addGpuSamples({{QStringLiteral("node-c"), 0, 1000.0, 33.0, 100.0, 16000, 70.0},
                             {QStringLiteral("node-c"), 0, 1002.0, 33.0, 100.0, 16000, 70.0}});
        alone.refresh();
        QCOMPARE(alone.gpuPanel()->pointText(QStringLiteral("node-c/gpu0"), 2.0),
                 QStringLiteral("node-c/gpu0 · 2 s · 33 %"));
    }

    void gpuPanelSaysWhenThereIsNoTelemetry() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        metrics.addEvents(recordedEvents(QStringLiteral("recorded-ok")));
        charts.refresh();
        QVERIFY(!charts.gpuPanel()->showsChart());
        QVERIFY(charts.gpuPanel()->noTelemetryText().contains(QStringLiteral("no GPUs")));
        const QLabel* label = charts.gpuPanel()->findChild<QLabel*>(QStringLiteral("gpuNoTelemetry"));
        QVERIFY(label && label->isVisibleTo(charts.gpuPanel()));
        QVERIFY(label->text().contains(charts.gpuPanel()->noTelemetryText().toHtmlEscaped()));

        // A node that should sample its GPUs but cannot says why, in place of "no GPUs".
        const QString why = QStringLiteral("supervisor: no nvidia-smi on PATH (/usr/bin:/bin): this node sends no GPU telemetry");
        charts.gpuPanel()->addNodeError(QStringLiteral("node-b"), why);
        charts.gpuPanel()->addNodeError(QStringLiteral("node-b"), why); // said once
        QCOMPARE(charts.gpuPanel()->noTelemetryText(), QStringLiteral("No GPU telemetry from node-b: ") + why);
        QVERIFY(label->text().contains(why.toHtmlEscaped()));
        QVERIFY(!label->text().contains(QStringLiteral("no GPUs")));
        const QLabel* underChart = charts.gpuPanel()->findChild<QLabel*>(QStringLiteral("gpuNodeErrors"));
        QVERIFY(underChart);

        QVector<GpuSample> samples;
        for (int t = 0; t < 30; ++t)
            for (int gpu = 0; gpu < 2; ++gpu)
                samples.append({QStringLiteral("node-a"), gpu, 1000.0 + t, 50.0 + gpu * 20, 4000, 16000, 150});
        charts.addGpuSamples(samples);
        charts.refresh();
        QVERIFY(charts.gpuPanel()->showsChart());
        // The other node's reason stays in view under the chart of the nodes that do send samples.
        QVERIFY(underChart->isVisibleTo(charts.gpuPanel()));
        QVERIFY(underChart->text().contains(QStringLiteral("node-b")));
        charts.clear(); // a new run: the reasons of the last one go
        QVERIFY(!underChart->isVisibleTo(charts.gpuPanel()));
        charts.refresh();
        QCOMPARE(charts.chart(RunCharts::GpuChart)->series().size(), 2);
        auto* first = qobject_cast<QLineSeries*>(charts.chart(RunCharts::GpuChart)->series().first());
        QCOMPARE(first->count(), 30);
        QCOMPARE(first->at(29), QPointF(29, 50));
        charts.gpuPanel()->setMetric(GpuMetric::Power);
        QCOMPARE(first->at(0).y(), 150.0);
    }

    // An empty validation chart says why: none yet while the run goes on, none at all once it ended without a full
    // epoch; with points it is the plain title.
    void validationChartSaysWhyItIsEmpty() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        const QVector<TrainerEvent> events = recordedEvents(QStringLiteral("recorded-ok")); // 12 steps, no epoch end
        const auto firstEnd = std::find_if(events.begin(), events.end(),
                                           [](const TrainerEvent& e) { return e.type == TrainerEventType::End; });
        QVERIFY(firstEnd != events.end());
        metrics.addEvents(QVector<TrainerEvent>(events.begin(), firstEnd));
        charts.refresh();
        const QChart* chart = charts.chart(RunCharts::AccuracyChart);
        QCOMPARE(chart->title(), QStringLiteral("Validation accuracy · after each full epoch"));
        metrics.addEvents(QVector<TrainerEvent>(firstEnd, events.end()));
        QVERIFY(metrics.progress().done);
        charts.refresh();
        QCOMPARE(chart->title(), QStringLiteral("Validation accuracy · no full epoch was validated"));

        RunMetrics validated;
        RunCharts withPoints(&validated);
        validated.addEvents(recordedEvents(QStringLiteral("clean"), QStringLiteral(".events")));
        withPoints.refresh();
        QCOMPARE(withPoints.accuracySeries()->count(), 2);
        QCOMPARE(withPoints.chart(RunCharts::AccuracyChart)->title(), QStringLiteral("Validation accuracy"));
    }

    // The accuracy chart's axis spans the run's epochs, one tick each up to ten, nice numbers past.
    void accuracyAxisCountsEpochs() {
        for (const int epochs : {7, 12}) {
            RunMetrics metrics;
            RunCharts charts(&metrics);
            const TrainerEventResult start =
                decodeTrainerEvent(QJsonObject{{"v", "1.0"},
                                               {"type", "start"},
                                               {"rank", 0},
                                               {"time", 100.0},
                                               {"world_size", 1},
                                               {"local_rank", 0},
                                               {"local_world_size", 1},
                                               {"host", "node-a"},
                                               {"pid", 10},
                                               {"backend", "gloo"},
                                               {"device", "cpu"},
                                               {"torch_version", "2.5.1"},
                                               {"steps_per_epoch", 10},
                                               {"total_steps", 10 * epochs},
                                               {"config", QJsonObject{{"epochs", epochs}}}});
            QVERIFY2(start.ok(), qPrintable(start.error));
            metrics.addEvents({*start.event});
            charts.refresh();
            const auto* x =
                qobject_cast<QValueAxis*>(charts.chart(RunCharts::AccuracyChart)->axes(Qt::Horizontal).first());
            if (epochs <= 10) {
                QCOMPARE(x->max(), double(epochs));
                QCOMPARE(x->tickCount(), epochs + 1);
            } else {
                QVERIFY2(x->max() >= epochs && x->tickCount() <= 11, qPrintable(QString::number(x->tickCount())));
            }
        }
    }

    void pngExport() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        charts.resize(1200, 700);
        metrics.addEvents(recordedEvents(QStringLiteral("recorded-ok")));
        QTemporaryDir dir;
        for (int which = 0; which < RunCharts::ChartCount; ++which) {
            const QString path = dir.filePath(QStringLiteral("chart%1.png").arg(which));
            QString error;
            QVERIFY2(charts.saveChartPng(which, path, &error), qPrintable(error));
            QImage image(path);
            QVERIFY(!image.isNull());
            QVERIFY(image.width() > 100 && image.height() > 100);
        }
        // The loss chart's PNG shows both ranks' colours.
        QImage loss(dir.filePath(QStringLiteral("chart0.png")));
        QSet<QRgb> colours;
        for (int y = 0; y < loss.height(); y += 2)
            for (int x = 0; x < loss.width(); x += 2)
                colours.insert(loss.pixel(x, y) & 0xffffff);
        QVERIFY(colours.contains(charts.lossSeries(0)->pen().color().rgb() & 0xffffff));
        QVERIFY(colours.contains(charts.lossSeries(1)->pen().color().rgb() & 0xffffff));
        QString error;
        QVERIFY(!charts.saveChartPng(RunCharts::ChartCount, dir.filePath(QStringLiteral("x.png")), &error));
        QVERIFY(!charts.saveChartPng(0, dir.filePath(QStringLiteral("missing/x.png")), &error));
    }
};

QTEST_MAIN(TestRunCharts)
#include "tst_runcharts.moc"
