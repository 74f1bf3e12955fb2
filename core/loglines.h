// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QList>

namespace rankscope {

// memmem: QByteArrayView::indexOf's search is several times slower on the short needles the parsers use.
[[nodiscard]] qsizetype findBytes(QByteArrayView haystack, QByteArrayView needle, qsizetype from = 0);
[[nodiscard]] inline bool containsBytes(QByteArrayView haystack, QByteArrayView needle) {
    return findBytes(haystack, needle) >= 0;
}

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

// One line of a log as the parsers see it.
struct LogLine {
    QByteArrayView text; // without launcher prefixes, terminal artifacts and the line ending
    qint64 number = 0;   // 1-based line number in its stream
    int rank = -1;       // the rank named by a launcher prefix; -1 when none does
};

// A line parser. Outside a block (wantsEveryLine() false) it must ignore every line that holds none of its
// keywords: the scanner then skips such lines without looking at them, which is what makes it fast.
class LogLineSink {
public:
    virtual ~LogLineSink() = default;
    [[nodiscard]] virtual bool wantsEveryLine() const = 0;
    virtual void takeLine(const LogLine& line) = 0;
    virtual void endOfStream() = 0; // flush what is pending; results are kept
};

// Splits a byte stream into lines and hands each line that holds one of the keywords (or every line while a
// sink is inside a block) to the sinks. Fed chunks that may end anywhere; the result depends only on the
// bytes. It works on views into the chunk rather than LineSplitter's per-line copies: most lines of a big log
// are never looked at beyond a memchr for the newline and a memmem per keyword occurrence.
// Lines longer than maxLineBytes are cut there; the rest of such a line is dropped.
class LogLineScanner final {
public:
    static constexpr qsizetype kDefaultMaxLineBytes = 1024 * 1024;

    LogLineScanner(QList<QByteArray> keywords, QList<LogLineSink*> sinks,
                   qsizetype maxLineBytes = kDefaultMaxLineBytes);

    void feed(QByteArrayView chunk);
    // End of stream: the unterminated last line, then endOfStream() on every sink. Returns how many lines the
    // stream had; the count restarts for the next one.
    qint64 finish();

    [[nodiscard]] qint64 lineCount() const { return m_lineNumber; }

private:
    [[nodiscard]] bool anyWantsEveryLine() const;
    [[nodiscard]] bool chunkLineHasKeyword(QByteArrayView chunk, qsizetype start, qsizetype end);
    [[nodiscard]] bool hasKeyword(QByteArrayView text) const;
    void deliver(QByteArrayView raw);
    void appendPartial(QByteArrayView bytes);
    void endPartialLine();

    QList<QByteArray> m_keywords;
    QList<qsizetype> m_nextHit; // per keyword: its next occurrence in the current chunk (or the chunk's size)
    QList<LogLineSink*> m_sinks;
    qsizetype m_maxLineBytes;
    QByteArray m_partial;
    bool m_inLine = false;
    qint64 m_lineNumber = 0;
    QByteArray m_scratch;
};

} // namespace rankscope
