// SPDX-License-Identifier: MIT
#pragma once

#include "core/runstore.h"

#include <QHash>
#include <QString>
#include <QVector>

#include <memory>

namespace rankscope {

// Pages through a growing line-oriented file (a rank's stream in the run store) by line number without
// reading it from the start each time: a sparse index (the offset of every 1024th line) is extended as the
// file grows. Only complete lines count; a last line without its newline is not a line yet.
class StreamLineReader final {
public:
    explicit StreamLineReader(QString path);

    struct Page {
        QVector<QString> lines; // decoded as UTF-8 (invalid bytes replaced), without the newline
        QVector<qint64> ends;   // per line: the byte offset just after its newline in the file
        qint64 first = 1;       // the number of lines[0]; numbers start at 1
        qint64 total = 0;       // complete lines in the file when read
    };
    // Up to `count` lines from line number `from` (1-based). Past the end: no lines, total still set.
    // An unreadable or missing file reads as empty.
    [[nodiscard]] Page read(qint64 from, int count);
    [[nodiscard]] qint64 lineCount(); // complete lines now

    static constexpr qint64 kIndexStride = 1024;

private:
    void extend(); // index what was appended since the last call

    QString m_path;
    QVector<qint64> m_checkpoints{0}; // byte offset of line 1, 1 + stride, 1 + 2*stride, ...
    qint64 m_scanned = 0;             // bytes indexed: the end of the last complete line
    qint64 m_lines = 0;
};

// The stored stdout and stderr of one run's ranks, read back by line number: the lines a view's window let go.
// One StreamLineReader per stream, so paging back through a long log reads each byte once.
class RunLinePager final {
public:
    RunLinePager(const RunStore* store, QString runId);

    // Up to `count` lines of (rank, stream) just before line number `before` (1-based), oldest first, numbered,
    // each with the time it arrived (RunStore::arrivals; 0 for a run stored before arrivals were kept).
    [[nodiscard]] QVector<RankLogLine> before(int rank, RankStream stream, qint64 before, int count);

    // A stream to read back, and the number of its oldest line already shown.
    struct StreamStart {
        int rank = 0;
        RankStream stream = RankStream::Out;
        qint64 before = 1;
    };
    // Up to `count` lines of each stream just before its `before`, merged in the order they arrived, as the
    // lines were shown live. A stream with more lines than `count` leaves a hole before the oldest line read:
    // the other streams' lines older than that one are left out too (the next call reads them), so the lines
    // given have no stretch where one stream's lines are missing. Among equal times, and for runs stored without
    // arrivals, the streams keep the order given.
    [[nodiscard]] QVector<RankLogLine> before(const QVector<StreamStart>& streams, int count);

private:
    const RunStore* m_store;
    QString m_runId;
    QHash<QString, std::shared_ptr<StreamLineReader>> m_readers; // by path
};

} // namespace rankscope
