// SPDX-License-Identifier: MIT
#include "stacktreemodel.h"

#include "core/ranklist.h"

#include <QFont>

namespace rankscope::gui {

QColor waitKindColor(WaitKind kind) {
    switch (kind) {
    case WaitKind::C10d:
    case WaitKind::Gloo:
    case WaitKind::Nccl:
        return QColor(0xc6, 0x28, 0x28);
    case WaitKind::Sleep:
        return QColor(0xe6, 0x51, 0x00);
    case WaitKind::None:
        break;
    }
    return {};
}

StackTreeModel::StackTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

void StackTreeModel::setTree(const StackTree& tree) {
    // A capture replaces the previous one whole: it is a new snapshot, not an update of the old tree.
    beginResetModel();
    m_tree = tree;
    m_places.clear();
    indexNodes(m_tree.root());
    endResetModel();
}

void StackTreeModel::clear() {
    setTree(StackTree());
}

void StackTreeModel::indexNodes(const StackNode& node) {
    for (qsizetype i = 0; i < node.children.size(); ++i) {
        m_places.insert(&node.children[i], {&node, int(i)});
        indexNodes(node.children[i]);
    }
}

const StackNode* StackTreeModel::node(const QModelIndex& index) const {
    return index.isValid() ? static_cast<const StackNode*>(index.internalPointer()) : nullptr;
}

const StackNode& StackTreeModel::nodeOrRoot(const QModelIndex& index) const {
    const StackNode* n = node(index);
    return n ? *n : m_tree.root();
}

QModelIndex StackTreeModel::find(const QString& text, const QModelIndex& from) const {
    for (int row = 0; row < rowCount(from); ++row) {
        const QModelIndex child = index(row, FrameColumn, from);
        if (node(child)->function.contains(text))
            return child;
        if (const QModelIndex found = find(text, child); found.isValid())
            return found;
    }
    return {};
}

QModelIndex StackTreeModel::index(int row, int column, const QModelIndex& parent) const {
    if (!hasIndex(row, column, parent))
        return {};
    const StackNode& p = nodeOrRoot(parent);
    return createIndex(row, column, const_cast<StackNode*>(&p.children[row]));
}

QModelIndex StackTreeModel::parent(const QModelIndex& child) const {
    const StackNode* n = node(child);
    if (!n)
        return {};
    const StackNode* p = m_places.value(n).parent;
    if (!p || p == &m_tree.root())
        return {};
    return createIndex(m_places.value(p).row, FrameColumn, const_cast<StackNode*>(p));
}

int StackTreeModel::rowCount(const QModelIndex& parent) const {
    if (parent.isValid() && parent.column() != FrameColumn)
        return 0;
    return int(nodeOrRoot(parent).children.size());
}

int StackTreeModel::columnCount(const QModelIndex&) const {
    return ColumnCount;
}

bool StackTreeModel::splitsFromParent(const StackNode& node) const {
    const StackNode* p = m_places.value(&node).parent;
    // Under the root every outermost frame would "split": only a frame below a shared frame counts.
    return p && p != &m_tree.root() && p->threads.keys() != node.threads.keys();
}

QVariant StackTreeModel::data(const QModelIndex& index, int role) const {
    const StackNode* n = node(index);
    if (!n)
        return {};
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
        return display(*n, column);
    case Qt::ToolTipRole:
        if (column == FrameColumn)
            return n->label();
        if (column == LocationColumn)
            return n->locations.join(QLatin1Char('\n'));
        if (column == RanksColumn)
            return splitsFromParent(*n)
                       ? QStringLiteral("the ranks part here: %1 of the outer frame's %2")
                             .arg(formatRankList(n->ranks()), formatRankList(m_places.value(n).parent->ranks()))
                       : QStringLiteral("ranks %1").arg(formatRankList(n->ranks()));
        return {};
    case Qt::ForegroundRole:
        if (n->wait != WaitKind::None && (column == FrameColumn || column == WaitColumn))
            return waitKindColor(n->wait);
        if (n->mainThread.isEmpty()) // helper threads (Gloo loops, heartbeat) recede behind the main threads
            return QColor(0x61, 0x61, 0x61);
        return {};
    case Qt::BackgroundRole:
        if (column == RanksColumn && splitsFromParent(*n))
            return QColor(0xff, 0xf3, 0xc4);
        return {};
    case Qt::FontRole:
        if ((column == RanksColumn && splitsFromParent(*n)) || (column == WaitColumn && n->wait != WaitKind::None)) {
            QFont font;
            font.setBold(true);
            return font;
        }
        return {};
    case SortRole:
        return sortValue(*n, column);
    case RanksRole:
        return QVariant::fromValue(QList<int>(n->ranks()));
    case WaitRole:
        return int(n->wait);
    case SplitRole:
        return splitsFromParent(*n);
    case MainThreadRole:
        return !n->mainThread.isEmpty();
    default:
        return {};
    }
}

QVariant StackTreeModel::display(const StackNode& node, int column) const {
    switch (column) {
    case FrameColumn:
        return node.label();
    case RanksColumn: {
        const QString ranks = formatRankList(node.ranks());
        int threads = 0;
        for (const int count : node.threads)
            threads += count;
        return threads == node.threads.size() ? ranks : QStringLiteral("%1 · %2 threads").arg(ranks).arg(threads);
    }
    case LocationColumn:
        return node.locations.isEmpty() ? node.library : node.locations.join(QStringLiteral(", "));
    case WaitColumn:
        return waitKindName(node.wait);
    default:
        return {};
    }
}

QVariant StackTreeModel::sortValue(const StackNode& node, int column) const {
    switch (column) {
    case FrameColumn:
        return node.function;
    case RanksColumn:
        return int(node.threads.size());
    case LocationColumn:
        return node.locations.value(0);
    case WaitColumn:
        return int(node.wait);
    default:
        return {};
    }
}

QVariant StackTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case FrameColumn:
        return QStringLiteral("Frame");
    case RanksColumn:
        return QStringLiteral("Ranks");
    case LocationColumn:
        return QStringLiteral("Location");
    case WaitColumn:
        return QStringLiteral("Waits for");
    default:
        return {};
    }
}

} // namespace rankscope::gui
