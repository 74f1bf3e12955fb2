// SPDX-License-Identifier: MIT
#include "core/loglines.h"

#include "core/logprefix.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace rankscope {

namespace {

QByteArrayView withoutCr(QByteArrayView line) {
    return line.endsWith('\r') ? line.chopped(1) : line;
}

constexpr char kEscape = '\x1b';
constexpr char kCarriageReturn = '\r';

} // namespace

LogLineScanner::LogLineScanner(QList<LogLineSink*> sinks, qsizetype maxLineBytes)
    : m_maxLineBytes(std::max<qsizetype>(maxLineBytes, 16)) {
    if (sinks.size() > 64)
        qFatal("LogLineScanner: %lld sinks, more than 64", static_cast<long long>(sinks.size()));
    for (LogLineSink* sink : sinks)
        m_slots.emplace_back().sink = sink;
}

LogLineScanner::~LogLineScanner() = default;

void LogLineScanner::prepare() {
    QList<QByteArray> keywords;
    for (Slot& slot : m_slots) {
        for (const QByteArray& keyword : slot.sink->keywords()) {
            qsizetype index = keywords.indexOf(keyword);
            if (index < 0) {
                index = keywords.size();
                keywords.append(keyword);
            }
            if (slot.mask & (quint64(1) << index))
                slot.listsTwice = true;
            else
                slot.indexOf[static_cast<size_t>(index)] = static_cast<int>(slot.keywords.size());
            slot.keywords.push_back(static_cast<int>(index));
            slot.mask |= quint64(1) << index;
        }
        slot.wantsEveryLine = slot.sink->wantsEveryLine();
    }
    for (size_t index = 0; index < m_slots.size(); ++index) {
        const quint64 bit = quint64(1) << index;
        for (const int keyword : m_slots[index].keywords)
            m_sinksOf[static_cast<size_t>(keyword)] |= bit;
        if (m_slots[index].wantsEveryLine)
            m_wanting |= bit;
    }
    // The scanner's own two, after the sinks' ones (even if a sink looks for them too): a line with neither is
    // its text as it is; one with an escape sequence is searched again once cleaned, as the sequence may split a
    // keyword.
    m_escape = static_cast<int>(keywords.size());
    keywords.append(QByteArray(1, kEscape));
    keywords.append(QByteArray(1, kCarriageReturn));
    m_terminalArtifacts = quint64(0b11) << m_escape;
    if (keywords.size() > KeywordSearch::kMaxKeywords)
        qFatal("LogLineScanner: the sinks look for %lld keywords, more than %d",
               static_cast<long long>(keywords.size()), KeywordSearch::kMaxKeywords);
    for (const QByteArray& keyword : std::as_const(keywords))
        m_keywordSizes.push_back(keyword.size());
    m_search = std::make_unique<KeywordSearch>(keywords);
}

void LogLineScanner::feed(QByteArrayView chunk) {
    if (!m_search)
        prepare();
    qsizetype pos = 0;
    if (m_inLine) {
        const void* found = std::memchr(chunk.data(), '\n', static_cast<size_t>(chunk.size()));
        if (!found) {
            appendPartial(chunk);
            return;
        }
        const qsizetype newline = static_cast<const char*>(found) - chunk.data();
        appendPartial(chunk.first(newline));
        endPartialLine();
        pos = newline + 1;
    }
    qsizetype end = chunk.size(); // just after the last newline
    while (end > pos && chunk[end - 1] != '\n')
        --end;
    if (end > pos)
        scanLines(chunk.sliced(pos, end - pos));
    if (end < chunk.size())
        appendPartial(chunk.sliced(std::max(pos, end)));
}

namespace {

// The index of the first of `ends` from `from` on that is after `at`; ends.size() when none is. Galloping: the
// next line with a hit is near in a dense log and far in a sparse one.
size_t firstEndAfter(const std::vector<qsizetype>& ends, size_t from, qsizetype at) {
    size_t step = 1;
    size_t low = from;
    size_t high = from;
    while (high < ends.size() && ends[high] <= at) {
        low = high + 1;
        high += step;
        step *= 2;
    }
    const auto begin = ends.begin();
    const auto last = begin + static_cast<std::ptrdiff_t>(std::min(high, ends.size()));
    return static_cast<size_t>(std::upper_bound(begin + static_cast<std::ptrdiff_t>(low), last, at) - begin);
}

} // namespace

// `lines` ends with a newline. One search over all of it finds every keyword and every line end; each line then
// takes the hits that start in it. Outside blocks only lines with hits are looked at: the next is found from the
// next hit, not by walking the lines in between.
void LogLineScanner::scanLines(QByteArrayView lines) {
    m_hits.clear();
    m_lineEnds.clear();
    m_search->findAll(lines, m_hits, &m_lineEnds);
    const Hit* hit = m_hits.data();
    const Hit* const hitsEnd = hit + m_hits.size();
    const qint64 firstNumber = m_lineNumber + 1;
    for (size_t line = 0; line < m_lineEnds.size(); ++line) {
        if (m_wanting == 0) {
            if (hit == hitsEnd)
                break;
            line = firstEndAfter(m_lineEnds, line, hit->start);
            if (line == m_lineEnds.size()) // a hit on the last newline: a keyword that starts with '\n'
                break;
        }
        const qsizetype newline = m_lineEnds[line];
        const qsizetype pos = line == 0 ? 0 : m_lineEnds[line - 1] + 1;
        m_lineNumber = firstNumber + static_cast<qint64>(line);
        const Hit* const lineHits = hit;
        while (hit != hitsEnd && hit->start < newline)
            ++hit;
        if (lineHits != hit || m_wanting != 0) {
            const QByteArrayView text = withoutCr(lines.sliced(pos, newline - pos));
            takeRawLine(text.first(std::min(text.size(), m_maxLineBytes)), lineHits, hit, pos);
        }
    }
    m_lineNumber = firstNumber - 1 + static_cast<qint64>(m_lineEnds.size());
}

// `hits` are where keywords start in the bytes the line was cut from, `offset` bytes before the line.
void LogLineScanner::takeRawLine(QByteArrayView raw, const Hit* hits, const Hit* hitsEnd, qsizetype offset) {
    m_textHits.clear();
    quint64 inRaw = 0;
    for (const Hit* hit = hits; hit != hitsEnd; ++hit) {
        const qsizetype at = hit->start - offset;
        if (at + m_keywordSizes[hit->keyword] <= raw.size()) {
            inRaw |= quint64(1) << hit->keyword;
            // Field by field: a hit built on the stack and copied is read back before its stores land.
            Hit& kept = m_textHits.emplace_back();
            kept.start = at;
            kept.keyword = hit->keyword;
        }
    }
    if (inRaw == 0 && m_wanting == 0)
        return;
    const QByteArrayView cleaned = inRaw & m_terminalArtifacts ? cleanTerminalArtifacts(raw, m_scratch) : raw;
    const StrippedLine stripped = stripLogPrefix(cleaned);
    quint64 inText = inRaw;
    if (inRaw & (quint64(1) << m_escape)) {
        m_textHits.clear();
        m_search->findAll(stripped.text, m_textHits);
        inText = 0;
        for (const Hit& hit : m_textHits)
            inText |= quint64(1) << hit.keyword;
    } else if (stripped.text.size() != raw.size()) {
        // Without escape sequences the text is a view into the raw line: its keywords are the hits inside it.
        const qsizetype textStart = stripped.text.data() - raw.data();
        const qsizetype textEnd = textStart + stripped.text.size();
        inText = 0;
        auto kept = m_textHits.begin();
        for (const Hit& hit : m_textHits) {
            if (hit.start >= textStart && hit.start + m_keywordSizes[hit.keyword] <= textEnd) {
                kept->start = hit.start - textStart;
                kept->keyword = hit.keyword;
                ++kept;
                inText |= quint64(1) << hit.keyword;
            }
        }
        m_textHits.erase(kept, m_textHits.end());
    }
    // The text is the cleaned line's end (prefixes go from the front): made from where it starts, it is read as one
    // pointer, not as the two words stripLogPrefixes stored, which a load of both at once waits for (a store
    // forwarding stall that was 3 % of the inspector's time).
    m_line.text = cleaned.sliced(stripped.text.data() - cleaned.data());
    m_line.number = m_lineNumber;
    m_line.rank = stripped.rank;
    m_line.rankKind = stripped.rankKind;
    m_line.pid = stripped.pid;
    deliver(inText & ~m_terminalArtifacts);
}

void LogLineScanner::deliver(quint64 keywords) {
    LogLine& line = m_line;
    // The sinks to call, in their order: those inside a block, and those that look for a keyword the line holds.
    quint64 sinks = m_wanting;
    for (quint64 held = keywords; held != 0; held &= held - 1)
        sinks |= m_sinksOf[static_cast<size_t>(qCountTrailingZeroBits(held))];
    for (; sinks != 0; sinks &= sinks - 1) {
        const int index = qCountTrailingZeroBits(sinks);
        Slot& slot = m_slots[static_cast<size_t>(index)];
        slot.found.clear();
        quint64 own = 0;
        if (keywords & slot.mask) {
            // By position, then by the sink's index: two keywords can start at the same place.
            const auto add = [&slot, &own](qsizetype at, int i) {
                size_t j = slot.found.size();
                slot.found.emplace_back();
                for (; j > 0 && slot.found[j - 1].at == at && slot.found[j - 1].keyword > i; --j)
                    slot.found[j] = slot.found[j - 1];
                slot.found[j].at = at;
                slot.found[j].keyword = i;
                own |= quint64(1) << i;
            };
            for (const Hit& hit : m_textHits) {
                if (!((slot.mask >> hit.keyword) & 1))
                    continue;
                if (!slot.listsTwice) {
                    add(hit.start, slot.indexOf[static_cast<size_t>(hit.keyword)]);
                    continue;
                }
                for (size_t i = 0; i < slot.keywords.size(); ++i) {
                    if (slot.keywords[i] == hit.keyword)
                        add(hit.start, static_cast<int>(i));
                }
            }
        }
        line.keywords = own;
        line.found = slot.found.data();
        line.foundCount = static_cast<qsizetype>(slot.found.size());
        slot.sink->takeLine(line);
        updateWanting(index);
    }
}

void LogLineScanner::updateWanting(int index) {
    Slot& slot = m_slots[static_cast<size_t>(index)];
    const bool wants = slot.sink->wantsEveryLine();
    if (wants != slot.wantsEveryLine) {
        slot.wantsEveryLine = wants;
        m_wanting ^= quint64(1) << index;
    }
}

void LogLineScanner::appendPartial(QByteArrayView bytes) {
    m_inLine = true;
    const qsizetype room = m_maxLineBytes + 1 - m_partial.size(); // one more byte: a '\r' may precede '\n'
    if (room > 0)
        m_partial.append(bytes.first(std::min(room, bytes.size())));
}

void LogLineScanner::endPartialLine() {
    const QByteArrayView line = withoutCr(m_partial);
    const QByteArrayView capped = line.first(std::min(line.size(), m_maxLineBytes));
    ++m_lineNumber;
    m_hits.clear();
    m_search->findAll(capped, m_hits);
    takeRawLine(capped, m_hits.data(), m_hits.data() + m_hits.size(), 0);
    m_partial.clear();
    m_inLine = false;
}

qint64 LogLineScanner::finish() {
    if (!m_search)
        prepare();
    if (m_inLine)
        endPartialLine();
    for (size_t index = 0; index < m_slots.size(); ++index) {
        m_slots[index].sink->endOfStream();
        updateWanting(static_cast<int>(index));
    }
    return std::exchange(m_lineNumber, 0);
}

} // namespace rankscope
