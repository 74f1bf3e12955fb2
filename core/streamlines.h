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

    // Up to `count` lines of (rank, stream) just before line number `before` (1-based), oldest first, numbered.
    [[nodiscard]] QVector<RankLogLine> before(int rank, RankStream stream, qint64 before, int count);

private:
    const RunStore* m_store;
    QString m_runId;
    QHash<QString, std::shared_ptr<StreamLineReader>> m_readers; // by path
};

} // namespace rankscope
