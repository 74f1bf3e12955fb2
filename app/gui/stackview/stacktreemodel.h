// SPDX-License-Identifier: MIT
#pragma once

#include "core/stacks.h"

#include <QAbstractItemModel>
#include <QColor>
#include <QHash>

namespace rankscope::gui {

// The colour a wait frame is drawn in: red for a collective's wait (c10d, Gloo, NCCL), orange for a sleep;
// invalid for other frames.
[[nodiscard]] QColor waitKindColor(WaitKind kind);

// One capture's merged stack tree (core/stacks.h), as StackTree orders it: outermost frames at the top,
// children holding a main thread first. The model keeps its own copy of the tree and never changes it, so
// an index points at its node. DisplayRole formats; SortRole holds the raw value of each column.
class StackTreeModel final : public QAbstractItemModel {
    Q_OBJECT

public:
    enum Column { FrameColumn, RanksColumn, LocationColumn, WaitColumn, ColumnCount };
    enum Role {
        SortRole = Qt::UserRole + 1,
        RanksRole,      // QList<int>: the ranks whose threads pass through the frame, any column
        WaitRole,       // int(WaitKind), any column
        SplitRole,      // bool: the frame's rank set differs from its parent frame's (ranks part here)
        MainThreadRole, // bool: a main thread passes through the frame
    };

    explicit StackTreeModel(QObject* parent = nullptr);

    void setTree(const StackTree& tree);
    void clear();
    [[nodiscard]] const StackTree& tree() const { return m_tree; }
    [[nodiscard]] const StackNode* node(const QModelIndex& index) const;
    // The first frame, depth first, whose function contains `text` (for tests and a search box).
    [[nodiscard]] QModelIndex find(const QString& text, const QModelIndex& from = {}) const;

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Place {
        const StackNode* parent;
        int row;
    };
    void indexNodes(const StackNode& node);
    [[nodiscard]] const StackNode& nodeOrRoot(const QModelIndex& index) const;
    [[nodiscard]] bool splitsFromParent(const StackNode& node) const;
    [[nodiscard]] QVariant display(const StackNode& node, int column) const;
    [[nodiscard]] QVariant sortValue(const StackNode& node, int column) const;

    StackTree m_tree;
    QHash<const StackNode*, Place> m_places; // every node but the root: its parent and its row there
};

} // namespace rankscope::gui
