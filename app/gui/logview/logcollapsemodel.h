// SPDX-License-Identifier: MIT
#pragma once

#include <QAbstractItemModel>
#include <QHash>
#include <QPointer>

#include <deque>
#include <memory>

namespace rankscope::gui {

// A tree over a flat log model (in practice the LogFilterProxy): the same line printed by several ranks
// close together becomes one parent row, "ranks 0-7: <text>", whose children are the ranks' own rows.
// Lines compare without the prefix that only names their process (NCCL's "host:pid:tid [dev] ", the
// trainer's "[rank 3] ").
// A rank's line joins the newest group of its text when that group is at most timeWindow() old, has no
// line of this rank yet, and the rank printed nothing else since the group began (so every rank's own
// lines stay in order). Appends to the source are followed incrementally (rows join groups or are appended
// at the top level) and so is the removal of the oldest rows; any other change rebuilds the tree.
class LogCollapseModel final : public QAbstractItemModel {
    Q_OBJECT

public:
    enum Role {
        MemberCountRole = Qt::UserRole + 100, // int: 1 for a line of its own, N for a group of N ranks
        RankListRole,                         // QString: "0-3,5"
    };
    static constexpr double kDefaultTimeWindow = 5.0;

    explicit LogCollapseModel(QObject* parent = nullptr);
    ~LogCollapseModel() override;

    // A flat model with LogModel's roles (RankRole, TimeRole, TextRole). nullptr: empty.
    void setSourceModel(QAbstractItemModel* source);
    [[nodiscard]] QAbstractItemModel* sourceModel() const { return m_source; }
    void setTimeWindow(double seconds); // rebuilds
    [[nodiscard]] double timeWindow() const { return m_timeWindow; }

    // The row of the source behind `index`; -1 for a group's parent row.
    [[nodiscard]] int sourceRow(const QModelIndex& index) const;
    // Where a source row is shown: a child of its group, or a top-level row.
    [[nodiscard]] QModelIndex indexForSourceRow(int sourceRow, int column = 0) const;

    [[nodiscard]] QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    [[nodiscard]] QModelIndex parent(const QModelIndex& child) const override;
    [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    [[nodiscard]] QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    struct Item;
    struct Placement;

    [[nodiscard]] Item* itemAt(int topRow) const { return m_items[size_t(topRow)].get(); }
    [[nodiscard]] int topRowOf(const Item* item) const;
    [[nodiscard]] QModelIndex sourceIndex(qint64 absoluteRow, int column) const;
    [[nodiscard]] QVariant groupData(const Item& item, int column, int role) const;
    // Decides where a new source row goes; updates the grouping state but emits nothing.
    Item* groupFor(qint64 absoluteRow, int rank, const QString& text, double time);

    void rebuild();
    void clearState();
    void appendSourceRows(int first, int last);
    void removeFrontSourceRows(int count);
    void onSourceDataChanged(const QModelIndex& topLeft, const QModelIndex& bottomRight);
    void onSourceRowsInserted(const QModelIndex& parent, int first, int last);
    void onSourceRowsRemoved(const QModelIndex& parent, int first, int last);

    QPointer<QAbstractItemModel> m_source;
    QList<QMetaObject::Connection> m_connections;
    std::deque<std::unique_ptr<Item>> m_items; // the top level, in order of Item::sequence
    std::deque<Item*> m_itemOfRow;             // per source row (minus m_base)
    qint64 m_base = 0;                         // the absolute number of source row 0
    qint64 m_nextSequence = 0;
    QHash<QString, Item*> m_newestByText;
    QHash<int, qint64> m_lastRowOfRank; // absolute
    double m_timeWindow = kDefaultTimeWindow;
};

} // namespace rankscope::gui
