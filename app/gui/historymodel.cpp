// SPDX-License-Identifier: MIT
#include "historymodel.h"

#include <QBrush>
#include <QColor>

namespace rankscope::gui {

HistoryModel::HistoryModel(RunStore* store, QObject* parent) : QAbstractTableModel(parent), m_store(store) {
    refresh();
}

void HistoryModel::refresh() {
    beginResetModel();
    m_runs = m_store->list();
    endResetModel();
}

int HistoryModel::rowOf(const QString& runId) const {
    for (int row = 0; row < m_runs.size(); ++row)
        if (m_runs[row].id == runId)
            return row;
    return -1;
}

int HistoryModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_runs.size());
}

int HistoryModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant HistoryModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const RunRecord& run = m_runs[index.row()];
    if (role == RunIdRole)
        return run.id;
    if (role == Qt::DisplayRole || role == SortRole) {
        const bool raw = role == SortRole;
        switch (index.column()) {
        case Id:
            return run.id;
        case Name:
            return run.name;
        case Mode:
            return run.mode;
        case State:
            return run.state;
        case Started:
            return raw ? QVariant(run.created.toMSecsSinceEpoch())
                       : QVariant(run.created.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")));
        case Ranks:
            return run.worldSize;
        case Summary:
            return run.headline();
        default:
            return {};
        }
    }
    if (role == Qt::ForegroundRole && index.column() == State) {
        if (run.failedOrLost())
            return QBrush(QColor(0xc6, 0x28, 0x28));
        if (run.inProgress())
            return QBrush(QColor(0x15, 0x65, 0xc0));
    }
    if (role == Qt::ToolTipRole)
        return run.headline().isEmpty() ? run.id : run.headline();
    return {};
}

QVariant HistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* const names[] = {"Run", "Name", "Mode", "State", "Started", "Ranks", "Summary"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

} // namespace rankscope::gui
