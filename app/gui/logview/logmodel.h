// SPDX-License-Identifier: MIT
#pragma once

#include "core/logclassify.h"
#include "core/runstore.h"

#include <QAbstractTableModel>
#include <QFont>
#include <QHash>

#include <deque>

namespace rankscope::gui {

// One row per log line of every rank, merged in arrival order. Live batches are appended with one
// insertion each, and the model keeps a bounded window: the oldest rows go once it is full (the run
// store on disk keeps every line). Raw values are under SortRole and the custom roles; only DisplayRole
// formats.
class LogModel final : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { TimeColumn, RankColumn, StreamColumn, SeverityColumn, TextColumn, ColumnCount };
    enum Role {
        RankRole = Qt::UserRole + 1, // int
        SeverityRole,                // int, a LogSeverity
        NcclRole,                    // bool
        StreamRole,                  // int, a RankStream
        SortRole,                    // the column's raw value: double time, int rank, int stream, int severity, text
        TimeRole,                    // double, Unix seconds
        LineNumberRole,              // qint64, 1-based within its stream
        TextRole,                    // QString, the line as the rank printed it
    };
    static constexpr int kDefaultMaxRows = 200000;

    struct Line {
        QString text;
        double receivedAt = 0.0;
        qint64 lineNumber = 0;
        int rank = 0;
        RankStream stream = RankStream::Out;
        LogSeverity severity = LogSeverity::Info;
        bool nccl = false;
    };

    explicit LogModel(QObject* parent = nullptr);

    [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    [[nodiscard]] QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    // One batch from the engine, each rank's lines in stream order. A piece with the (rank, stream,
    // lineNumber) of the last row of that stream continues it; the rest is sorted by (receivedAt, rank,
    // stream, lineNumber) and appended with one insertion, after one removal of the oldest rows if needed.
    void appendLines(const QVector<RankLogLine>& batch);
    void clear();

    void setRankHosts(const QHash<int, QString>& hosts); // rank -> host name, for the host:rank column
    [[nodiscard]] QString hostRankLabel(int rank) const;

    void setMaxRows(int maxRows); // drops the oldest rows at once when the model holds more
    [[nodiscard]] int maxRows() const { return m_maxRows; }
    // Rows dropped from the front so far: older lines that are only in the run store on disk now.
    [[nodiscard]] qint64 droppedRows() const { return m_dropped; }

    [[nodiscard]] const Line& line(int row) const { return m_lines[size_t(row)]; }

Q_SIGNALS:
    void droppedRowsChanged(qint64 dropped);

private:
    using StreamKey = quint64;
    static StreamKey streamKey(int rank, RankStream stream) { return (quint64(quint32(rank)) << 8) | quint64(stream); }
    [[nodiscard]] QVariant displayData(const Line& line, int column) const;
    [[nodiscard]] QVariant sortData(const Line& line, int column) const;
    void dropOldest(qsizetype count);
    // Appends `piece` to the row that holds its line, if the model still has that row; returns its row.
    int continueRow(const RankLogLine& piece);

    std::deque<Line> m_lines;
    QHash<int, QString> m_rankHosts;
    QFont m_textFont; // monospace, for the text column
    // The absolute number (m_dropped + row) of the last row of each (rank, stream), for continuations.
    QHash<StreamKey, qint64> m_lastRowOfStream;
    qint64 m_dropped = 0;
    int m_maxRows = kDefaultMaxRows;
};

} // namespace rankscope::gui
