// SPDX-License-Identifier: MIT
#include "streamlines.h"

#include "core/arrivalorder.h"

#include <QFile>

#include <algorithm>
#include <cstring>
#include <utility>

namespace rankscope {

StreamLineReader::StreamLineReader(QString path) : m_path(std::move(path)) {}

void StreamLineReader::extend() {
    QFile file(m_path);
    if (!file.open(QIODevice::ReadOnly) || file.size() <= m_scanned)
        return;
    if (!file.seek(m_scanned))
        return;
    constexpr qint64 kChunk = 1 << 20;
    qint64 offset = m_scanned;
    while (true) {
        const QByteArray chunk = file.read(kChunk);
        if (chunk.isEmpty())
            break;
        const char* begin = chunk.constData();
        const char* end = begin + chunk.size();
        for (const char* p = begin; p < end;) {
            const void* found = std::memchr(p, '\n', static_cast<size_t>(end - p));
            if (!found)
                break;
            const char* newline = static_cast<const char*>(found);
            ++m_lines;
            m_scanned = offset + (newline - begin) + 1;
            if (m_lines % kIndexStride == 0)
                m_checkpoints.append(m_scanned); // where line m_lines + 1 starts
            p = newline + 1;
        }
        offset += chunk.size();
    }
}

qint64 StreamLineReader::lineCount() {
    extend();
    return m_lines;
}

StreamLineReader::Page StreamLineReader::read(qint64 from, int count) {
    extend();
    Page page;
    page.total = m_lines;
    page.first = std::max<qint64>(from, 1);
    if (count <= 0 || page.first > m_lines)
        return page;
    QFile file(m_path);
    if (!file.open(QIODevice::ReadOnly))
        return page;
    const qint64 checkpoint = (page.first - 1) / kIndexStride;
    qint64 line = checkpoint * kIndexStride + 1;
    if (!file.seek(m_checkpoints.value(checkpoint)))
        return page;
    const qint64 last = std::min<qint64>(m_lines, page.first + count - 1);
    qint64 offset = file.pos();
    while (line <= last) {
        QByteArray bytes = file.readLine();
        if (bytes.isEmpty() || !bytes.endsWith('\n'))
            break; // truncated under us
        offset += bytes.size();
        if (line >= page.first) {
            bytes.chop(bytes.endsWith("\r\n") ? 2 : 1);
            page.lines.append(QString::fromUtf8(bytes));
            page.ends.append(offset);
        }
        ++line;
    }
    return page;
}

RunLinePager::RunLinePager(const RunStore* store, QString runId) : m_store(store), m_runId(std::move(runId)) {}

QVector<RankLogLine> RunLinePager::before(int rank, RankStream stream, qint64 before, int count) {
    const qint64 from = std::max<qint64>(1, before - count);
    if (count <= 0 || before <= 1)
        return {};
    const QString path = m_store->streamPath(m_runId, rank, stream);
    std::shared_ptr<StreamLineReader>& reader = m_readers[path];
    if (!reader)
        reader = std::make_shared<StreamLineReader>(path);
    const StreamLineReader::Page page = reader->read(from, int(before - from));
    // Read after the lines: bytes appended in between are past the last piece and take its time.
    const QVector<StoredPiece> pieces = storedPieces(*m_store, m_runId, rank, stream);
    QVector<RankLogLine> lines;
    lines.reserve(page.lines.size());
    for (qsizetype i = 0; i < page.lines.size(); ++i)
        lines.append({rank, stream, page.first + i, page.lines[i], arrivalOfLineEnding(pieces, page.ends[i])});
    return lines;
}

QVector<RankLogLine> RunLinePager::before(const QVector<StreamStart>& streams, int count) {
    QVector<RankLogLine> lines;
    double complete = 0.0; // every stream's lines from this time on are here
    for (const StreamStart& start : streams) {
        const QVector<RankLogLine> read = before(start.rank, start.stream, start.before, count);
        if (read.isEmpty())
            continue;
        if (read.front().lineNumber > 1) // more before: none of its lines older than this one is here
            complete = std::max(complete, read.front().receivedAt);
        lines += read;
    }
    // In arrival order; each stream's own lines already are, so a stable sort keeps them as they were.
    std::stable_sort(lines.begin(), lines.end(),
                     [](const RankLogLine& a, const RankLogLine& b) { return a.receivedAt < b.receivedAt; });
    const auto kept = std::lower_bound(lines.cbegin(), lines.cend(), complete,
                                       [](const RankLogLine& line, double time) { return line.receivedAt < time; });
    lines.erase(lines.cbegin(), kept);
    return lines;
}

} // namespace rankscope
