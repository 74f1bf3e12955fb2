// SPDX-License-Identifier: MIT
#include "core/loglines.h"

#include "core/logprefix.h"

#include <cstring>
#include <limits>
#include <utility>

namespace rankscope {

namespace {

QByteArrayView withoutCr(QByteArrayView line) {
    return line.endsWith('\r') ? line.chopped(1) : line;
}

// Printable bytes from rare to common in the recorded training logs of tests/data; other bytes count as rarest.
constexpr QByteArrayView kRareToCommon =
    R"r(!$&?QYZ\^`~KJX;j%qH#'V<*W+>SMGBRAU)x(|TzD@E{}PFOLIy[]wgbfNC/uv=4h6k_7893d5m.2lpnioc,1r-0sat:e" )r";

qsizetype rarestByteIn(QByteArrayView needle) {
    qsizetype best = 0;
    qsizetype bestRank = std::numeric_limits<qsizetype>::max();
    for (qsizetype i = 0; i < needle.size(); ++i) {
        const qsizetype rank = kRareToCommon.indexOf(needle[i]) + 1; // 0: not printable, rarest
        if (rank < bestRank) {
            best = i;
            bestRank = rank;
        }
    }
    return best;
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
    if (end - at < needle.size())
        return -1;
    if (end - at > 512) {
        // On a whole chunk: memchr for the needle's rarest byte skips log text several times faster than memmem,
        // and each candidate start is compared once, leftmost first. On a line this setup costs more than it saves.
        const qsizetype offset = rarestByteIn(needle);
        const char rare = needle[offset];
        const char* candidate = at + offset;
        const char* const last = end - needle.size() + offset; // the last place the rare byte can be
        while (candidate <= last) {
            candidate =
                static_cast<const char*>(std::memchr(candidate, rare, static_cast<size_t>(last - candidate + 1)));
            if (!candidate)
                return -1;
            const char* const start = candidate - offset;
            // The ends first, inline: most candidates fail there, and a memcmp call costs more than the check.
            if (start[0] == needle.front() && start[needle.size() - 1] == needle.back() &&
                std::memcmp(start, needle.data(), static_cast<size_t>(needle.size())) == 0)
                return start - begin;
            ++candidate;
        }
        return -1;
    }
    const char first = needle.front();
    const size_t rest = static_cast<size_t>(needle.size() - 1);
    while (end - at >= needle.size()) {
        at = static_cast<const char*>(std::memchr(at, first, static_cast<size_t>(end - at) - rest));
        if (!at)
            return -1;
        if (at[rest] == needle.back() && std::memcmp(at + 1, needle.data() + 1, rest) == 0)
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

qint64 LogLineScanner::finish() {
    if (m_inLine)
        endPartialLine();
    for (LogLineSink* sink : m_sinks)
        sink->endOfStream();
    return std::exchange(m_lineNumber, 0);
}

} // namespace rankscope
