// SPDX-License-Identifier: MIT
// The NCCL facts side by side, from recorded NCCL output (tests/data/logs/nccl-public-samples.log): each
// rank's lines fed to its own parser, as the engine does with each rank's stdout. Ranks 0-2 are the three
// processes of NVIDIA/nccl#857 (sockets over eth0); rank 3 is a process of NVIDIA/nccl#1066 (InfiniBand),
// a rank that chose another network than the rest.
#include "ncclfactsmodel.h"
#include "ncclpanel.h"

#include "core/ncclparser.h"

#include <QAbstractItemModelTester>
#include <QFile>
#include <QLabel>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTest>

using namespace rankscope;
using namespace rankscope::gui;

namespace {

// The lines of the section whose source names `issue`, of the process `pid`; the bare "NCCL version" line
// (printed by rank 0 only) goes with `versionPid`.
QByteArray processLines(const QString& issue, const QByteArray& pid, const QByteArray& versionPid) {
    QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/logs/nccl-public-samples.log"));
    if (!file.open(QIODevice::ReadOnly))
        qFatal("missing test data nccl-public-samples.log");
    QByteArray out;
    bool inSection = false;
    for (const QByteArray& line : file.readAll().split('\n')) {
        if (line.startsWith("# source:")) {
            inSection = line.contains(issue.toUtf8());
            continue;
        }
        if (!inSection)
            continue;
        if (line.contains(":" + pid + ":") || (pid == versionPid && line.startsWith("NCCL version")))
            out += line + '\n';
    }
    return out;
}

RankNcclFacts recordedRank(int rank, const QString& issue, const QByteArray& pid, const QByteArray& versionPid) {
    NcclLogParser parser;
    parser.feed(processLines(issue, pid, versionPid));
    parser.finish();
    return rankNcclFacts(rank, parser.facts());
}

QVector<RankNcclFacts> fourRanks() {
    const QString socketRun = QStringLiteral("issues/857");
    return {recordedRank(0, socketRun, "480850", "480850"), recordedRank(1, socketRun, "480851", "480850"),
            recordedRank(2, socketRun, "480852", "480850"),
            recordedRank(3, QStringLiteral("issues/1066"), "1080060", "")};
}

QModelIndex cell(const NcclFactsModel& model, int rank, int column) {
    return model.index(model.rowOfRank(rank), column);
}

} // namespace

class tst_NcclFactsModel final : public QObject {
    Q_OBJECT

private slots:
    void recordedFactsSideBySide() {
        NcclFactsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setFacts(fourRanks());
        QCOMPARE(model.rowCount(), 4);
        QCOMPARE(cell(model, 0, NcclFactsModel::HostColumn).data().toString(), QStringLiteral("ai"));
        QCOMPARE(cell(model, 3, NcclFactsModel::HostColumn).data().toString(), QStringLiteral("gcn6"));
        QCOMPARE(cell(model, 0, NcclFactsModel::VersionColumn).data().toString(), QStringLiteral("2.10.3"));
        QCOMPARE(cell(model, 1, NcclFactsModel::NetworkColumn).data().toString(), QStringLiteral("Socket"));
        QCOMPARE(cell(model, 3, NcclFactsModel::NetworkColumn).data().toString(), QStringLiteral("IB"));
        QCOMPARE(cell(model, 2, NcclFactsModel::InterfacesColumn).data().toString(), QStringLiteral("eth0"));
        const QModelIndex warnings = cell(model, 0, NcclFactsModel::WarningsColumn);
        QCOMPARE(warnings.data().toString(),
                 QStringLiteral("1 · Failed to open libibverbs.so[.1] [misc/ibvwrap.cc:63]"));
        QCOMPARE(warnings.data(NcclFactsModel::SortRole).toInt(), 1);
        QVERIFY(warnings.data(Qt::ToolTipRole).toString().contains(QLatin1String("Failed to open libibverbs.so")));
        QVERIFY(warnings.data(Qt::ForegroundRole).value<QColor>().isValid());
        QCOMPARE(cell(model, 3, NcclFactsModel::RankColumn).data(NcclFactsModel::SortRole).toInt(), 3);
    }

    void theRankOnAnotherNetworkStandsOut() {
        NcclFactsModel model;
        model.setFacts(fourRanks());
        // Three ranks chose sockets: rank 3's InfiniBand is the odd one, and only it is marked.
        for (int rank = 0; rank < 4; ++rank) {
            const QModelIndex network = cell(model, rank, NcclFactsModel::NetworkColumn);
            QCOMPARE(network.data(NcclFactsModel::DiffersRole).toBool(), rank == 3);
            QCOMPARE(network.data(Qt::BackgroundRole).isValid(), rank == 3);
        }
        QCOMPARE(cell(model, 3, NcclFactsModel::NetworkColumn).data(Qt::ToolTipRole).toString(),
                 QStringLiteral("most ranks: Socket"));
        // A fact a rank never printed (rank 3 named no socket interface; only rank 0 printed the version) is
        // blank, not a difference; hosts and devices differ by design and are never marked.
        QCOMPARE(cell(model, 3, NcclFactsModel::InterfacesColumn).data().toString(), QString());
        QVERIFY(!cell(model, 3, NcclFactsModel::InterfacesColumn).data(NcclFactsModel::DiffersRole).toBool());
        QVERIFY(!cell(model, 1, NcclFactsModel::VersionColumn).data(NcclFactsModel::DiffersRole).toBool());
        QVERIFY(!cell(model, 3, NcclFactsModel::HostColumn).data(NcclFactsModel::DiffersRole).toBool());
    }

    void twoRanksThatDisagreeAreBothMarked() {
        NcclFactsModel model;
        const QVector<RankNcclFacts> all = fourRanks();
        model.setFacts({all[0], all[3]});
        QVERIFY(cell(model, 0, NcclFactsModel::NetworkColumn).data(NcclFactsModel::DiffersRole).toBool());
        QVERIFY(cell(model, 3, NcclFactsModel::NetworkColumn).data(NcclFactsModel::DiffersRole).toBool());
        QCOMPARE(cell(model, 0, NcclFactsModel::NetworkColumn).data(Qt::ToolTipRole).toString(),
                 QStringLiteral("the ranks disagree"));
    }

    void liveSnapshotsInsertNewRanksOnly() {
        NcclFactsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const QVector<RankNcclFacts> all = fourRanks();
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        model.setFacts({all[2], all[3]});
        model.setFacts(all); // the next second: ranks 0 and 1 too, in one insertion
        QCOMPARE(inserted.size(), 2);
        QCOMPARE(inserted.at(1).at(1).toInt(), 2);
        QCOMPARE(inserted.at(1).at(2).toInt(), 3);
        QCOMPARE(reset.size(), 0);
        QCOMPARE(model.rowCount(), 4);
        // Rank 3 now stands apart; with two ranks it was one of two.
        QCOMPARE(cell(model, 3, NcclFactsModel::NetworkColumn).data(Qt::ToolTipRole).toString(),
                 QStringLiteral("most ranks: Socket"));
        model.clear();
        QCOMPARE(model.rowCount(), 0);
    }

    void panelSortsByRankAndAsksForALog() {
        NcclPanel panel;
        panel.resize(1000, 260);
        QVERIFY(panel.noteLabel()->text().startsWith(QLatin1String("No NCCL lines in the ranks' output")));
        const QVector<RankNcclFacts> all = fourRanks();
        panel.setFacts({all[3], all[1], all[0], all[2]});
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        for (int row = 0; row < 4; ++row)
            QCOMPARE(panel.proxy()->index(row, 0).data(NcclFactsModel::RankRole).toInt(), row);
        QVERIFY(panel.noteLabel()->text().contains(QLatin1String("Highlighted")));
        QVERIFY(panel.grab().save(QStringLiteral("/tmp/rankscope-nccl-panel.png")));
        QSignalSpy requested(&panel, &NcclPanel::rankRequested);
        const QModelIndex rank3 = panel.proxy()->index(3, NcclFactsModel::NetworkColumn);
        QTest::mouseClick(panel.view()->viewport(), Qt::LeftButton, {}, panel.view()->visualRect(rank3).center());
        QCOMPARE(requested.size(), 1);
        QCOMPARE(requested.takeFirst().at(0).toInt(), 3);
    }
};

QTEST_MAIN(tst_NcclFactsModel)
#include "tst_ncclfactsmodel.moc"
