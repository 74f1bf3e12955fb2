// SPDX-License-Identifier: MIT
// RunCharts: one series per rank with the recorded points after a tick, bounded point counts for long series,
// highlight on hover and focus, the GPU panel's sentence, PNG export.
#include "gpupanel.h"
#include "recording.h"
#include "runcharts.h"

#include <QChart>
#include <QChartView>
#include <QImage>
#include <QLabel>
#include <QLineSeries>
#include <QTemporaryDir>
#include <QValueAxis>
#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace rankscope;
using namespace rankscope::gui;
using rankscope::test::recordedEvents;

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
        QVector<TrainerEvent> first;
        for (const TrainerEvent& event : recordedEvents(QStringLiteral("recorded-ok")))
            if (event.type != TrainerEventType::Step || event.integer("step") <= 2)
                first.append(event);
        metrics.addEvents(first);
        charts.refresh();
        QVERIFY(charts.lossSeries(0) && charts.lossSeries(0)->count() == 2);
        for (const auto which : {RunCharts::LossChart, RunCharts::ThroughputChart, RunCharts::StepTimeChart})
            QVERIFY2(wholeTicks(which), qPrintable(QString::number(int(which))));
    }

    // A run of 220 steps ended on a step axis of 0 to 400 (nice numbers round 201 up): half of each chart stayed
    // empty. The axis ends at the run's last step instead, ticked in whole steps from 0; a run that does not say
    // its length keeps the nice numbers.
    void stepAxesEndAtTheRunsLastStep() {
        RunMetrics metrics;
        RunCharts charts(&metrics);
        charts.setTickDriven(true);
        charts.resize(1200, 700);
        charts.show();
        QVERIFY(QTest::qWaitForWindowExposed(&charts));
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

        // No start event: the same steps on the nice numbers' axis, past the last step.
        RunMetrics unsaid;
        RunCharts plain(&unsaid);
        plain.setTickDriven(true);
        plain.resize(1200, 700);
        plain.show();
        QVERIFY(QTest::qWaitForWindowExposed(&plain));
        QVector<TrainerEvent> events;
        for (qint64 step = 1; step <= 220; ++step)
            events.append(rankscope::test::syntheticStep(0, 1000.0 + double(step), step, 1.0 / double(step)));
        unsaid.addEvents(events);
        plain.tick();
        const auto* x = qobject_cast<QValueAxis*>(plain.chart(RunCharts::LossChart)->axes(Qt::Horizontal).first());
        QVERIFY2(x->max() > 220.0 && x->tickType() == QValueAxis::TicksFixed, qPrintable(QString::number(x->max())));
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
            QVERIFY2(count <= 2 * width + 4 && count >= width / 2,
                     qPrintable(QStringLiteral("%1 points for %2 px").arg(count).arg(width)));
        }
    }

    // Past the point budget a tick draws the loss chart or the other charts, in turn; under it, everything.
    void manyRanksTakeTurnsFewDoNot() {
        RunMetrics metrics;
        metrics.setWindow(20000);
        RunCharts charts(&metrics);
        charts.setTickDriven(true); // the test calls tick() itself
        charts.resize(1200, 700);
        charts.show();
        QVERIFY(QTest::qWaitForWindowExposed(&charts));
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
        charts.tick();
        QCOMPARE(charts.replaceCount(), replaced);
        QVERIFY(charts.nextTickDrawsLoss());
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
