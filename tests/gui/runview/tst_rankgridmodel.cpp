// SPDX-License-Identifier: MIT
// RankGridModel under QAbstractItemModelTester, fed in batches from recorded runs, and the RankGrid tiles.
#include "rankgrid.h"
#include "rankgridmodel.h"
#include "recording.h"

#include "core/diagnostics.h"
#include "core/runstore.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QtTest>

using namespace rankscope;
using namespace rankscope::gui;
using rankscope::test::inBatches;
using rankscope::test::recordedEvents;

namespace {

QString cell(const RankGridModel& model, int rank, int column, int role = Qt::DisplayRole) {
    return model.index(model.rowOfRank(rank), column).data(role).toString();
}

// The recorded healthy run apart from its end events: the ranks still train on the first.
std::pair<QVector<TrainerEvent>, QVector<TrainerEvent>> recordedOkWithoutEnds() {
    std::pair<QVector<TrainerEvent>, QVector<TrainerEvent>> runningAndEnds;
    for (const TrainerEvent& event : recordedEvents(QStringLiteral("recorded-ok")))
        (event.type == TrainerEventType::End ? runningAndEnds.second : runningAndEnds.first).append(event);
    return runningAndEnds;
}

} // namespace

class TestRankGridModel final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void hangRecordingInBatches() {
        RankGridModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        const auto batches = inBatches(recordedEvents(QStringLiteral("recorded-hang")), 4);
        for (const auto& batch : batches)
            model.addEvents(batch);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(reset.count(), 0);
        QVERIFY(inserted.count() >= 1 && inserted.count() <= 2); // one insertion per batch that brought new ranks
        QCOMPARE(cell(model, 0, RankGridModel::StateColumn), QStringLiteral("failed"));
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn), QStringLiteral("running"));
        QCOMPARE(cell(model, 1, RankGridModel::HostColumn), QStringLiteral("node-a"));
        QCOMPARE(cell(model, 1, RankGridModel::StepColumn), QStringLiteral("2"));
        QCOMPARE(cell(model, 1, RankGridModel::LossColumn), QStringLiteral("2.2801"));
        QVERIFY(cell(model, 0, RankGridModel::StateColumn, Qt::ToolTipRole).startsWith(QStringLiteral("collective")));

        // Time alone changes no state: the grid's hung comes from the run's diagnosis, as the engine sends it.
        model.setNow(1795315908.183 + 31.0);
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn), QStringLiteral("running"));
        // Diagnosed batch by batch, as the engine does live: the hang is found while rank 0 still waits, and
        // stays standing after rank 0's collective times out, since rank 1 never moved.
        RunDiagnostics diagnostics;
        QVector<Diagnosis> found;
        for (const auto& batch : batches) {
            diagnostics.addEvents(batch);
            found += diagnostics.update(batch.constLast().time);
        }
        found += diagnostics.update(1795315908.183 + 31.0);
        QVERIFY(std::any_of(found.cbegin(), found.cend(), [](const Diagnosis& d) { return d.kind == DiagnosisKind::Hang; }));
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.addDiagnoses(found);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn), QStringLiteral("hung"));
        QVERIFY2(
            cell(model, 1, RankGridModel::StateColumn, Qt::ToolTipRole).contains(QStringLiteral("stuck at step 3")),
            qPrintable(cell(model, 1, RankGridModel::StateColumn, Qt::ToolTipRole)));
        const QModelIndex state = model.index(model.rowOfRank(1), RankGridModel::StateColumn);
        QCOMPARE(state.data(Qt::BackgroundRole).value<QColor>(), rankStateColor(RankLiveState::Hung));
        QCOMPARE(state.data(RankGridModel::SortRole).toInt(), int(RankLiveState::Hung));
        // Heartbeat age: raw time under SortRole, a sentence for display.
        const QModelIndex beat = model.index(model.rowOfRank(1), RankGridModel::HeartbeatColumn);
        QCOMPARE(beat.data(RankGridModel::SortRole).toDouble(), 1795315920.692);
        QCOMPARE(beat.data().toString(), QStringLiteral("18 s ago"));
        // A clock behind the rank's (another node's clock runs ahead): no negative age.
        model.setNow(1795315920.692 - 2.0);
        QCOMPARE(beat.data().toString(), QStringLiteral("0.0 s ago"));
        // Ended by the teardown, the hung rank stays hung, and says it no longer runs.
        model.rankExited(1, QStringLiteral("node-a"), 128 + 15, true);
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn), QStringLiteral("hung, stopped"));
        QCOMPARE(state.data(RankGridModel::SortRole).toInt(), int(RankLiveState::Hung));
    }

    // Every rank of a failed run reads failed; the one the root cause names reads "failed first".
    void rootCauseRankIsToldApart() {
        RankGridModel model;
        model.addEvents(recordedEvents(QStringLiteral("recorded-fail")));
        model.rankExited(0, QStringLiteral("node-a"), 1, false);
        model.rankExited(1, QStringLiteral("node-a"), 1, false);
        QCOMPARE(cell(model, 0, RankGridModel::StateColumn), QStringLiteral("failed"));
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn), QStringLiteral("failed"));
        Diagnosis cause;
        cause.kind = DiagnosisKind::RootCause;
        cause.key = QStringLiteral("root-cause");
        cause.ranks = {1};
        cause.message = QStringLiteral("rank 1 on node-a failed first: exit status 1 (injected: injected failure)");
        model.addDiagnoses({cause});
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn), QStringLiteral("failed first"));
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn, Qt::ToolTipRole), cause.message);
        QCOMPARE(cell(model, 0, RankGridModel::StateColumn), QStringLiteral("failed"));

        // Ranks that failed alike: no rank is told apart as first.
        cause.ranks = {1, 0};
        cause.culprits = 2;
        cause.message = QStringLiteral("every rank (0-1) failed alike, first rank 1 on node-a: exit status 1");
        model.addDiagnoses({cause});
        QCOMPARE(cell(model, 0, RankGridModel::StateColumn), QStringLiteral("failed alike"));
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn), QStringLiteral("failed alike"));
        QCOMPARE(cell(model, 0, RankGridModel::StateColumn, Qt::ToolTipRole), cause.message);
    }

    // A straggler reads "slow" while it runs, and "finished, slow" once it ran to the end, with the finding as its
    // tooltip; the others "finished".
    void finishedStragglerIsToldApart() {
        RankGridModel model;
        const auto [running, ends] = recordedOkWithoutEnds();
        model.addEvents(running);
        Diagnosis straggler;
        straggler.kind = DiagnosisKind::Straggler;
        straggler.key = QStringLiteral("straggler:1");
        straggler.ranks = {1};
        straggler.message = QStringLiteral("rank 1 on node-a is a straggler: it computes 2.10x as long as the median");
        model.addDiagnoses({straggler});
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn), QStringLiteral("slow")); // still running
        model.addEvents(ends);
        model.rankExited(0, QStringLiteral("node-a"), 0, false);
        model.rankExited(1, QStringLiteral("node-a"), 0, false);
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn), QStringLiteral("finished, slow"));
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn, Qt::ToolTipRole), straggler.message);
        QCOMPARE(cell(model, 0, RankGridModel::StateColumn), QStringLiteral("finished"));
    }

    // A replica found apart reads "diverged" in a colour of its own, the finding as its tooltip, after its end too;
    // and whether it still trains: "diverged, running", then "diverged, finished" (or "diverged, stopped").
    void divergedReplicaIsToldApart() {
        RankGridModel model;
        const auto [running, ends] = recordedOkWithoutEnds();
        QVERIFY(!ends.isEmpty());
        model.addEvents(running);
        Diagnosis divergence;
        divergence.kind = DiagnosisKind::Divergence;
        divergence.key = QStringLiteral("divergence:check");
        divergence.ranks = {1, 0};
        divergence.message = QStringLiteral("replicas diverged at step 5: rank 1 on node-a (checksum 1.5) differs from "
                                            "rank 0 (checksum 2.5)");
        model.addDiagnoses({divergence});
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn), QStringLiteral("diverged, running"));
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.addEvents(ends);
        QVERIFY(changed.count() >= 1); // the state stays diverged; its words change
        model.rankExited(0, QStringLiteral("node-a"), 0, false);
        model.rankExited(1, QStringLiteral("node-a"), 0, false);
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn), QStringLiteral("diverged, finished"));
        QCOMPARE(cell(model, 1, RankGridModel::StateColumn, Qt::ToolTipRole), divergence.message);
        QCOMPARE(cell(model, 0, RankGridModel::StateColumn), QStringLiteral("finished"));
        const QColor diverged = rankStateColor(RankLiveState::Diverged);
        QCOMPARE(model.index(model.rowOfRank(1), RankGridModel::StateColumn).data(Qt::BackgroundRole).value<QColor>(),
                 diverged);
        // Each state has a colour of its own.
        for (int a = 0; a <= int(RankLiveState::Stopped); ++a) {
            for (int b = a + 1; b <= int(RankLiveState::Stopped); ++b)
                QVERIFY2(rankStateColor(RankLiveState(a)) != rankStateColor(RankLiveState(b)),
                         qPrintable(rankLiveStateName(RankLiveState(a)) + QLatin1Char('/') +
                                    rankLiveStateName(RankLiveState(b))));
        }

        // Ended by the teardown while it trained on.
        RankGridModel stopped;
        stopped.addEvents(running);
        stopped.addDiagnoses({divergence});
        stopped.rankExited(1, QStringLiteral("node-a"), 128 + 15, true);
        QCOMPARE(cell(stopped, 1, RankGridModel::StateColumn), QStringLiteral("diverged, stopped"));
    }

    void sortRoleHoldsRawValues() {
        RankGridModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        for (const auto& batch : inBatches(recordedEvents(QStringLiteral("recorded-ok")), 9))
            model.addEvents(batch);
        const QModelIndex loss = model.index(model.rowOfRank(0), RankGridModel::LossColumn);
        QCOMPARE(loss.data(RankGridModel::SortRole).typeId(), QMetaType::Double);
        QCOMPARE(model.index(0, RankGridModel::StepColumn).data(RankGridModel::SortRole).toLongLong(), 12);
        QSortFilterProxyModel proxy;
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        proxy.setSourceModel(&model);
        proxy.setSortRole(RankGridModel::SortRole);
        proxy.sort(RankGridModel::RankColumn, Qt::DescendingOrder);
        QCOMPARE(proxy.index(0, RankGridModel::RankColumn).data().toString(), QStringLiteral("1"));
        QCOMPARE(cell(model, 0, RankGridModel::StateColumn), QStringLiteral("finished"));
    }

    void exitsAndManyRanks() {
        RankGridModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QVector<TrainerEvent> batch;
        for (int rank = 63; rank >= 0; --rank) // any order
            batch.append(rankscope::test::syntheticStep(rank, 100.0, 1, 2.0));
        model.addEvents(batch);
        QCOMPARE(inserted.count(), 1); // one insertion for the whole batch
        QCOMPARE(model.rowCount(), 64);
        model.rankExited(5, QStringLiteral("node-c"), 137);
        model.rankExited(6, QStringLiteral("node-c"), kLostExitStatus);
        model.rankExited(70, QStringLiteral("node-d"), 0); // a rank never heard from
        model.rankExited(7, QStringLiteral("node-c"), 143, true); // ended by the teardown
        QCOMPARE(model.rowCount(), 65);
        QCOMPARE(cell(model, 7, RankGridModel::StateColumn), QStringLiteral("stopped"));
        QVERIFY(rankStateColor(RankLiveState::Stopped) != rankStateColor(RankLiveState::Failed));
        QCOMPARE(cell(model, 5, RankGridModel::StateColumn), QStringLiteral("failed"));
        QCOMPARE(cell(model, 6, RankGridModel::StateColumn), QStringLiteral("lost"));
        QCOMPARE(cell(model, 70, RankGridModel::StateColumn), QStringLiteral("finished"));
        QCOMPARE(cell(model, 70, RankGridModel::HostColumn), QStringLiteral("node-d"));
        // Rank 70 is the 65th row: the row is no rank.
        QCOMPARE(model.rowOfRank(70), 64);
        QCOMPARE(model.index(64, RankGridModel::StateColumn).data(RankGridModel::RankRole).toInt(), 70);
        // A rank never heard from has no loss and no heartbeat: nothing to sort by, not 0.
        QVERIFY(!model.index(64, RankGridModel::LossColumn).data(RankGridModel::SortRole).isValid());
        QVERIFY(!model.index(64, RankGridModel::HeartbeatColumn).data(RankGridModel::SortRole).isValid());
        // Ranks sort by number: 70, 63, 62 … (as text, "9" would come first).
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        proxy.setSortRole(RankGridModel::SortRole);
        proxy.sort(RankGridModel::RankColumn, Qt::DescendingOrder);
        QCOMPARE(proxy.index(0, RankGridModel::RankColumn).data().toString(), QStringLiteral("70"));
        QCOMPARE(proxy.index(1, RankGridModel::RankColumn).data().toString(), QStringLiteral("63"));
        model.clear();
        QCOMPARE(model.rowCount(), 0);
        // The next run's ranks only.
        model.addEvents({rankscope::test::syntheticStep(3, 200.0, 1, 2.0)});
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.rowOfRank(3), 0);
    }

    // What changes every row (time, the hosts the plan names) repaints every row; an exit repaints its rank's.
    void changesRepaintTheRowsTheyTouch() {
        RankGridModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVector<TrainerEvent> batch;
        for (int rank = 0; rank < 8; ++rank)
            batch.append(rankscope::test::syntheticStep(rank, 100.0, 1, 2.0));
        model.addEvents(batch);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        const auto spans = [&changed] {
            QStringList found;
            for (const QList<QVariant>& signal : std::as_const(changed)) {
                const auto from = signal[0].value<QModelIndex>();
                const auto to = signal[1].value<QModelIndex>();
                found.append(
                    QStringLiteral("%1,%2-%3,%4").arg(from.row()).arg(from.column()).arg(to.row()).arg(to.column()));
            }
            changed.clear();
            return found.join(QLatin1Char(' '));
        };
        const QString all = QStringLiteral("0,0-7,%1").arg(RankGridModel::ColumnCount - 1);
        model.setNow(130.0);
        QCOMPARE(spans(), all);
        model.setRankHosts({{5, QStringLiteral("node-x")}});
        QCOMPARE(spans(), all);
        QCOMPARE(cell(model, 5, RankGridModel::HostColumn), QStringLiteral("node-x"));
        model.rankExited(5, QStringLiteral("node-x"), 137);
        QCOMPARE(spans(), QStringLiteral("5,0-5,%1").arg(RankGridModel::ColumnCount - 1));
        QCOMPARE(cell(model, 5, RankGridModel::StateColumn), QStringLiteral("failed"));
    }

    void gridTilesClickAndFocus() {
        RankGridModel model;
        RankGrid grid(&model);
        grid.resize(360, 800); // the grid panel of a 1400x900 run view
        grid.show();
        QVERIFY(QTest::qWaitForWindowExposed(&grid));
        QVector<TrainerEvent> batch;
        for (int rank = 0; rank < 64; ++rank)
            batch.append(rankscope::test::syntheticStep(rank, 100.0, 1, 2.0));
        model.addEvents(batch);
        QCoreApplication::processEvents();
        QTRY_VERIFY(grid.tileRect(63).isValid());
        // 64 tiles fit without scrolling, each at least the minimum legible size.
        for (int rank : {0, 63})
            QVERIFY2(grid.viewport()->rect().contains(grid.tileRect(rank)),
                     qPrintable(QStringLiteral("rank %1 at %2,%3 %4x%5 in %6x%7")
                                    .arg(rank)
                                    .arg(grid.tileRect(rank).x())
                                    .arg(grid.tileRect(rank).y())
                                    .arg(grid.tileRect(rank).width())
                                    .arg(grid.tileRect(rank).height())
                                    .arg(grid.viewport()->width())
                                    .arg(grid.viewport()->height())));
        QVERIFY(grid.tileSize().width() >= 72 && grid.tileSize().height() >= 40);
        // Tiles are ordered by rank.
        QVERIFY(grid.tileRect(1).left() > grid.tileRect(0).left() || grid.tileRect(1).top() > grid.tileRect(0).top());

        QSignalSpy selected(&grid, &RankGrid::rankSelected);
        QTest::mouseClick(grid.viewport(), Qt::LeftButton, {}, grid.tileRect(17).center());
        QCOMPARE(selected.count(), 1);
        QCOMPARE(selected.first().first().toInt(), 17);
        grid.setFocusedRank(17);
        QCOMPARE(grid.focusedRank(), 17);
    }
};

QTEST_MAIN(TestRankGridModel)
#include "tst_rankgridmodel.moc"
