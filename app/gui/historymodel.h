// SPDX-License-Identifier: MIT
#pragma once

#include "core/runstore.h"

#include <QAbstractTableModel>
#include <QVector>

namespace rankscope::gui {

// Every run of the run store, newest first: one row per run. Raw values (ids, times as milliseconds,
// counts) under SortRole, so that a QSortFilterProxyModel sorts them as values, not as text.
class HistoryModel final : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Id, Name, Mode, State, Started, Ranks, Summary, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1, RunIdRole };

    explicit HistoryModel(RunStore* store, QObject* parent = nullptr);

    void refresh(); // re-reads the store's index
    [[nodiscard]] RunRecord record(int row) const { return m_runs.value(row); }
    [[nodiscard]] int rowOf(const QString& runId) const;

    [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    [[nodiscard]] QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    RunStore* m_store;
    QVector<RunRecord> m_runs;
};

} // namespace rankscope::gui
