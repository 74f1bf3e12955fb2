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

// A rank of a healthy InfiniBand run (8 ranks a node), written out: every fact the ranks should agree on is the same.
RankNcclFacts agreeingRank(int rank) {
    RankNcclFacts facts;
    facts.rank = rank;
    facts.host = QStringLiteral("node%1").arg(rank / 8);
    facts.versions = {QStringLiteral("2.18.1")};
    facts.cudaDev = rank % 8;
    facts.busId = QStringLiteral("0000:%1:00.0").arg(rank % 8 + 10);
    facts.network = QStringLiteral("IB");
    facts.interfaces = {QStringLiteral("ib0")};
    // The counts differ from rank to rank (they depend on its peers); which transports a rank uses does not.
    facts.transports = {{QStringLiteral("P2P"), 4 + rank}, {QStringLiteral("NET/IB"), 2 * (rank + 1)}};
    facts.channels = 2;
    return facts;
}

QVector<RankNcclFacts> agreeingRanks(int count) {
    QVector<RankNcclFacts> ranks;
    for (int rank = 0; rank < count; ++rank)
        ranks.append(agreeingRank(rank));
    return ranks;
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

    // Each column the ranks should agree on is compared: the odd rank is marked, with what most ranks have, and
    // the others are not. Transports are compared by which ones a rank uses, not by its connection counts.
    void everyAgreedColumnIsCompared_data() {
        QTest::addColumn<int>("column");
        QTest::addColumn<QString>("majority");
        QTest::newRow("version") << int(NcclFactsModel::VersionColumn) << "2.18.1";
        QTest::newRow("network") << int(NcclFactsModel::NetworkColumn) << "IB";
        QTest::newRow("interfaces") << int(NcclFactsModel::InterfacesColumn) << "ib0";
        QTest::newRow("transports") << int(NcclFactsModel::TransportsColumn) << "NET/IB, P2P";
        QTest::newRow("channels") << int(NcclFactsModel::ChannelsColumn) << "2";
    }
    void everyAgreedColumnIsCompared() {
        QFETCH(int, column);
        QVector<RankNcclFacts> ranks = agreeingRanks(4);
        RankNcclFacts& odd = ranks[2];
        switch (column) {
        case NcclFactsModel::VersionColumn:
            odd.versions = {QStringLiteral("2.17.1")};
            break;
        case NcclFactsModel::NetworkColumn:
            odd.network = QStringLiteral("Socket");
            break;
        case NcclFactsModel::InterfacesColumn:
            odd.interfaces = {QStringLiteral("eth0")};
            break;
        case NcclFactsModel::TransportsColumn:
            odd.transports = {{QStringLiteral("P2P"), 6}, {QStringLiteral("NET/Socket"), 6}};
            break;
        case NcclFactsModel::ChannelsColumn:
            odd.channels = 1;
            break;
        }
        NcclFactsModel model;
        model.setFacts(ranks);
        for (int rank = 0; rank < 4; ++rank) {
            const QModelIndex index = cell(model, rank, column);
            QCOMPARE(index.data(NcclFactsModel::DiffersRole).toBool(), rank == 2);
            QCOMPARE(index.data(Qt::BackgroundRole).isValid(), rank == 2);
            if (rank != 2)
                QVERIFY(!index.data(Qt::ToolTipRole).isValid());
        }
        QFETCH(QString, majority);
        QCOMPARE(cell(model, 2, column).data(Qt::ToolTipRole).toString(), QStringLiteral("most ranks: ") + majority);
        // Hosts and devices differ by design: never compared, never marked.
        for (const int other : {int(NcclFactsModel::HostColumn), int(NcclFactsModel::CudaDevColumn),
                                int(NcclFactsModel::BusIdColumn), int(NcclFactsModel::WarningsColumn)})
            QVERIFY(!cell(model, 2, other).data(NcclFactsModel::DiffersRole).toBool());
    }

    void transportsShowTheirCounts() {
        NcclFactsModel model;
        model.setFacts({agreeingRank(1)});
        QCOMPARE(cell(model, 1, NcclFactsModel::TransportsColumn).data().toString(), QStringLiteral("NET/IB 4, P2P 5"));
    }

    // A fact a rank did not print is blank, casts no vote and is never marked: a version that only rank 0 printed
    // (NCCL prints it once per process group, usually from rank 0) is no difference, nor are the channels of a
    // rank whose ring lines were not logged. Device 0 is a device, not a blank.
    void unprintedFactsCastNoVote() {
        QVector<RankNcclFacts> ranks = agreeingRanks(4);
        for (int rank = 1; rank < 4; ++rank)
            ranks[rank].versions.clear();
        ranks[3].channels = 0;
        NcclFactsModel model;
        model.setFacts(ranks);
        QCOMPARE(cell(model, 0, NcclFactsModel::VersionColumn).data().toString(), QStringLiteral("2.18.1"));
        QVERIFY(!cell(model, 0, NcclFactsModel::VersionColumn).data(NcclFactsModel::DiffersRole).toBool());
        QCOMPARE(cell(model, 3, NcclFactsModel::ChannelsColumn).data().toString(), QString());
        QVERIFY(!cell(model, 3, NcclFactsModel::ChannelsColumn).data(NcclFactsModel::DiffersRole).toBool());
        QVERIFY(!cell(model, 0, NcclFactsModel::ChannelsColumn).data(NcclFactsModel::DiffersRole).toBool());
        QCOMPARE(cell(model, 0, NcclFactsModel::CudaDevColumn).data().toString(), QStringLiteral("0"));
        ranks[2].cudaDev = -1;
        model.setFacts(ranks);
        QCOMPARE(cell(model, 2, NcclFactsModel::CudaDevColumn).data().toString(), QString());
    }

    // Six ranks on InfiniBand and fourteen that each report something of their own: IB is what most ranks have,
    // whichever values the vote counts first (a tie among the singles before it must not stick). The vote's order
    // is a hash's, which changes from run to run: with many singles, nearly every order puts two before the
    // majority, in each of the three columns.
    void theMostCommonValueWinsOverEarlierTies() {
        QVector<RankNcclFacts> ranks = agreeingRanks(20);
        for (int rank = 6; rank < 20; ++rank) {
            ranks[rank].network = QStringLiteral("Plugin%1").arg(rank);
            ranks[rank].interfaces = {QStringLiteral("eth%1").arg(rank)};
            ranks[rank].versions = {QStringLiteral("2.%1.1").arg(rank)};
        }
        NcclFactsModel model;
        model.setFacts(ranks);
        for (const int column : {int(NcclFactsModel::NetworkColumn), int(NcclFactsModel::InterfacesColumn),
                                 int(NcclFactsModel::VersionColumn)}) {
            QVERIFY(!cell(model, 0, column).data(NcclFactsModel::DiffersRole).toBool());
            QVERIFY(cell(model, 7, column).data(Qt::ToolTipRole).toString().startsWith(QLatin1String("most ranks: ")));
        }
    }

    // The engine sends every rank's facts again each second: a rank's new warning shows, and the rows that were
    // there are repainted.
    void aRanksNewerFactsReplaceItsOld() {
        NcclFactsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVector<RankNcclFacts> ranks = agreeingRanks(3);
        model.setFacts(ranks);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        ranks[1].warnings = {QStringLiteral("NET/IB : Got async event : port error [net_ib.cc:123]")};
        model.setFacts(ranks);
        QCOMPARE(cell(model, 1, NcclFactsModel::WarningsColumn).data().toString(),
                 QStringLiteral("1 · NET/IB : Got async event : port error [net_ib.cc:123]"));
        QCOMPARE(changed.size(), 1);
        QCOMPARE(changed.at(0).at(0).toModelIndex().row(), 0);
        QCOMPARE(changed.at(0).at(1).toModelIndex().row(), 2);
        QCOMPARE(changed.at(0).at(1).toModelIndex().column(), NcclFactsModel::ColumnCount - 1);
    }

    // A new run starts from nothing: the view is told, and the same ranks come back as new rows.
    void clearForgetsTheRun() {
        NcclFactsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setFacts(agreeingRanks(4));
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        model.clear();
        QCOMPARE(reset.size(), 1);
        QCOMPARE(model.rowCount(), 0);
        model.setFacts(agreeingRanks(2));
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(cell(model, 1, NcclFactsModel::NetworkColumn).data().toString(), QStringLiteral("IB"));
    }

    // Warnings: the count and the first one in the cell, every one in its tooltip, and only that cell in red.
    void warningsCountFirstAndAll() {
        QVector<RankNcclFacts> ranks = agreeingRanks(2);
        ranks[1].warnings = {QStringLiteral("first [a.cc:1]"), QStringLiteral("second [b.cc:2]")};
        NcclFactsModel model;
        model.setFacts(ranks);
        const QModelIndex warnings = cell(model, 1, NcclFactsModel::WarningsColumn);
        QCOMPARE(warnings.data().toString(), QStringLiteral("2 · first [a.cc:1]"));
        QCOMPARE(warnings.data(Qt::ToolTipRole).toString(), QStringLiteral("first [a.cc:1]\nsecond [b.cc:2]"));
        QCOMPARE(warnings.data(Qt::ForegroundRole).value<QColor>(), QColor(0xc6, 0x28, 0x28));
        for (int column = 0; column < NcclFactsModel::WarningsColumn; ++column)
            QVERIFY2(!cell(model, 1, column).data(Qt::ForegroundRole).isValid(), qPrintable(QString::number(column)));
        QVERIFY(!cell(model, 0, NcclFactsModel::WarningsColumn).data(Qt::ForegroundRole).isValid());
    }

    // Numbers sort as numbers: 10 channels after 2.
    void channelsSortAsNumbers() {
        QVector<RankNcclFacts> ranks = agreeingRanks(3);
        ranks[0].channels = 10;
        ranks[1].channels = 2;
        ranks[2].channels = 4;
        NcclFactsModel model;
        model.setFacts(ranks);
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&model);
        proxy.setSortRole(NcclFactsModel::SortRole);
        proxy.sort(NcclFactsModel::ChannelsColumn);
        QCOMPARE(proxy.index(0, NcclFactsModel::ChannelsColumn).data().toString(), QStringLiteral("2"));
        QCOMPARE(proxy.index(2, NcclFactsModel::ChannelsColumn).data().toString(), QStringLiteral("10"));
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
