// SPDX-License-Identifier: MIT
// RunMetrics fed with recorded runs: the series hold what the trainer reported, progress and ETA are sane,
// the CSV export writes it all.
#include "recording.h"
#include "runmetrics.h"

#include <rankscope/event_schema.h>

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace rankscope;
using namespace rankscope::gui;
using rankscope::test::inBatches;
using rankscope::test::recordedEvents;

class TestRunMetrics final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void seriesMatchTheRecording() {
        const QVector<TrainerEvent> events = recordedEvents(QStringLiteral("recorded-ok"));
        RunMetrics metrics;
        QSignalSpy changed(&metrics, &RunMetrics::changed);
        const auto batches = inBatches(events, 7);
        for (const auto& batch : batches)
            metrics.addEvents(batch);
        QCOMPARE(changed.count(), batches.size()); // once per batch, not per event

        QCOMPARE(metrics.ranks(), (QList<int>{0, 1}));
        for (int rank : {0, 1}) {
            const RunMetrics::RankSeries* series = metrics.rank(rank);
            QVERIFY(series);
            QCOMPARE(series->loss.size(), 12);
            QCOMPARE(series->imagesPerSec.size(), 12);
            QCOMPARE(series->rows.size(), size_t(12));
            int i = 0;
            for (const TrainerEvent& e : events) {
                if (e.rank != rank || e.type != TrainerEventType::Step)
                    continue;
                const QPointF p = series->loss.points()[i];
                QCOMPARE(p.x(), double(e.integer(schema::step::kStep)));
                QCOMPARE(p.y(), double(float(e.number(schema::step::kLoss))));
                QCOMPARE(series->imagesPerSec.points()[i].y(), double(float(e.number(schema::step::kImagesPerSec))));
                QCOMPARE(series->partsMs[int(StepPart::CommWait)].points()[i].y(),
                         double(float(e.number(schema::step::kCommWaitMs))));
                ++i;
            }
            QCOMPARE(i, 12);
        }
        // Both ranks ended: every step's mean is in.
        QCOMPARE(metrics.meanPartMs(StepPart::Forward).size(), 12);
    }

    void progressAndEta() {
        const QVector<TrainerEvent> events = recordedEvents(QStringLiteral("recorded-ok"));
        RunMetrics metrics;
        // Up to rank 0's step 6.
        const auto sixth = std::find_if(events.begin(), events.end(), [](const TrainerEvent& e) {
            return e.rank == 0 && e.type == TrainerEventType::Step && e.integer(schema::step::kStep) == 6;
        });
        QVERIFY(sixth != events.end());
        metrics.addEvents(QVector<TrainerEvent>(events.begin(), sixth + 1));
        RunProgress p = metrics.progress();
        QCOMPARE(p.step, 6);
        QCOMPARE(p.totalSteps, 12);
        QCOMPARE(metrics.totalSteps(), 12); // what the charts' x axis spans
        QCOMPARE(p.epoch, 1);
        QCOMPARE(p.epochs, 1);
        QVERIFY(!p.done);
        QVERIFY(p.stepsPerSecond.has_value());
        // 12 steps took about 7 s of wall time in this recording: the rate is a few steps a second.
        QVERIFY2(*p.stepsPerSecond > 0.5 && *p.stepsPerSecond < 50.0, qPrintable(QString::number(*p.stepsPerSecond)));
        QVERIFY(p.secondsLeft.has_value());
        QCOMPARE(*p.secondsLeft, 6.0 / *p.stepsPerSecond);
        QVERIFY(formatProgress(p).startsWith(QStringLiteral("epoch 1/1 · step 6/12 · ")));
        QVERIFY(formatProgress(p).endsWith(QStringLiteral(" left")));
        // No step for a minute (a hang): measured up to now, the rate falls and the time left grows.
        const RunProgress still = metrics.progress(sixth->time + 60.0);
        QVERIFY(still.stepsPerSecond.has_value());
        QVERIFY2(*still.stepsPerSecond < *p.stepsPerSecond / 5, qPrintable(QString::number(*still.stepsPerSecond)));
        QVERIFY(*still.secondsLeft > 5 * *p.secondsLeft);
        QCOMPARE(metrics.progress(sixth->time - 1.0).stepsPerSecond, p.stepsPerSecond); // an older now changes nothing

        metrics.addEvents(QVector<TrainerEvent>(sixth + 1, events.end()));
        p = metrics.progress();
        QCOMPARE(p.step, 12);
        QCOMPARE(*p.secondsLeft, 0.0);
        QVERIFY(p.done);
        QVERIFY(formatProgress(p).endsWith(QStringLiteral("done")));
    }

    // A run whose ranks all ended, not every one of them finished: its progress line does not say "done".
    void failedOrStoppedRunHasEnded() {
        RunMetrics failed;
        failed.addEvents(recordedEvents(QStringLiteral("recorded-fail")));
        QVERIFY(failed.progress().done);
        QVERIFY(!failed.progress().finishedOk);
        QVERIFY2(formatProgress(failed.progress()).endsWith(QStringLiteral(" · ended")),
                 qPrintable(formatProgress(failed.progress())));
        // Stopped: the ranks exit (SIGTERM) after their last step event, with no end event.
        RunMetrics stopped;
        stopped.addEvents(rankscope::test::cutAfterStep(recordedEvents(QStringLiteral("recorded-ok")), 3));
        QVERIFY(!stopped.progress().done);
        stopped.rankExited(0, 15);
        stopped.rankExited(1, 15);
        QVERIFY(stopped.progress().done);
        QVERIFY2(formatProgress(stopped.progress()).endsWith(QStringLiteral(" · ended")),
                 qPrintable(formatProgress(stopped.progress())));
    }

    void formatsProgressLine() {
        RunProgress p;
        p.epoch = 2;
        p.epochs = 5;
        p.step = 340;
        p.totalSteps = 1000;
        p.stepsPerSecond = 12.3;
        p.secondsLeft = 53.7;
        QCOMPARE(formatProgress(p), QStringLiteral("epoch 2/5 · step 340/1000 · 12.3 it/s · ~54 s left"));
        p.secondsLeft = 3 * 3600 + 125;
        QCOMPARE(formatProgress(p), QStringLiteral("epoch 2/5 · step 340/1000 · 12.3 it/s · ~3 h 2 min left"));
        // Once the engine judged the run, its outcome, whatever the events still say.
        p.outcome = QStringLiteral("lost");
        QCOMPARE(formatProgress(p), QStringLiteral("epoch 2/5 · step 340/1000 · 12.3 it/s · lost"));
        p.done = true;
        p.outcome = QStringLiteral("failed");
        QCOMPARE(formatProgress(p), QStringLiteral("epoch 2/5 · step 340/1000 · 12.3 it/s · failed"));
        p.outcome = QStringLiteral("finished");
        QCOMPARE(formatProgress(p), QStringLiteral("epoch 2/5 · step 340/1000 · 12.3 it/s · done"));
        p.outcome.clear();
        QCOMPARE(formatProgress(p), QStringLiteral("epoch 2/5 · step 340/1000 · 12.3 it/s · ended"));
    }

    void validationAccuracyPerEpoch() {
        RunMetrics metrics;
        metrics.addEvents(recordedEvents(QStringLiteral("clean"), QStringLiteral(".events")));
        // Both ranks report the same all-reduced value: one point per epoch.
        QCOMPARE(metrics.validationAccuracy(), (QVector<QPointF>{{1, 0.5625}, {2, 0.75}}));
        QCOMPARE(metrics.rank(0)->loss.size(), 4);
        QCOMPARE(metrics.progress().epochs, 2);
    }

    // The mean of each part over the ranks, per step: a step enters once every rank still running has passed it,
    // and a rank that ended holds none back.
    void meanPartsWaitForEveryRunningRank() {
        const auto step = [](int rank, qint64 number, double forwardMs) {
            return rankscope::test::syntheticStep(rank, 100.0 + double(number), number, 1.0, 100.0, forwardMs);
        };
        RunMetrics metrics;
        metrics.addEvents({step(0, 1, 2.0), step(0, 2, 2.0), step(0, 3, 2.0), step(1, 1, 4.0), step(1, 2, 6.0)});
        QCOMPARE(metrics.meanPartMs(StepPart::Forward).points(), (QVector<QPointF>{{1, 3.0}, {2, 4.0}}));
        metrics.rankExited(1, 128 + 9);
        QCOMPARE(metrics.meanPartMs(StepPart::Forward).points(), (QVector<QPointF>{{1, 3.0}, {2, 4.0}, {3, 2.0}}));
    }

    // A rank heard from late (its node's stream started seconds after the others'): the means of the steps it has
    // not reported wait for it once the start events say how many ranks there are; without them, its steps whose
    // mean was drawn already stay out of it, and the mean's line never goes back.
    void meanPartsOfARankHeardFromLate() {
        const auto step = [](int rank, qint64 number, double forwardMs) {
            return rankscope::test::syntheticStep(rank, 100.0 + double(number), number, 1.0, 100.0, forwardMs);
        };
        RunMetrics metrics;
        metrics.addEvents({rankscope::test::syntheticStart(0, 2, 100.0, QStringLiteral("node-a"), 10), step(0, 1, 2.0),
                           step(0, 2, 2.0), step(0, 3, 2.0)});
        QVERIFY(metrics.meanPartMs(StepPart::Forward).isEmpty());
        metrics.addEvents({rankscope::test::syntheticStart(1, 2, 100.0, QStringLiteral("node-b"), 10), step(1, 1, 4.0),
                           step(1, 2, 6.0)});
        QCOMPARE(metrics.meanPartMs(StepPart::Forward).points(), (QVector<QPointF>{{1, 3.0}, {2, 4.0}}));

        RunMetrics unsaid;
        unsaid.addEvents({step(0, 1, 2.0), step(0, 2, 2.0)});
        QCOMPARE(unsaid.meanPartMs(StepPart::Forward).points(), (QVector<QPointF>{{1, 2.0}, {2, 2.0}}));
        unsaid.addEvents({step(1, 1, 4.0), step(1, 2, 4.0), step(1, 3, 4.0)});
        unsaid.addEvents({step(0, 3, 2.0)});
        QCOMPARE(unsaid.meanPartMs(StepPart::Forward).points(), (QVector<QPointF>{{1, 2.0}, {2, 2.0}, {3, 3.0}}));
        // A new run: the last one's world and steps are forgotten.
        unsaid.clear();
        unsaid.addEvents({step(0, 1, 8.0)});
        QCOMPARE(unsaid.meanPartMs(StepPart::Forward).points(), (QVector<QPointF>{{1, 8.0}}));
        metrics.clear();
        metrics.addEvents({step(0, 1, 8.0)});
        QCOMPARE(metrics.meanPartMs(StepPart::Forward).points(), (QVector<QPointF>{{1, 8.0}}));
    }

    // The rate is the last kRateWindowSeconds' (20 s), not the whole run's: a run that sped up says so. clear()
    // forgets it with the rest, for the next run.
    void theRateIsTheRecentOneUntilCleared() {
        RunMetrics metrics;
        QVector<TrainerEvent> events;
        double time = 1000.0;
        for (int number = 1; number <= 10; ++number) // a step every 10 s
            events.append(rankscope::test::syntheticStep(0, time += 10.0, number, 1.0));
        for (int number = 11; number <= 60; ++number) // then ten a second
            events.append(rankscope::test::syntheticStep(0, time += 0.1, number, 1.0));
        metrics.addEvents(events);
        // From step 9 (1090 s, the oldest in the window) to step 60 (1105 s): 3.4 steps a second; the whole run's
        // would be 0.6.
        QVERIFY(metrics.progress().stepsPerSecond.has_value());
        QVERIFY2(std::abs(*metrics.progress().stepsPerSecond - 51.0 / 15.0) < 0.01,
                 qPrintable(QString::number(*metrics.progress().stepsPerSecond)));

        metrics.clear();
        QVERIFY(metrics.meanPartMs(StepPart::Forward).isEmpty());
        QVERIFY(!metrics.progress().stepsPerSecond.has_value());
        metrics.addEvents(
            {rankscope::test::syntheticStep(0, 5.0, 1, 1.0), rankscope::test::syntheticStep(0, 7.0, 2, 1.0)});
        QCOMPARE(*metrics.progress().stepsPerSecond, 0.5);
    }

    void windowBoundsMemory() {
        RunMetrics metrics;
        metrics.setWindow(100);
        QVector<TrainerEvent> events;
        for (int step = 1; step <= 5000; ++step)
            events.append(rankscope::test::syntheticStep(0, 1000.0 + step * 0.01, step, 1.0 / step));
        metrics.addEvents(events);
        const RunMetrics::RankSeries* series = metrics.rank(0);
        QVERIFY(series->loss.size() <= 100);
        QCOMPARE(series->loss.appendedCount(), 5000);
        QCOMPARE(series->rows.size(), size_t(100));
        QCOMPARE(series->rows.front().step, 4901);
        QCOMPARE(series->loss.points().constFirst().x(), 1.0); // the whole run stays visible, coarser
    }

    void csvExport() {
        RunMetrics metrics;
        const QVector<TrainerEvent> events = recordedEvents(QStringLiteral("recorded-ok"));
        metrics.addEvents(events);
        const QStringList lines = metrics.toCsv().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 1 + 24);
        QCOMPARE(lines[0], QStringLiteral("rank,host,epoch,step,time,loss,images_per_sec,step_ms,data_ms,forward_ms,"
                                          "backward_ms,comm_wait_ms,optimizer_ms"));
        const auto firstStep = std::find_if(events.begin(), events.end(), [](const TrainerEvent& e) {
            return e.rank == 0 && e.type == TrainerEventType::Step;
        });
        const QStringList cells = lines[1].split(QLatin1Char(','));
        QCOMPARE(cells.size(), 13);
        QCOMPARE(cells[0], QStringLiteral("0"));
        QCOMPARE(cells[1], QStringLiteral("node-a"));
        QCOMPARE(cells[3], QStringLiteral("1"));
        QCOMPARE(cells[4].toDouble(), firstStep->time);
        QVERIFY(qAbs(cells[5].toDouble() - firstStep->number(schema::step::kLoss)) < 1e-6);
        QVERIFY(lines[13].startsWith(QStringLiteral("1,node-a,1,1,")));

        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("metrics.csv"));
        QString error;
        QVERIFY2(metrics.exportCsv(path, &error), qPrintable(error));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(file.readAll()), metrics.toCsv());
        QVERIFY(!metrics.exportCsv(dir.filePath(QStringLiteral("missing/dir/metrics.csv")), &error));
        QVERIFY(error.contains(QStringLiteral("missing/dir/metrics.csv")));
    }

    void nanLossIsKeptInCsvNotInChart() {
        RunMetrics metrics;
        metrics.addEvents({rankscope::test::syntheticStep(3, 10.0, 1, qQNaN())});
        QCOMPARE(metrics.rank(3)->loss.size(), 0);
        QVERIFY(metrics.toCsv().contains(QStringLiteral("3,,1,1,10.000,nan,")));
    }

    // What the engine delivers: core's parser output, [N/A] readings as NaN.
    void gpuReadingsNvidiaSmiDidNotReportAddNoPoint() {
        RunMetrics metrics;
        NvidiaSmiParser parser;
        QVector<GpuSample> samples = parser.feed("timestamp, index, utilization.gpu [%], power.draw [W]\n"
                                                 "2024/01/15 10:23:45.000, 0, 35 %, [N/A]\n"
                                                 "2024/01/15 10:23:46.000, 0, 40 %, 80.5 W\n");
        QCOMPARE(samples.size(), 2);
        for (GpuSample& sample : samples)
            sample.node = QStringLiteral("node-a");
        samples.append(GpuSample{QStringLiteral("node-a"), 0}); // no time: not placeable, dropped
        metrics.addGpuSamples(samples);
        QVERIFY(metrics.hasGpuSamples());
        const QString gpu = QStringLiteral("node-a/gpu0");
        const SeriesBuffer* utilization = metrics.gpuSeries(GpuMetric::Utilization).value(gpu);
        const SeriesBuffer* power = metrics.gpuSeries(GpuMetric::Power).value(gpu);
        QVERIFY(utilization && power);
        QCOMPARE(utilization->points(), (QVector<QPointF>{{0, 35}, {1, 40}}));
        QCOMPARE(power->points(), (QVector<QPointF>{{1, 80.5}}));
        QCOMPARE(metrics.gpuSeries(GpuMetric::Memory).value(gpu)->size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestRunMetrics)
#include "tst_runmetrics.moc"
