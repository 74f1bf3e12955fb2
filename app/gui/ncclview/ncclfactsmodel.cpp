// SPDX-License-Identifier: MIT
#include "ncclfactsmodel.h"

#include <QColor>
#include <QHash>

namespace rankscope::gui {

NcclFactsModel::NcclFactsModel(QObject* parent) : QAbstractTableModel(parent) {}

bool NcclFactsModel::isCompared(int column) {
    return column == VersionColumn || column == NetworkColumn || column == InterfacesColumn ||
           column == TransportsColumn || column == ChannelsColumn;
}

namespace {

QString joined(const QStringList& list) {
    return list.join(QStringLiteral(", "));
}

QString transportCounts(const QMap<QString, qint64>& transports) {
    QStringList parts;
    for (auto it = transports.cbegin(); it != transports.cend(); ++it)
        parts.append(QStringLiteral("%1 %2").arg(it.key()).arg(it.value()));
    return joined(parts);
}

} // namespace

QString NcclFactsModel::compareKey(const RankNcclFacts& row, int column) {
    switch (column) {
    case VersionColumn:
        return joined(row.versions);
    case NetworkColumn:
        return row.network;
    case InterfacesColumn:
        return joined(row.interfaces);
    case TransportsColumn:
        return joined(row.transports.keys()); // which transports: the counts differ with a rank's peers
    case ChannelsColumn:
        return row.channels > 0 ? QString::number(row.channels) : QString();
    default:
        return {};
    }
}

void NcclFactsModel::computeMajorities() {
    m_majority.clear();
    for (int column = 0; column < ColumnCount; ++column) {
        if (!isCompared(column))
            continue;
        QHash<QString, int> votes;
        for (const RankNcclFacts& row : std::as_const(m_facts))
            if (const QString key = compareKey(row, column); !key.isEmpty())
                ++votes[key];
        QString best;
        int most = 0;
        bool tie = false;
        for (auto it = votes.cbegin(); it != votes.cend(); ++it) {
            if (it.value() > most) {
                best = it.key();
                most = it.value();
                tie = false;
            } else if (it.value() == most) {
                tie = true;
            }
        }
        if (most > 0 && !tie)
            m_majority.insert(column, best);
    }
}

bool NcclFactsModel::differs(const RankNcclFacts& row, int column) const {
    if (!isCompared(column))
        return false;
    const QString key = compareKey(row, column);
    if (key.isEmpty())
        return false;
    // With no majority (two ranks, two values) every value that was printed differs.
    const auto majority = m_majority.constFind(column);
    return majority == m_majority.cend() || *majority != key;
}

void NcclFactsModel::setFacts(const QVector<RankNcclFacts>& perRank) {
    QVector<int> fresh;
    for (const RankNcclFacts& facts : perRank) {
        if (!m_facts.contains(facts.rank))
            fresh.append(facts.rank);
        m_facts.insert(facts.rank, facts);
    }
    computeMajorities();
    if (!m_rows.isEmpty())
        emit dataChanged(index(0, 0), index(int(m_rows.size()) - 1, ColumnCount - 1));
    if (!fresh.isEmpty()) {
        // Rows must not show facts before their insertion: the new ranks' rows appear here, all at once.
        beginInsertRows({}, int(m_rows.size()), int(m_rows.size() + fresh.size()) - 1);
        m_rows += fresh;
        endInsertRows();
    }
}

void NcclFactsModel::clear() {
    beginResetModel();
    m_rows.clear();
    m_facts.clear();
    m_majority.clear();
    endResetModel();
}

int NcclFactsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

int NcclFactsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant NcclFactsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= m_rows.size())
        return {};
    const RankNcclFacts& row = m_facts[m_rows[index.row()]];
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
        switch (column) {
        case RankColumn:
            return row.rank;
        case HostColumn:
            return row.host;
        case VersionColumn:
            return joined(row.versions);
        case CudaDevColumn:
            return row.cudaDev >= 0 ? QString::number(row.cudaDev) : QString();
        case BusIdColumn:
            return row.busId;
        case NetworkColumn:
            return row.network;
        case InterfacesColumn:
            return joined(row.interfaces);
        case TransportsColumn:
            return transportCounts(row.transports);
        case ChannelsColumn:
            return row.channels > 0 ? QString::number(row.channels) : QString();
        case WarningsColumn:
            // The count, and the first one: most runs repeat one warning on every rank.
            return row.warnings.isEmpty()
                       ? QString()
                       : QStringLiteral("%1 · %2").arg(row.warnings.size()).arg(row.warnings.front());
        }
        return {};
    case SortRole:
        switch (column) {
        case RankColumn:
            return row.rank;
        case CudaDevColumn:
            return row.cudaDev;
        case ChannelsColumn:
            return row.channels;
        case WarningsColumn:
            return int(row.warnings.size());
        default:
            return data(index, Qt::DisplayRole);
        }
    case RankRole:
        return row.rank;
    case DiffersRole:
        return differs(row, column);
    case Qt::BackgroundRole:
        return differs(row, column) ? QVariant(QColor(0xff, 0xe0, 0xb2)) : QVariant();
    case Qt::ForegroundRole:
        return column == WarningsColumn && !row.warnings.isEmpty() ? QVariant(QColor(0xc6, 0x28, 0x28)) : QVariant();
    case Qt::ToolTipRole:
        if (column == WarningsColumn)
            return row.warnings.join(QLatin1Char('\n'));
        if (differs(row, column))
            return m_majority.contains(column) ? QStringLiteral("most ranks: %1").arg(m_majority.value(column))
                                               : QStringLiteral("the ranks disagree");
        return {};
    case Qt::TextAlignmentRole:
        return column == RankColumn || column == CudaDevColumn || column == ChannelsColumn
                   ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                   : QVariant();
    default:
        return {};
    }
}

QVariant NcclFactsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* const names[ColumnCount] = {"Rank",    "Host",       "NCCL",       "CUDA dev", "Bus id",
                                                   "Network", "Interfaces", "Transports", "Channels", "Warnings"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

} // namespace rankscope::gui
