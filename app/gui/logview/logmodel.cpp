// SPDX-License-Identifier: MIT
#include "logview/logmodel.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <QFontDatabase>

#include <algorithm>
#include <tuple>

namespace rankscope::gui {
namespace {

QString formatTime(double unixSeconds, const QString& format) {
    return QDateTime::fromMSecsSinceEpoch(qint64(unixSeconds * 1000.0 + 0.5)).toString(format);
}

QVariant severityForeground(LogSeverity severity) {
    switch (severity) {
    case LogSeverity::Fatal:
    case LogSeverity::Error:
        return QBrush(QColor(0xb7, 0x1c, 0x1c));
    case LogSeverity::Warning:
        return QBrush(QColor(0x9a, 0x5b, 0x00));
    case LogSeverity::Debug:
        return QBrush(QColor(0x75, 0x75, 0x75));
    case LogSeverity::Info:
        break;
    }
    return {};
}

// Errors tint their row red; NCCL lines, the ones to read when collectives misbehave, tint it blue.
QVariant rowBackground(const LogModel::Line& line) {
    if (line.severity >= LogSeverity::Error)
        return QBrush(QColor(0xfd, 0xe8, 0xe8));
    if (line.nccl)
        return QBrush(QColor(0xe3, 0xef, 0xfb));
    return {};
}

LogModel::Line makeLine(const RankLogLine& piece) {
    LogModel::Line line;
    line.text = piece.text;
    line.receivedAt = piece.receivedAt;
    line.timeUnknown = piece.receivedAt <= 0.0; // read back from a run stored without arrival times
    line.lineNumber = piece.lineNumber;
    line.rank = piece.rank;
    line.stream = piece.stream;
    if (piece.severity >= 0) { // classified by the engine, off this thread
        line.severity = LogSeverity(piece.severity);
        line.nccl = piece.nccl;
        return line;
    }
    const LogLineTraits traits = classifyLogLine(line.text);
    line.severity = traits.severity;
    line.nccl = traits.nccl;
    return line;
}

void extend(LogModel::Line& line, const QString& piece) {
    line.text += piece;
    const LogLineTraits traits = classifyLogLine(line.text);
    line.severity = traits.severity;
    line.nccl = traits.nccl;
}

} // namespace

LogModel::LogModel(QObject* parent)
    : QAbstractTableModel(parent), m_textFont(QFontDatabase::systemFont(QFontDatabase::FixedFont)) {}

int LogModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_lines.size());
}

int LogModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant LogModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Line& line = m_lines[size_t(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        return displayData(line, index.column());
    case Qt::ToolTipRole:
        if (index.column() == TimeColumn && line.timeUnknown)
            return tr("read back from the run store: when it arrived is not recorded");
        return index.column() == TimeColumn ? formatTime(line.receivedAt, QStringLiteral("yyyy-MM-dd hh:mm:ss.zzz"))
                                            : displayData(line, index.column());
    case Qt::FontRole:
        return index.column() == TextColumn ? QVariant(m_textFont) : QVariant();
    case Qt::ForegroundRole:
        return severityForeground(line.severity);
    case Qt::BackgroundRole:
        return rowBackground(line);
    case RankRole:
        return line.rank;
    case SeverityRole:
        return int(line.severity);
    case NcclRole:
        return line.nccl;
    case StreamRole:
        return int(line.stream);
    case SortRole:
        return sortData(line, index.column());
    case TimeRole:
        return line.receivedAt;
    case LineNumberRole:
        return line.lineNumber;
    case TextRole:
        return line.text;
    default:
        return {};
    }
}

QVariant LogModel::displayData(const Line& line, int column) const {
    switch (column) {
    case TimeColumn:
        return line.timeUnknown ? tr("(stored)") : formatTime(line.receivedAt, QStringLiteral("hh:mm:ss.zzz"));
    case RankColumn:
        return hostRankLabel(line.rank);
    case StreamColumn:
        return rankStreamSuffix(line.stream);
    case SeverityColumn:
        return logSeverityName(line.severity);
    case TextColumn:
        return line.text;
    default:
        return {};
    }
}

QVariant LogModel::sortData(const Line& line, int column) const {
    switch (column) {
    case TimeColumn:
        return line.receivedAt;
    case RankColumn:
        return line.rank;
    case StreamColumn:
        return int(line.stream);
    case SeverityColumn:
        return int(line.severity);
    case TextColumn:
        return line.text;
    default:
        return {};
    }
}

QVariant LogModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case TimeColumn:
        return tr("Time");
    case RankColumn:
        return tr("host:rank");
    case StreamColumn:
        return tr("Stream");
    case SeverityColumn:
        return tr("Severity");
    case TextColumn:
        return tr("Line");
    default:
        return {};
    }
}

QString LogModel::hostRankLabel(int rank) const {
    const QString host = m_rankHosts.value(rank);
    return host.isEmpty() ? QString::number(rank) : QStringLiteral("%1:%2").arg(host).arg(rank);
}

void LogModel::setRankHosts(const QHash<int, QString>& hosts) {
    m_rankHosts = hosts;
    if (!m_lines.empty())
        Q_EMIT dataChanged(index(0, RankColumn), index(rowCount() - 1, RankColumn), {Qt::DisplayRole});
}

int LogModel::continueRow(const RankLogLine& piece) {
    const auto last = m_lastRowOfStream.constFind(streamKey(piece.rank, piece.stream));
    if (last == m_lastRowOfStream.cend() || *last < m_origin)
        return -1;
    const int row = int(*last - m_origin);
    Line& line = m_lines[size_t(row)];
    if (line.lineNumber != piece.lineNumber)
        return -1;
    extend(line, piece.text);
    return row;
}

void LogModel::appendLines(const QVector<RankLogLine>& batch) {
    std::vector<Line> fresh;
    fresh.reserve(size_t(batch.size()));
    QHash<StreamKey, size_t> lastFresh; // a stream's newest line in `fresh`
    int firstChanged = rowCount();
    int lastChanged = -1;
    for (const RankLogLine& piece : batch) {
        const StreamKey key = streamKey(piece.rank, piece.stream);
        const auto inBatch = lastFresh.constFind(key);
        if (inBatch != lastFresh.cend()) {
            if (fresh[*inBatch].lineNumber == piece.lineNumber) {
                extend(fresh[*inBatch], piece.text);
                continue;
            }
        } else if (const int row = continueRow(piece); row >= 0) {
            firstChanged = std::min(firstChanged, row);
            lastChanged = std::max(lastChanged, row);
            continue;
        }
        lastFresh.insert(key, fresh.size());
        fresh.push_back(makeLine(piece));
        if (!m_firstLine.contains(key))
            m_firstLine.insert(key, piece.lineNumber);
    }
    if (lastChanged >= 0)
        Q_EMIT dataChanged(index(firstChanged, 0), index(lastChanged, ColumnCount - 1));
    if (fresh.empty())
        return;

    // Arrival order across ranks; a stable sort keeps each stream's own order among equal times.
    std::stable_sort(fresh.begin(), fresh.end(), [](const Line& a, const Line& b) {
        return std::tie(a.receivedAt, a.rank, a.stream, a.lineNumber) <
               std::tie(b.receivedAt, b.rank, b.stream, b.lineNumber);
    });
    auto first = fresh.begin();
    if (fresh.size() > size_t(window())) { // a batch larger than the window keeps only its newest lines
        dropOldest(rowCount());
        const auto skipped = qint64(fresh.size()) - window();
        for (auto it = first; it != first + skipped; ++it)
            noteGone(*it);
        m_dropped += skipped;
        m_origin += skipped;
        first += skipped;
        Q_EMIT droppedRowsChanged(m_dropped);
    }
    const qsizetype count = fresh.end() - first;
    dropOldest(rowCount() + count - window());

    const int start = rowCount();
    beginInsertRows({}, start, start + int(count) - 1);
    for (auto it = first; it != fresh.end(); ++it) {
        m_lastRowOfStream.insert(streamKey(it->rank, it->stream), m_origin + qint64(m_lines.size()));
        m_lines.push_back(std::move(*it));
    }
    endInsertRows();
}

void LogModel::dropOldest(qsizetype count) {
    count = std::min<qsizetype>(count, rowCount());
    if (count <= 0)
        return;
    beginRemoveRows({}, 0, int(count) - 1);
    for (auto it = m_lines.begin(); it != m_lines.begin() + count; ++it)
        noteGone(*it);
    m_lines.erase(m_lines.begin(), m_lines.begin() + count);
    m_dropped += count;
    m_origin += count;
    m_held = std::max<qint64>(0, m_held - count);
    endRemoveRows();
    Q_EMIT droppedRowsChanged(m_dropped);
}

void LogModel::setMaxRows(int maxRows) {
    m_maxRows = std::max(1, maxRows);
    m_held = std::min<qint64>(m_held, m_maxRows);
    dropOldest(rowCount() - window());
}

void LogModel::noteGone(const Line& line) {
    if (line.stream == RankStream::Events)
        return; // the events file's other lines are not read back: it is mostly events
    qint64& first = m_firstLine[streamKey(line.rank, line.stream)];
    first = std::max(first, line.lineNumber + 1);
}

qint64 LogModel::olderLines() const {
    qint64 older = 0;
    for (auto it = m_firstLine.cbegin(); it != m_firstLine.cend(); ++it)
        if (RankStream(it.key() & 0xff) != RankStream::Events)
            older += std::max<qint64>(0, it.value() - 1);
    return older;
}

QVector<QPair<int, RankStream>> LogModel::streamsWithOlderLines() const {
    QVector<QPair<int, RankStream>> streams;
    for (auto it = m_firstLine.cbegin(); it != m_firstLine.cend(); ++it)
        if (RankStream(it.key() & 0xff) != RankStream::Events && it.value() > 1)
            streams.append({int(it.key() >> 8), RankStream(it.key() & 0xff)});
    std::sort(streams.begin(), streams.end(), [](const auto& a, const auto& b) {
        return std::tie(a.first, a.second) < std::tie(b.first, b.second);
    });
    return streams;
}

qint64 LogModel::firstLineHeld(int rank, RankStream stream) const {
    return m_firstLine.value(streamKey(rank, stream), 1);
}

void LogModel::prependOlder(const QVector<RankLogLine>& lines) {
    std::vector<Line> older;
    older.reserve(size_t(lines.size()));
    for (const RankLogLine& piece : lines) {
        if (piece.stream == RankStream::Events || piece.lineNumber < 1 ||
            piece.lineNumber >= firstLineHeld(piece.rank, piece.stream))
            continue; // not older than what is held: it would be shown twice
        older.push_back(makeLine(piece));
    }
    const auto room = qint64(m_maxRows) - m_held; // held rows stay below one window's worth
    if (older.empty() || room <= 0)
        return;
    if (qint64(older.size()) > room)
        older.erase(older.begin(), older.end() - room); // the newest of them, next to what is held
    // The merged view is in arrival order. Lines read back came before those held: one stored without its time
    // takes the oldest time held, and none is put after it (the store's clock and the engine's may differ by the
    // time between a read and its write).
    const double oldestHeld = m_lines.empty() ? 0.0 : m_lines.front().receivedAt;
    for (Line& line : older) {
        if (line.timeUnknown || (!m_lines.empty() && line.receivedAt > oldestHeld))
            line.receivedAt = oldestHeld;
        qint64& first = m_firstLine[streamKey(line.rank, line.stream)];
        first = std::min(first, line.lineNumber);
    }
    const int count = int(older.size());
    beginInsertRows({}, 0, count - 1);
    m_lines.insert(m_lines.begin(), std::make_move_iterator(older.begin()), std::make_move_iterator(older.end()));
    m_origin -= count;
    m_held += count;
    endInsertRows();
}

void LogModel::releaseOlder() {
    if (m_held == 0)
        return;
    m_held = 0;
    dropOldest(rowCount() - window());
}

void LogModel::clear() {
    beginResetModel();
    m_lines.clear();
    m_lastRowOfStream.clear();
    m_firstLine.clear();
    m_dropped = 0;
    m_origin = 0;
    m_held = 0;
    endResetModel();
    Q_EMIT droppedRowsChanged(0);
}

} // namespace rankscope::gui
