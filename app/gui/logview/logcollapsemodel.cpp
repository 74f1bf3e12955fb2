// SPDX-License-Identifier: MIT
#include "logview/logcollapsemodel.h"

#include "logview/logmodel.h"
#include "core/ranklist.h"

#include <QMap>

#include <algorithm>

namespace rankscope::gui {

// One top-level row: a line of its own (one member) or a group (two or more, shown as children).
struct LogCollapseModel::Item {
    qint64 sequence = 0;
    QString text;
    double firstTime = 0.0;
    QVector<qint64> rows;      // absolute source rows, ascending: the children
    QVector<int> rowRanks;     // the rank of each row
    QVector<int> claimedRanks; // rowRanks plus those of rows decided on but not yet inserted
    [[nodiscard]] bool isGroup() const { return rows.size() > 1; }
};

LogCollapseModel::LogCollapseModel(QObject* parent) : QAbstractItemModel(parent) {}

LogCollapseModel::~LogCollapseModel() = default;

void LogCollapseModel::setSourceModel(QAbstractItemModel* source) {
    for (const auto& connection : std::as_const(m_connections))
        disconnect(connection);
    m_connections.clear();
    m_source = source;
    if (source) {
        const auto rebuildAll = [this] { rebuild(); };
        m_connections = {
            connect(source, &QAbstractItemModel::rowsInserted, this, &LogCollapseModel::onSourceRowsInserted),
            connect(source, &QAbstractItemModel::rowsRemoved, this, &LogCollapseModel::onSourceRowsRemoved),
            connect(source, &QAbstractItemModel::dataChanged, this, &LogCollapseModel::onSourceDataChanged),
            connect(source, &QAbstractItemModel::modelReset, this, rebuildAll),
            connect(source, &QAbstractItemModel::layoutChanged, this, rebuildAll),
            connect(source, &QAbstractItemModel::rowsMoved, this, rebuildAll),
            connect(source, &QObject::destroyed, this, rebuildAll),
        };
    }
    rebuild();
}

void LogCollapseModel::setTimeWindow(double seconds) {
    m_timeWindow = seconds;
    rebuild();
}

void LogCollapseModel::clearState() {
    m_items.clear();
    m_itemOfRow.clear();
    m_base = 0;
    m_newestByText.clear();
    m_lastRowOfRank.clear();
}

void LogCollapseModel::rebuild() {
    beginResetModel();
    clearState();
    const int count = m_source ? m_source->rowCount() : 0;
    for (int row = 0; row < count; ++row) {
        const QModelIndex index = m_source->index(row, LogModel::TextColumn);
        const QString text = withoutProcessPrefix(index.data(LogModel::TextRole).toString()).toString();
        Item* item =
            groupFor(row, index.data(LogModel::RankRole).toInt(), text, index.data(LogModel::TimeRole).toDouble());
        if (!item) {
            m_items.push_back(std::make_unique<Item>());
            item = m_items.back().get();
            item->sequence = m_nextSequence++;
            item->text = text;
            item->firstTime = index.data(LogModel::TimeRole).toDouble();
            item->claimedRanks.append(index.data(LogModel::RankRole).toInt());
            m_newestByText.insert(item->text, item);
        }
        item->rows.append(row);
        item->rowRanks.append(index.data(LogModel::RankRole).toInt());
        m_itemOfRow.push_back(item);
    }
    endResetModel();
}

LogCollapseModel::Item* LogCollapseModel::groupFor(qint64 absoluteRow, int rank, const QString& text, double time) {
    Item* candidate = m_newestByText.value(text);
    const qint64 previousOfRank = m_lastRowOfRank.value(rank, -1);
    m_lastRowOfRank.insert(rank, absoluteRow);
    if (!candidate || time - candidate->firstTime > m_timeWindow || candidate->claimedRanks.contains(rank) ||
        previousOfRank >= candidate->rows.first())
        return nullptr;
    candidate->claimedRanks.append(rank);
    return candidate;
}

void LogCollapseModel::onSourceRowsInserted(const QModelIndex& parent, int first, int last) {
    if (parent.isValid())
        return;
    if (qsizetype(first) == qsizetype(m_itemOfRow.size()))
        appendSourceRows(first, last);
    else
        rebuild(); // a filter change in the proxy: not a live update
}

void LogCollapseModel::appendSourceRows(int first, int last) {
    std::vector<std::unique_ptr<Item>> fresh;
    QMap<qint64, std::pair<Item*, QVector<std::pair<qint64, int>>>> joins; // by sequence: old items that grow
    for (int row = first; row <= last; ++row) {
        const QModelIndex index = m_source->index(row, LogModel::TextColumn);
        const qint64 absolute = m_base + row;
        const int rank = index.data(LogModel::RankRole).toInt();
        const QString text = withoutProcessPrefix(index.data(LogModel::TextRole).toString()).toString();
        Item* item = groupFor(absolute, rank, text, index.data(LogModel::TimeRole).toDouble());
        if (!item) {
            fresh.push_back(std::make_unique<Item>());
            item = fresh.back().get();
            item->sequence = m_nextSequence++;
            item->text = text;
            item->firstTime = index.data(LogModel::TimeRole).toDouble();
            item->claimedRanks.append(rank);
            m_newestByText.insert(text, item);
        }
        const bool isNew = !fresh.empty() && item->sequence >= fresh.front()->sequence;
        if (isNew) {
            item->rows.append(absolute);
            item->rowRanks.append(rank);
        } else {
            auto& join = joins[item->sequence];
            join.first = item;
            join.second.append({absolute, rank});
        }
        m_itemOfRow.push_back(item);
    }

    for (auto& [item, members] : joins) {
        const QModelIndex top = index(topRowOf(item), 0);
        // A line of its own becomes a group: its own row turns into the first child.
        const int firstChild = item->isGroup() ? int(item->rows.size()) : 0;
        const int lastChild = int(item->rows.size()) + int(members.size()) - 1;
        beginInsertRows(top, firstChild, lastChild);
        for (const auto& [absolute, rank] : std::as_const(members)) {
            item->rows.append(absolute);
            item->rowRanks.append(rank);
        }
        endInsertRows();
        Q_EMIT dataChanged(top, index(top.row(), columnCount() - 1));
    }
    if (fresh.empty())
        return;
    const int start = int(m_items.size());
    beginInsertRows({}, start, start + int(fresh.size()) - 1);
    for (auto& item : fresh)
        m_items.push_back(std::move(item));
    endInsertRows();
}

void LogCollapseModel::onSourceRowsRemoved(const QModelIndex& parent, int first, int last) {
    if (parent.isValid())
        return;
    if (first == 0 && qsizetype(last) < qsizetype(m_itemOfRow.size()))
        removeFrontSourceRows(last + 1);
    else
        rebuild();
}

// The source dropped its oldest rows (the log window moved on): drop them here too, without a reset.
// Items are in order of their first row, so the items that lose rows are a prefix of the top level.
void LogCollapseModel::removeFrontSourceRows(int count) {
    m_base += count;
    m_itemOfRow.erase(m_itemOfRow.begin(), m_itemOfRow.begin() + count);
    QVector<int> emptied; // top rows, ascending
    QVector<Item*> shrunk;
    for (int top = 0; top < int(m_items.size()) && itemAt(top)->rows.first() < m_base; ++top) {
        Item* item = itemAt(top);
        const auto gone = int(std::lower_bound(item->rows.cbegin(), item->rows.cend(), m_base) - item->rows.cbegin());
        if (gone == item->rows.size()) {
            emptied.append(top);
            continue;
        }
        // A group left with one row becomes a line of its own: all its children go.
        const int lastChild = item->rows.size() - gone == 1 ? int(item->rows.size()) - 1 : gone - 1;
        beginRemoveRows(index(top, 0), 0, lastChild);
        item->rows.remove(0, gone);
        item->rowRanks.remove(0, gone);
        item->claimedRanks = item->rowRanks;
        endRemoveRows();
        shrunk.append(item);
    }
    // Contiguous runs of emptied items, last run first so that earlier rows keep their numbers.
    for (qsizetype end = emptied.size(); end > 0;) {
        qsizetype begin = end - 1;
        while (begin > 0 && emptied[begin - 1] == emptied[begin] - 1)
            --begin;
        beginRemoveRows({}, emptied[begin], emptied[end - 1]);
        for (qsizetype i = begin; i < end; ++i) {
            const Item* item = itemAt(emptied[i]);
            if (m_newestByText.value(item->text) == item)
                m_newestByText.remove(item->text);
        }
        m_items.erase(m_items.begin() + emptied[begin], m_items.begin() + emptied[end - 1] + 1);
        endRemoveRows();
        end = begin;
    }
    for (const Item* item : std::as_const(shrunk)) {
        const int top = topRowOf(item);
        Q_EMIT dataChanged(index(top, 0), index(top, columnCount() - 1));
    }
}

void LogCollapseModel::onSourceDataChanged(const QModelIndex& topLeft, const QModelIndex& bottomRight) {
    if (topLeft.parent().isValid())
        return;
    for (int row = topLeft.row(); row <= bottomRight.row() && row < int(m_itemOfRow.size()); ++row) {
        Item* item = m_itemOfRow[size_t(row)];
        const QString text =
            withoutProcessPrefix(m_source->index(row, LogModel::TextColumn).data(LogModel::TextRole).toString()).toString();
        if (text != item->text) { // a continued line
            if (item->isGroup()) {
                rebuild(); // its group no longer holds one text; rare, as pieces arrive a tick apart
                return;
            }
            if (m_newestByText.value(item->text) == item)
                m_newestByText.remove(item->text);
            item->text = text;
            m_newestByText.insert(text, item);
        }
        const QModelIndex shown = indexForSourceRow(row);
        Q_EMIT dataChanged(shown.siblingAtColumn(0), shown.siblingAtColumn(columnCount() - 1));
        if (shown.parent().isValid())
            Q_EMIT dataChanged(shown.parent(), shown.parent().siblingAtColumn(columnCount() - 1));
    }
}

int LogCollapseModel::topRowOf(const Item* item) const {
    const auto it = std::lower_bound(m_items.cbegin(), m_items.cend(), item->sequence,
                                     [](const std::unique_ptr<Item>& a, qint64 s) { return a->sequence < s; });
    return it != m_items.cend() && it->get() == item ? int(it - m_items.cbegin()) : -1;
}

int LogCollapseModel::sourceRow(const QModelIndex& index) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return -1;
    if (const auto* group = static_cast<const Item*>(index.internalPointer()))
        return int(group->rows[index.row()] - m_base);
    const Item* item = itemAt(index.row());
    return item->isGroup() ? -1 : int(item->rows.first() - m_base);
}

QModelIndex LogCollapseModel::indexForSourceRow(int sourceRow, int column) const {
    if (sourceRow < 0 || sourceRow >= int(m_itemOfRow.size()))
        return {};
    Item* item = m_itemOfRow[size_t(sourceRow)];
    const int top = topRowOf(item);
    if (top < 0)
        return {};
    if (!item->isGroup())
        return index(top, column);
    const auto child = std::lower_bound(item->rows.cbegin(), item->rows.cend(), m_base + sourceRow);
    if (child == item->rows.cend() || *child != m_base + sourceRow)
        return {}; // decided on, not inserted yet
    return createIndex(int(child - item->rows.cbegin()), column, item);
}

QModelIndex LogCollapseModel::index(int row, int column, const QModelIndex& parent) const {
    if (row < 0 || column < 0 || column >= columnCount(parent) || row >= rowCount(parent))
        return {};
    if (!parent.isValid())
        return createIndex(row, column, nullptr);
    return createIndex(row, column, itemAt(parent.row()));
}

QModelIndex LogCollapseModel::parent(const QModelIndex& child) const {
    const auto* group = child.isValid() ? static_cast<const Item*>(child.internalPointer()) : nullptr;
    if (!group)
        return {};
    const int top = topRowOf(group);
    return top < 0 ? QModelIndex() : createIndex(top, 0, nullptr);
}

int LogCollapseModel::rowCount(const QModelIndex& parent) const {
    if (!parent.isValid())
        return int(m_items.size());
    if (parent.internalPointer() || parent.column() != 0)
        return 0;
    const Item* item = itemAt(parent.row());
    return item->isGroup() ? int(item->rows.size()) : 0;
}

int LogCollapseModel::columnCount(const QModelIndex& parent) const {
    Q_UNUSED(parent)
    return m_source ? m_source->columnCount() : LogModel::ColumnCount;
}

QModelIndex LogCollapseModel::sourceIndex(qint64 absoluteRow, int column) const {
    return m_source ? m_source->index(int(absoluteRow - m_base), column) : QModelIndex();
}

QVariant LogCollapseModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    if (const auto* group = static_cast<const Item*>(index.internalPointer())) {
        if (role == MemberCountRole)
            return 1;
        return sourceIndex(group->rows[index.row()], index.column()).data(role);
    }
    const Item& item = *itemAt(index.row());
    if (item.isGroup())
        return groupData(item, index.column(), role);
    if (role == MemberCountRole)
        return 1;
    if (role == RankListRole)
        return QString::number(item.rowRanks.first());
    return sourceIndex(item.rows.first(), index.column()).data(role);
}

QVariant LogCollapseModel::groupData(const Item& item, int column, int role) const {
    switch (role) {
    case MemberCountRole:
        return int(item.rows.size());
    case RankListRole:
        return formatRankList(item.rowRanks);
    case LogModel::RankRole:
        return -1;
    case Qt::DisplayRole:
        if (column == LogModel::RankColumn)
            return tr("%n ranks", nullptr, int(item.rows.size()));
        if (column == LogModel::TextColumn)
            return tr("ranks %1: %2").arg(formatRankList(item.rowRanks), item.text);
        break;
    case Qt::ToolTipRole:
        if (column == LogModel::RankColumn || column == LogModel::TextColumn)
            return tr("Printed by ranks %1").arg(formatRankList(item.rowRanks));
        break;
    default:
        break;
    }
    return sourceIndex(item.rows.first(), column).data(role);
}

QVariant LogCollapseModel::headerData(int section, Qt::Orientation orientation, int role) const {
    return m_source ? m_source->headerData(section, orientation, role)
                    : QAbstractItemModel::headerData(section, orientation, role);
}

} // namespace rankscope::gui
