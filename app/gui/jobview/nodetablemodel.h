// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"
#include "remote/clustercheck.h"

#include <QAbstractTableModel>
#include <QVector>

#include <optional>

namespace rankscope::gui {

// The job's nodes, one row each, with what the last pre-flight found on each. Editing a cell edits the
// job's node; a node whose connection settings change loses its (now stale) check result.
class NodeTableModel final : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Name, Host, Port, User, Gpus, Procs, State, Summary, Cause, Fix, ColumnCount };
    enum class NodeState { Unknown, Checking, Ready, Warning, Failed };
    static constexpr int SortRole = Qt::UserRole;      // raw values: numbers, the state's enum value
    static constexpr int StateRole = Qt::UserRole + 1; // NodeState as int, on every column

    explicit NodeTableModel(QObject* parent = nullptr);

    // Takes the job's nodes. The same nodes as now keep their check results.
    void setJob(const JobSpec& job);
    [[nodiscard]] const JobSpec& job() const { return m_job; }
    [[nodiscard]] const QVector<NodeSpec>& nodes() const { return m_job.nodes; }

    void addNodes(const QVector<NodeSpec>& nodes); // one insertion for all
    void removeNodes(QList<int> rows);

    // The pre-flight: every row checking, then each node's result as it arrives (NodeCheck::index is the row).
    void setChecking();
    void clearChecks(); // every row back to unknown
    void setCheckResult(const remote::NodeCheck& check);
    [[nodiscard]] NodeState state(int row) const;
    [[nodiscard]] const std::optional<remote::NodeCheck>& checkResult(int row) const;
    [[nodiscard]] static QString stateName(NodeState state); // "unknown", "checking", "ready", ...

    [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    [[nodiscard]] QVariant headerData(int section, Qt::Orientation orientation,
                                      int role = Qt::DisplayRole) const override;
    [[nodiscard]] Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
    bool removeRows(int row, int count, const QModelIndex& parent = {}) override;

signals:
    void nodesEdited(); // by the user: a cell, a node added or removed

private:
    struct Row {
        NodeState state = NodeState::Unknown;
        std::optional<remote::NodeCheck> check;
    };
    [[nodiscard]] QVariant display(int row, int column) const;
    [[nodiscard]] QVariant sortValue(int row, int column) const;
    [[nodiscard]] QString summary(int row) const;
    [[nodiscard]] QString cause(int row) const;
    [[nodiscard]] QString fix(int row) const;

    JobSpec m_job;
    QVector<Row> m_rows; // parallel to m_job.nodes
};

} // namespace rankscope::gui
