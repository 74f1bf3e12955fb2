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
        // Read back from a run stored before arrival times were kept (a replay, or prependOlder): when it arrived
        // is not known. Shown as "(stored)".
        bool timeUnknown = false;
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
    // Rows dropped from the front so far (a count that only grows).
    [[nodiscard]] qint64 droppedRows() const { return m_dropped; }
    // Lines of the ranks' stdout and stderr that come before the ones held here: in the run store on disk only.
    [[nodiscard]] qint64 olderLines() const;
    // The number of the oldest line of (rank, stream) that may still be here: the lines before it are older.
    [[nodiscard]] qint64 firstLineHeld(int rank, RankStream stream) const;
    // Older lines read back from the run store, in arrival order (RunLinePager::before), inserted at the top
    // (one insertion), each before the lines held of its stream. They are held while the user reads them: the window
    // grows by them, up to twice its size, until releaseOlder() (following the newest lines again) lets them go.
    void prependOlder(const QVector<RankLogLine>& lines);
    // The (rank, stream) pairs with older lines in the store, in rank order, stdout before stderr.
    [[nodiscard]] QVector<QPair<int, RankStream>> streamsWithOlderLines() const;
    void releaseOlder();
    // Room for more lines read back (they are held up to one window's worth).
    [[nodiscard]] bool canHoldOlder() const { return m_held < m_maxRows; }

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

    void noteGone(const Line& line); // a line leaves the model: its stream's older lines now include it
    [[nodiscard]] qint64 window() const { return qint64(m_maxRows) + m_held; }

    std::deque<Line> m_lines;
    QHash<int, QString> m_rankHosts;
    QFont m_textFont; // monospace, for the text column
    // The absolute number (m_origin + row) of the last row of each (rank, stream), for continuations.
    QHash<StreamKey, qint64> m_lastRowOfStream;
    qint64 m_dropped = 0;
    qint64 m_origin = 0; // the absolute number of row 0: rows are numbered m_origin + row
    qint64 m_held = 0;   // rows of prependOlder() kept beyond the window
    QHash<StreamKey, qint64> m_firstLine; // per stream: the first line number that may be held
    int m_maxRows = kDefaultMaxRows;
};

} // namespace rankscope::gui
