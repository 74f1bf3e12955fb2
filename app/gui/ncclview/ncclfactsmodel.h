// SPDX-License-Identifier: MIT
#pragma once

#include "core/ncclfindings.h"

#include <QAbstractTableModel>
#include <QMap>
#include <QVector>

namespace rankscope::gui {

// One row per rank that printed NCCL lines (in the order ranks first did, so a new rank is an insertion at the
// end; sort by rank through a proxy with SortRole), one column per fact. In the columns that every rank should
// agree on (version, network, interfaces, transports, channels) a value that differs from the one most ranks
// have is marked (DiffersRole, a warm background); a rank with NCCL warnings has its count in red. Facts a rank
// has not printed are blank and never marked.
class NcclFactsModel final : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column {
        RankColumn,
        HostColumn,
        VersionColumn,
        CudaDevColumn,
        BusIdColumn,
        NetworkColumn,
        InterfacesColumn,
        TransportsColumn,
        ChannelsColumn,
        WarningsColumn,
        ColumnCount
    };
    enum Role {
        SortRole = Qt::UserRole + 1,
        RankRole,    // the rank, any column
        DiffersRole, // bool: the value differs from most ranks' (compared columns only)
    };

    explicit NcclFactsModel(QObject* parent = nullptr);

    // The engine's snapshot (RunEngine::ncclFacts): every rank's facts so far. One insertion for the ranks
    // that are new, one dataChanged for the rest.
    void setFacts(const QVector<RankNcclFacts>& perRank);
    void clear();
    [[nodiscard]] int rowOfRank(int rank) const { return int(m_rows.indexOf(rank)); }
    [[nodiscard]] static bool isCompared(int column);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    [[nodiscard]] static QString compareKey(const RankNcclFacts& row, int column);
    void computeMajorities();
    [[nodiscard]] bool differs(const RankNcclFacts& row, int column) const;

    QVector<int> m_rows;              // rank of each row
    QMap<int, RankNcclFacts> m_facts; // by rank
    QMap<int, QString> m_majority;    // compared column -> the value most ranks have; absent on a tie
};

} // namespace rankscope::gui
