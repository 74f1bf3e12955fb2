// SPDX-License-Identifier: MIT
// RunView: batches queued and applied on the tick, the progress line, focus from the grid to the charts, and
// offscreen renderings of a recorded 2-rank run and a synthetic 64-rank run (saved to the temp directory).
#include "rankgrid.h"
#include "rankgridmodel.h"
#include "recording.h"
#include "runcharts.h"
#include "runview.h"

#include "core/runstore.h"

#include <QChart>
#include <QDir>
#include <QLabel>
#include <QLineSeries>
#include <QMouseEvent>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QtTest>

#include <cmath>

using namespace rankscope;
using namespace rankscope::gui;
using rankscope::test::recordedEvents;

namespace {

// A stored run in `state`, as the engine records it.
RunRecord stored(const QString& state) {
    RunRecord run;
    run.state = state;
    return run;
}

TrainerEvent decoded(const QJsonObject& object) {
    const TrainerEventResult r = decodeTrainerEvent(object);
    if (!r.ok())
        qFatal("bad synthetic event: %s", qPrintable(r.error));
    return *r.event;
}

TrainerEvent heartbeat(int rank, double time, int step) {
    return decoded({{"v", "1.0"},
                    {"type", "heartbeat"},
                    {"rank", rank},
                    {"time", time},
                    {"phase", "forward"},
                    {"step", step},
                    {"collective_started", step * 3},
                    {"collective_finished", step * 3}});
}

// 64 ranks on 8 nodes, 2000 steps planned, 900 done; rank 13 stops at step 600 and keeps beating, rank 51
// fails at step 700, rank 40 finished early (exit 0).
QVector<TrainerEvent> syntheticRun(int ranks, int steps) {
    QVector<TrainerEvent> events;
    QRandomGenerator random(42);
    for (int rank = 0; rank < ranks; ++rank)
        events.append(test::syntheticStart(rank, ranks, 1000.0, QStringLiteral("gpu-node-%1").arg(rank / 8), 2000));
    for (int step = 1; step <= steps; ++step) {
        const double time = 1000.0 + step * 0.25;
        for (int rank = 0; rank < ranks; ++rank) {
            if ((rank == 13 && step > 600) || (rank == 51 && step > 700))
                continue;
            const double loss = 0.25 + 2.1 * std::exp(-step / (180.0 + rank * 2.0)) + random.bounded(0.08);
            TrainerEvent e =
                rankscope::test::syntheticStep(rank, time, step, loss, 900.0 + rank * 3 + random.bounded(60.0));
            e.fields.insert(QStringLiteral("epoch"), step / 400 + 1);
            events.append(decoded(e.fields));
        }
        if (step % 4 == 0)
            events.append(heartbeat(13, time, 600));
    }
    events.append(decoded({{"v", "1.0"},
                           {"type", "error"},
                           {"rank", 51},
                           {"time", 1180.0},
                           {"kind", "collective"},
                           {"message", "NCCL watchdog timeout"},
                           {"fatal", true}}));
    return events;
}

QString savePath(const QString& name) {
    return QDir(QDir::tempPath()).filePath(name);
}

// A run view on the screen, its clock at the last event of a recorded run.
bool showAtTheEndOf(RunView& view, const QVector<TrainerEvent>& events) {
    view.setClock([last = events.constLast().time] { return last; });
    view.resize(1400, 900);
    view.show();
    return QTest::qWaitForWindowExposed(&view);
}

} // namespace

class TestRunView final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void recordedRunOnTheTick() {
        RunView view;
        const QVector<TrainerEvent> events = recordedEvents(QStringLiteral("recorded-ok"));
        QVERIFY(showAtTheEndOf(view, events));
        for (const auto& batch : rankscope::test::inBatches(events, 5))
            view.addEvents(batch);
        QCOMPARE(view.gridModel()->rowCount(), 0); // queued until the tick
        QTRY_COMPARE_WITH_TIMEOUT(view.gridModel()->rowCount(), 2, 1000);
        QTRY_VERIFY(view.charts()->lossSeries(1) && view.charts()->lossSeries(1)->count() == 12);
        QCOMPARE(view.progressText(), QStringLiteral("epoch 1/1 · step 12/12 · %1 it/s · done")
                                          .arg(*view.metrics()->progress().stepsPerSecond, 0, 'f', 2));
        const QModelIndex state = view.gridModel()->index(0, RankGridModel::StateColumn);
        QCOMPARE(state.data().toString(), QStringLiteral("finished"));
        // The header counts the ranks by state; the tick alone moves the grid's clock.
        const auto* counts = view.findChild<QLabel*>(QStringLiteral("stateCounts"));
        QVERIFY(counts);
        QVERIFY2(counts->text().endsWith(QStringLiteral("</span> 2 finished")), qPrintable(counts->text()));
        QTRY_COMPARE(view.gridModel()->now(), events.constLast().time);

        // A click on rank 1's tile focuses every view on it.
        QSignalSpy selected(&view, &RunView::rankSelected);
        QTest::mouseClick(view.grid()->viewport(), Qt::LeftButton, {}, view.grid()->tileRect(1).center());
        QCOMPARE(selected.count(), 1);
        QCOMPARE(view.focusedRank(), 1);
        QCOMPARE(view.charts()->focusedRank(), 1);
        QCOMPARE(view.grid()->focusedRank(), 1);
        view.flush();
        QTest::qWait(50); // let the layouts catch up with the new label texts before the picture
        QVERIFY(view.grab().save(savePath(QStringLiteral("runview.png"))));

        view.clear();
        QCOMPARE(view.gridModel()->rowCount(), 0);
        QCOMPARE(view.charts()->lossSeries(0), nullptr);
        QCOMPARE(view.focusedRank(), -1);
    }

    // The charts and the grid point at the same rank: the pointer on a rank's line outlines its tile (dashed), a
    // click on the line focuses every view on the rank as a click on its tile does, and a second click lets go; the
    // pointer on a tile highlights the rank's lines.
    void aRanksLineAndItsTileGoTogether() {
        RunView view;
        const QVector<TrainerEvent> events = recordedEvents(QStringLiteral("recorded-ok"));
        QVERIFY(showAtTheEndOf(view, events));
        view.addEvents(events);
        view.flush();
        QLineSeries* line = view.charts()->throughputSeries(1);
        QVERIFY(line);
        const QRect tile = view.grid()->tileRect(1);
        const QImage plain = view.grid()->viewport()->grab(tile).toImage();
        const QImage other = view.grid()->viewport()->grab(view.grid()->tileRect(0)).toImage();

        emit line->hovered(QPointF(5, 100.0), true);
        QCOMPARE(view.grid()->hoveredRank(), 1);
        const QImage outlined = view.grid()->viewport()->grab(tile).toImage();
        QVERIFY(outlined != plain);
        QCOMPARE(view.grid()->viewport()->grab(view.grid()->tileRect(0)).toImage(), other);
        QVERIFY(view.grid()->grab().save(savePath(QStringLiteral("rankgrid-hovered.png"))));
        emit line->hovered(QPointF(5, 100.0), false);
        QCOMPARE(view.grid()->hoveredRank(), -1);
        QCOMPARE(view.grid()->viewport()->grab(tile).toImage(), plain);

        QSignalSpy selected(&view, &RunView::rankSelected);
        emit view.charts()->lossSeries(1)->clicked(QPointF(5, 1.0));
        QCOMPARE(selected.count(), 1);
        QCOMPARE(selected.last().at(0).toInt(), 1);
        QCOMPARE(view.focusedRank(), 1);
        QCOMPARE(view.charts()->focusedRank(), 1);
        QCOMPARE(view.grid()->focusedRank(), 1);
        // The focused tile's outline is its own, not the hover's.
        const QImage focused = view.grid()->viewport()->grab(tile).toImage();
        QVERIFY(focused != plain && focused != outlined);
        emit line->hovered(QPointF(5, 100.0), true);
        QCOMPARE(view.grid()->viewport()->grab(tile).toImage(), focused);
        emit line->clicked(QPointF(5, 100.0));
        QCOMPARE(view.focusedRank(), -1);
        QCOMPARE(view.charts()->focusedRank(), -1);

        // The other way: the pointer on a tile highlights its rank's lines; off the tiles, none.
        const auto pointAt = [&view](QPoint position) {
            QMouseEvent event(QEvent::MouseMove, position, view.grid()->viewport()->mapToGlobal(position), Qt::NoButton,
                              Qt::NoButton, Qt::NoModifier);
            QCoreApplication::sendEvent(view.grid()->viewport(), &event);
        };
        emit line->hovered(QPointF(5, 100.0), false);
        QCOMPARE(view.charts()->highlightedRank(), -1);
        const double normal = view.charts()->lossSeries(0)->pen().widthF();
        pointAt(view.grid()->tileRect(1).center());
        QCOMPARE(view.charts()->highlightedRank(), 1);
        QVERIFY(view.charts()->lossSeries(1)->pen().widthF() > normal);
        pointAt(view.grid()->tileRect(0).center());
        QCOMPARE(view.charts()->highlightedRank(), 0);
        QVERIFY(view.charts()->lossSeries(0)->pen().widthF() > normal);
        QCOMPARE(view.charts()->lossSeries(1)->pen().color().alpha(), 50);
        pointAt(view.grid()->tileRect(1).bottomLeft() + QPoint(0, 40)); // below the last tile
        QCOMPARE(view.charts()->highlightedRank(), -1);
        QCOMPARE(view.charts()->lossSeries(0)->pen().widthF(), normal);
        pointAt(view.grid()->tileRect(1).center());
        QEvent leave(QEvent::Leave);
        QCoreApplication::sendEvent(view.grid(), &leave);
        QCOMPARE(view.charts()->highlightedRank(), -1);
        QCOMPARE(view.grid()->hoveredRank(), -1); // a tile pointed at is not outlined: the pointer is on it

        // A new run: no tile stays outlined for a line that is gone.
        view.clear();
        QCOMPARE(view.grid()->hoveredRank(), -1);
    }

    // Sixteen long ranks: the charts take turns on the half ticks, and the ticks alone still draw every batch.
    void manyRanksOnTheHalfTicks() {
        RunView view;
        view.metrics()->setWindow(20000);
        view.resize(1400, 900);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QCOMPARE(view.tickInterval(), 50);
        const auto queue = [&view](qint64 from, qint64 to) {
            QVector<TrainerEvent> events;
            for (int rank = 0; rank < 16; ++rank)
                for (qint64 step = from; step <= to; ++step)
                    events.append(rankscope::test::syntheticStep(rank, double(step), step, 2.0 / double(step)));
            view.addEvents(events);
        };
        const auto drawnTo = [&view](qint64 step) {
            RunCharts* charts = view.charts();
            for (int rank = 0; rank < 16; ++rank) {
                const QLineSeries* loss = charts->lossSeries(rank);
                const QLineSeries* images = charts->throughputSeries(rank);
                if (!loss || !images || loss->count() == 0 || images->count() == 0 ||
                    loss->at(loss->count() - 1).x() != double(step) || images->at(images->count() - 1).x() != double(step))
                    return false;
            }
            return true;
        };
        queue(1, 3000);
        QTRY_VERIFY_WITH_TIMEOUT(drawnTo(3000), 3000);
        queue(3001, 3050);
        QTRY_VERIFY_WITH_TIMEOUT(drawnTo(3050), 3000);
        QVERIFY(view.charts()->ticksTakeTurns());
        QCOMPARE(view.gridModel()->rowCount(), 16);
    }

    void exitsReachTheGrid() {
        RunView view;
        view.addEvents(recordedEvents(QStringLiteral("recorded-hang")));
        view.rankExited(1, QStringLiteral("node-a"), 128 + 9);
        view.flush();
        const QModelIndex state = view.gridModel()->index(view.gridModel()->rowOfRank(1), RankGridModel::StateColumn);
        QCOMPARE(state.data().toString(), QStringLiteral("failed"));
        QCOMPARE(state.data(Qt::ToolTipRole).toString(), describeExitStatus(137));
        QVERIFY(view.metrics()->rank(1)->ended); // the means and the progress stop waiting for it
    }

    // The tick: 10 to 100 ms, drawn on its halves.
    // The progress line says how the run ended once its engine has judged it, even where the events leave ranks
    // running (a lost run: no end event, no exit); before that, and after clear(), what the events say.
    void theProgressLineSaysHowTheRunEnded() {
        RunView view;
        const QVector<TrainerEvent> failed = recordedEvents(QStringLiteral("recorded-fail"));
        QVERIFY(showAtTheEndOf(view, failed));
        view.addEvents(failed);
        view.flush();
        QVERIFY2(view.progressText().endsWith(QStringLiteral(" · ended")), qPrintable(view.progressText()));
        view.setOutcome(stored(QStringLiteral("failed")));
        QVERIFY2(view.progressText().endsWith(QStringLiteral(" · failed")), qPrintable(view.progressText()));
        view.setOutcome(stored(QStringLiteral("running")));
        QVERIFY2(view.progressText().endsWith(QStringLiteral(" · ended")), qPrintable(view.progressText()));
        view.setOutcome(stored(QStringLiteral("stopped")));
        QVERIFY2(view.progressText().endsWith(QStringLiteral(" · stopped")), qPrintable(view.progressText()));
        view.clear();
        QCOMPARE(view.progressText(), QStringLiteral("waiting for the first event"));

        view.addEvents(rankscope::test::cutAfterStep(recordedEvents(QStringLiteral("recorded-ok")), 3));
        view.flush();
        // Running, as far as its events go: neither ended nor the outcome of the run shown before clear().
        QVERIFY2(!view.progressText().endsWith(QStringLiteral(" · ended")) &&
                     !view.progressText().endsWith(QStringLiteral(" · stopped")),
                 qPrintable(view.progressText()));
        view.setOutcome(stored(QStringLiteral("lost")));
        QVERIFY2(view.progressText().contains(QStringLiteral("step 3/12 · ")) &&
                     view.progressText().endsWith(QStringLiteral(" · lost")),
                 qPrintable(view.progressText()));
        view.setOutcome(stored(QStringLiteral("finished")));
        QVERIFY2(view.progressText().endsWith(QStringLiteral(" · done")), qPrintable(view.progressText()));
    }

    void tickInterval() {
        RunView view;
        view.setTickInterval(60);
        QCOMPARE(view.tickInterval(), 60);
        view.setTickInterval(500);
        QCOMPARE(view.tickInterval(), 100);
        view.setTickInterval(4);
        QCOMPARE(view.tickInterval(), 10);
    }

    // What was queued for the last run is not applied to the next.
    void clearDropsWhatIsQueued() {
        RunView view;
        view.addEvents(recordedEvents(QStringLiteral("recorded-ok")));
        view.rankExited(1, QStringLiteral("node-a"), 0);
        view.clear();
        view.flush();
        QCOMPARE(view.gridModel()->rowCount(), 0);
        QVERIFY(view.metrics()->ranks().isEmpty());
        QCOMPARE(view.progressText(), QStringLiteral("waiting for the first event"));
    }

    // Ranks numbered apart (a job's ranks 3 and 7 shown alone): a click on a tile, or the pointer on it, names its
    // rank, not its place.
    void aTileNamesItsRank() {
        RunView view;
        view.resize(1400, 900);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.addEvents(
            {rankscope::test::syntheticStep(3, 100.0, 1, 1.0), rankscope::test::syntheticStep(7, 100.0, 1, 1.0)});
        view.flush();
        QSignalSpy selected(&view, &RunView::rankSelected);
        QTest::mouseClick(view.grid()->viewport(), Qt::LeftButton, {}, view.grid()->tileRect(7).center());
        QCOMPARE(selected.count(), 1);
        QCOMPARE(selected.last().at(0).toInt(), 7);
        QCOMPARE(view.focusedRank(), 7);
        // Pointed at, the tile names its rank too.
        const QPoint tile3 = view.grid()->tileRect(3).center();
        QMouseEvent move(QEvent::MouseMove, tile3, view.grid()->viewport()->mapToGlobal(tile3), Qt::NoButton,
                         Qt::NoButton, Qt::NoModifier);
        QCoreApplication::sendEvent(view.grid()->viewport(), &move);
        QCOMPARE(view.charts()->highlightedRank(), 3);
    }

    // Tiles are at most twice as wide as high, and never lower than 40 px.
    void tilesKeepTheirShape_data() {
        QTest::addColumn<int>("width");
        QTest::addColumn<QSize>("tile");
        QTest::newRow("wide") << 400 << QSize(230, 78);
        QTest::newRow("narrow") << 150 << QSize(126, 63);
        QTest::newRow("narrowest") << 98 << QSize(74, 40);
    }
    void tilesKeepTheirShape() {
        QFETCH(int, width);
        QFETCH(QSize, tile);
        RankGridModel model;
        QVector<TrainerEvent> events;
        for (int rank = 0; rank < 8; ++rank)
            events.append(rankscope::test::syntheticStep(rank, 100.0, 1, 1.0));
        model.addEvents(events);
        RankGrid grid(&model);
        grid.resize(width, 900);
        grid.show();
        QVERIFY(QTest::qWaitForWindowExposed(&grid));
        QTRY_COMPARE(grid.tileSize(), tile);
    }

    // A run whose ranks all ended before their first event (a trainer that could not start, a crash at import)
    // says so instead of waiting for one; while one rank still runs, it waits.
    void ranksThatEndedBeforeTheirFirstEventAreNotWaitedFor() {
        RunView view;
        view.setRankHosts({{0, QStringLiteral("node-a")}, {1, QStringLiteral("node-a")}});
        view.rankExited(0, QStringLiteral("node-a"), 128 + 6);
        view.flush();
        QCOMPARE(view.progressText(), QStringLiteral("waiting for the first event"));
        view.rankExited(1, QStringLiteral("node-a"), 128 + 15, true);
        view.flush();
        QCOMPARE(view.progressText(),
                 QStringLiteral("every rank ended before its first event (the Logs tab says why)"));

        // Nothing planned, nothing seen: waiting, not "every rank ended".
        RunView fresh;
        fresh.flush();
        QCOMPARE(fresh.progressText(), QStringLiteral("waiting for the first event"));
        // A rank known from a finding only (a watchdog's timeout in its log before any event) has not ended.
        RunView named;
        named.setRankHosts({{0, QStringLiteral("node-a")}, {1, QStringLiteral("node-b")}});
        named.rankExited(0, QStringLiteral("node-a"), 128 + 6);
        named.addDiagnoses({{DiagnosisKind::Hang,
                             QStringLiteral("hang:watchdog"),
                             {1},
                             QStringLiteral("node-b"),
                             100.0,
                             QStringLiteral("rank 1 timed out in ALLREDUCE"),
                             false,
                             0}});
        named.flush();
        QCOMPARE(named.progressText(), QStringLiteral("waiting for the first event"));
    }

    void sixtyFourRanks() {
        RunView view;
        view.setClock([] { return 1000.0 + 900 * 0.25 + 0.1; });
        view.resize(1400, 900);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.addEvents(syntheticRun(64, 900));
        view.rankExited(40, QStringLiteral("gpu-node-5"), 0);
        // The engine's findings decide hung and slow: rank 13 stopped at step 600, rank 7 computes slowly.
        view.addDiagnoses({{DiagnosisKind::Hang, QStringLiteral("hang:1201"), {13, 0, 1, 2}, QStringLiteral("gpu-node-1"),
                            1160.0, QStringLiteral("rank 13 on gpu-node-1 stuck at step 600 in phase forward"), false, 1},
                           {DiagnosisKind::Straggler, QStringLiteral("straggler:7"), {7}, QStringLiteral("gpu-node-0"),
                            1200.0, QStringLiteral("rank 7 on gpu-node-0 computes 1.4x the median"), false}});
        view.flush();
        view.flush(); // the second draw at the laid-out plot width
        QCOMPARE(view.gridModel()->rowCount(), 64);
        QCOMPARE(view.charts()->chart(RunCharts::LossChart)->series().size(), 64);
        const auto stateOf = [&](int rank) {
            return view.gridModel()
                ->index(view.gridModel()->rowOfRank(rank), RankGridModel::StateColumn)
                .data()
                .toString();
        };
        QCOMPARE(stateOf(13), QStringLiteral("hung"));
        QCOMPARE(stateOf(51), QStringLiteral("failed"));
        QCOMPARE(stateOf(40), QStringLiteral("finished"));
        QCOMPARE(stateOf(7), QStringLiteral("slow"));
        QCOMPARE(stateOf(0), QStringLiteral("running")); // waits for rank 13, which is not its fault
        QCOMPARE(view.gridModel()->index(view.gridModel()->rowOfRank(0), RankGridModel::StateColumn)
                     .data(Qt::ToolTipRole)
                     .toString(),
                 QStringLiteral("rank 13 on gpu-node-1 stuck at step 600 in phase forward"));
        QVERIFY(view.progressText().startsWith(QStringLiteral("epoch 3/5 · step 900/2000 · 4.00 it/s · ~")));
        for (int rank = 0; rank < 64; ++rank)
            QVERIFY(view.grid()->viewport()->rect().contains(view.grid()->tileRect(rank)));
        view.focusRank(13);
        view.flush();
        QTest::qWait(50);
        QVERIFY(view.grab().save(savePath(QStringLiteral("runview-64.png"))));
    }
};

QTEST_MAIN(TestRunView)
#include "tst_runview.moc"
