// SPDX-License-Identifier: MIT
#pragma once

#include "core/rankstatus.h"

#include <QAbstractTableModel>
#include <QColor>
#include <QVector>

namespace rankscope::gui {

// The tile colour of a state: calm for starting/running/finished, warm for slow/hung, red for failed.
[[nodiscard]] QColor rankStateColor(RankLiveState state);

// One row per rank, in the order ranks first spoke (so a new rank is an insertion at the end, never a reset);
// sort by rank through a proxy with SortRole. DisplayRole formats, SortRole holds the raw value,
// BackgroundRole the state colour, ToolTipRole the reason of the state.
class RankGridModel final : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { RankColumn, HostColumn, StateColumn, StepColumn, LossColumn, HeartbeatColumn, ColumnCount };
    enum Role {
        SortRole = Qt::UserRole + 1,
        StateRole, // int(RankLiveState), any column
        RankRole,  // the rank number, any column
    };

    explicit RankGridModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // One batch: at most one row insertion and one dataChanged.
    void addEvents(const QVector<rankscope::TrainerEvent>& events);
    void rankExited(int rank, const QString& host, int status, bool stopped = false);
    // Each rank's node's host (RunRecord::rankHosts): the host column then names hosts as the diagnoses do.
    void setRankHosts(const QHash<int, QString>& hosts);
    // The run's findings: hung, slow and a root cause's failed come from them (RankStatusTracker's rules).
    void addDiagnoses(const QVector<rankscope::Diagnosis>& diagnoses);
    // The clock of the heartbeat ages and step rates, Unix seconds.
    void setNow(double now);
    [[nodiscard]] double now() const { return m_now; }
    void setOptions(const RankStatusOptions& options);
    void clear();

    [[nodiscard]] const RankStatusTracker& tracker() const { return m_tracker; }
    [[nodiscard]] int rowOfRank(int rank) const { return int(m_rows.indexOf(rank)); }
    [[nodiscard]] int rankAt(int row) const { return m_rows.value(row, -1); }

private:
    void syncRows();
    void emitAllChanged();
    [[nodiscard]] QVariant display(const RankLiveStatus& status, int column) const;
    [[nodiscard]] QVariant sortValue(const RankLiveStatus& status, int column) const;

    RankStatusTracker m_tracker;
    QVector<int> m_rows; // rank of each row
    double m_now = 0.0;
};

} // namespace rankscope::gui
