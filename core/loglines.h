// SPDX-License-Identifier: MIT
#pragma once

#include "core/keywordsearch.h"
#include "core/logprefix.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QList>

#include <array>
#include <memory>
#include <vector>

namespace rankscope {

// Without leading and trailing spaces and tabs.
[[nodiscard]] inline QByteArrayView trimmedBlanks(QByteArrayView text) {
    qsizetype begin = 0;
    qsizetype end = text.size();
    while (begin < end && (text[begin] == ' ' || text[begin] == '\t'))
        ++begin;
    while (end > begin && (text[end - 1] == ' ' || text[end - 1] == '\t'))
        --end;
    return text.sliced(begin, end - begin);
}

// Where one of a sink's keywords starts in a line's text.
struct KeywordAt {
    qsizetype at;
    int keyword; // its index in the sink's keywords()
};

// One line of a log as the parsers see it.
struct LogLine {
    QByteArrayView text;  // without launcher prefixes, terminal artifacts and the line ending
    qint64 number = 0;    // 1-based line number in its stream
    int rank = -1;        // the rank named by a launcher prefix; -1 when none does
    PrefixRank rankKind = PrefixRank::Launcher; // what that prefix's rank counts (StrippedLine)
    int pid = -1;         // the process a launcher prefix names instead of a rank (Ray's pid=); -1 when none does
    quint64 keywords = 0; // bit i: the receiving sink's keywords()[i] occurs in text
    // Every occurrence of the sink's keywords in text (overlapping ones too), by position, then keyword: a sink
    // need not search for them again. Valid during takeLine() only.
    const KeywordAt* found = nullptr;
    qsizetype foundCount = 0;

    // What a report of this line may say of its rank from the prefix: torchrun's local rank is no rank of the run.
    [[nodiscard]] int reportedRank() const { return rankKind == PrefixRank::Local ? -1 : rank; }
    [[nodiscard]] int localRank() const { return rankKind == PrefixRank::Local ? rank : -1; }
    [[nodiscard]] bool holds(int keyword) const { return (keywords >> keyword) & 1; }
    // Where `keyword` first starts in text at or after `from`; -1 when it does not.
    [[nodiscard]] qsizetype indexOf(int keyword, qsizetype from = 0) const {
        if (holds(keyword)) {
            for (const KeywordAt* hit = found; hit != found + foundCount; ++hit) {
                if (hit->keyword == keyword && hit->at >= from)
                    return hit->at;
            }
        }
        return -1;
    }
};

// A line parser. It names the byte strings it looks for; outside a block (wantsEveryLine() false) it is given
// only the lines whose text holds one of them, with LogLine::keywords saying which, so that it need not search
// again. The scanner asks wantsEveryLine() after each line the sink took and after endOfStream(): it may change
// only there.
class LogLineSink {
public:
    virtual ~LogLineSink() = default;
    // At most 62 for all sinks of a scanner together (it adds two of its own), none empty; one that holds '\n' is
    // never found.
    [[nodiscard]] virtual QList<QByteArray> keywords() const = 0;
    [[nodiscard]] virtual bool wantsEveryLine() const = 0;
    virtual void takeLine(const LogLine& line) = 0;
    virtual void endOfStream() = 0; // flush what is pending; results are kept
};

// Splits a byte stream into lines and hands each line to the sinks that look for a keyword it holds, and to those
// inside a block. Fed chunks that may end anywhere; the result depends only on the bytes. It works on views into
// the chunk rather than LineSplitter's per-line copies, and finds the keywords of all sinks and the line ends in
// one search per chunk: most lines of a big log are never looked at beyond that search.
// Lines longer than maxLineBytes are cut there; the rest of such a line is dropped.
class LogLineScanner final {
public:
    static constexpr qsizetype kDefaultMaxLineBytes = 1024 * 1024;

    // The sinks (at most 64) are asked for their keywords and state on the first feed() or finish(), not here: a
    // sink may own its scanner and not be fully built yet.
    explicit LogLineScanner(QList<LogLineSink*> sinks, qsizetype maxLineBytes = kDefaultMaxLineBytes);
    ~LogLineScanner();
    LogLineScanner(const LogLineScanner&) = delete;
    LogLineScanner& operator=(const LogLineScanner&) = delete;

    void feed(QByteArrayView chunk);
    // End of stream: the unterminated last line, then endOfStream() on every sink. Returns how many lines the
    // stream had; the count restarts for the next one.
    qint64 finish();

    [[nodiscard]] qint64 lineCount() const { return m_lineNumber; }

private:
    struct Slot {
        LogLineSink* sink = nullptr;
        std::vector<int> keywords;    // the scanner's index of each of the sink's keywords
        quint64 mask = 0;             // their bits
        // The sink's index of each of the scanner's keywords it lists (the first, when it lists one twice): a
        // line's hits are turned into the sink's keywords without a search.
        std::array<int, KeywordSearch::kMaxKeywords> indexOf{};
        bool listsTwice = false;
        std::vector<KeywordAt> found; // the occurrences of the sink's keywords in the line being delivered
        bool wantsEveryLine = false;
    };
    using Hit = KeywordSearch::Hit;

    void prepare();
    void scanLines(QByteArrayView lines);
    void takeRawLine(QByteArrayView raw, const Hit* hits, const Hit* hitsEnd, qsizetype offset);
    void deliver(quint64 keywords); // m_line to the sinks; keywords: the scanner's bits of those in m_textHits
    void updateWanting(int index); // of a slot
    void appendPartial(QByteArrayView bytes);
    void endPartialLine();

    std::vector<Slot> m_slots;
    std::unique_ptr<KeywordSearch> m_search; // the keywords of all sinks, each once, then ESC and '\r'
    std::vector<qsizetype> m_keywordSizes;
    int m_escape = -1;               // the index of ESC; '\r' comes next: bytes that make a line's text differ
    quint64 m_terminalArtifacts = 0; // their two bits
    quint64 m_wanting = 0; // bit i: the sink of slot i wants every line
    std::array<quint64, KeywordSearch::kMaxKeywords> m_sinksOf{}; // per keyword: the slots whose sinks look for it
    qsizetype m_maxLineBytes;
    std::vector<Hit> m_hits;
    std::vector<Hit> m_textHits; // the hits of the line being delivered, as positions in its text
    LogLine m_line;              // the line being delivered
    std::vector<qsizetype> m_lineEnds;
    QByteArray m_partial;
    bool m_inLine = false;
    qint64 m_lineNumber = 0;
    QByteArray m_scratch;
};

} // namespace rankscope
