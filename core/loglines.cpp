// SPDX-License-Identifier: MIT
#include "core/loglines.h"

#include "core/logprefix.h"

#include <cstring>
#include <utility>

namespace rankscope {

namespace {

QByteArrayView withoutCr(QByteArrayView line) {
    return line.endsWith('\r') ? line.chopped(1) : line;
}

} // namespace

qsizetype findBytes(QByteArrayView haystack, QByteArrayView needle, qsizetype from) {
    if (from < 0 || from > haystack.size())
        return -1;
    const char* const begin = haystack.data();
    const char* at = begin + from;
    const char* const end = begin + haystack.size();
    if (needle.isEmpty())
        return from;
#ifdef __GLIBC__
    // memmem pays on a whole chunk; on a line its setup costs more than it saves.
    if (end - at > 512)
        return [&] {
            const void* hit = memmem(at, static_cast<size_t>(end - at), needle.data(), static_cast<size_t>(needle.size()));
            return hit ? static_cast<const char*>(hit) - begin : qsizetype(-1);
        }();
#endif
    const char first = needle.front();
    const size_t rest = static_cast<size_t>(needle.size() - 1);
    while (end - at >= needle.size()) {
        at = static_cast<const char*>(std::memchr(at, first, static_cast<size_t>(end - at) - rest));
        if (!at)
            return -1;
        if (std::memcmp(at + 1, needle.data() + 1, rest) == 0)
            return at - begin;
        ++at;
    }
    return -1;
}

LogLineScanner::LogLineScanner(QList<QByteArray> keywords, QList<LogLineSink*> sinks, qsizetype maxLineBytes)
    : m_keywords(std::move(keywords)), m_nextHit(m_keywords.size(), 0), m_sinks(std::move(sinks)),
      m_maxLineBytes(std::max<qsizetype>(maxLineBytes, 16)) {}

bool LogLineScanner::anyWantsEveryLine() const {
    for (const LogLineSink* sink : m_sinks) {
        if (sink->wantsEveryLine())
            return true;
    }
    return false;
}

bool LogLineScanner::hasKeyword(QByteArrayView text) const {
    for (const QByteArray& keyword : m_keywords) {
        if (findBytes(text, keyword) >= 0)
            return true;
    }
    return false;
}

// The cached next occurrence of each keyword is searched again only once the scan has passed it, so each
// keyword costs one memmem per occurrence, not one per line.
bool LogLineScanner::chunkLineHasKeyword(QByteArrayView chunk, qsizetype start, qsizetype end) {
    bool found = false;
    for (qsizetype k = 0; k < m_keywords.size(); ++k) {
        qsizetype& next = m_nextHit[k];
        if (next < start) {
            next = findBytes(chunk, m_keywords[k], start);
            if (next < 0)
                next = chunk.size();
        }
        if (next + m_keywords[k].size() <= end)
            found = true;
    }
    return found;
}

void LogLineScanner::feed(QByteArrayView chunk) {
    qsizetype pos = 0;
    if (m_inLine) {
        const qsizetype newline = chunk.indexOf('\n');
        if (newline < 0) {
            appendPartial(chunk);
            return;
        }
        appendPartial(chunk.first(newline));
        endPartialLine();
        pos = newline + 1;
    }
    std::fill(m_nextHit.begin(), m_nextHit.end(), -1);
    while (pos < chunk.size()) {
        const void* found = std::memchr(chunk.data() + pos, '\n', static_cast<size_t>(chunk.size() - pos));
        if (!found) {
            appendPartial(chunk.sliced(pos));
            break;
        }
        const qsizetype newline = static_cast<const char*>(found) - chunk.data();
        const QByteArrayView line = withoutCr(chunk.sliced(pos, newline - pos));
        const QByteArrayView capped = line.first(std::min(line.size(), m_maxLineBytes));
        ++m_lineNumber;
        if (chunkLineHasKeyword(chunk, pos, pos + capped.size()) || anyWantsEveryLine())
            deliver(capped);
        pos = newline + 1;
    }
}

void LogLineScanner::appendPartial(QByteArrayView bytes) {
    m_inLine = true;
    const qsizetype room = m_maxLineBytes + 1 - m_partial.size(); // one more byte: a '\r' may precede '\n'
    if (room > 0)
        m_partial.append(bytes.first(std::min(room, bytes.size())));
}

void LogLineScanner::endPartialLine() {
    QByteArrayView line = m_partial;
    if (line.size() > m_maxLineBytes || line.endsWith('\r'))
        line = withoutCr(line).first(std::min(withoutCr(line).size(), m_maxLineBytes));
    ++m_lineNumber;
    if (hasKeyword(line) || anyWantsEveryLine())
        deliver(line);
    m_partial.clear();
    m_inLine = false;
}

void LogLineScanner::deliver(QByteArrayView raw) {
    const StrippedLine stripped = stripLogPrefix(cleanTerminalArtifacts(raw, m_scratch));
    const LogLine line{stripped.text, m_lineNumber, stripped.rank};
    for (LogLineSink* sink : m_sinks)
        sink->takeLine(line);
}

void LogLineScanner::finish() {
    if (m_inLine)
        endPartialLine();
    for (LogLineSink* sink : m_sinks)
        sink->endOfStream();
    m_lineNumber = 0;
}

} // namespace rankscope
