// SPDX-License-Identifier: MIT
#pragma once

#include "core/linesplitter.h"
#include "core/trainerevent.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QString>
#include <QVector>

namespace rankscope {

// A line that is not an event: NCCL INFO lines, warnings, tracebacks. A line longer than the splitter's
// cap arrives as several OutputLines with the same line number. (core/loglines.h's LogLine is the parsers' view
// of a line; the two are apart by name so that both headers can be included together.)
struct OutputLine {
    qint64 lineNumber = 0; // 1-based
    QString text;          // decoded as UTF-8, invalid bytes replaced by U+FFFD
};

// An event line that could not be decoded. The line is also delivered as an OutputLine, so nothing is lost.
struct DecodeError {
    qint64 lineNumber = 0;
    QString message; // names the event type and the field, e.g. "step event: missing field 'loss'"
    QByteArray rawLine;
};

// What one feed() produced. Each vector is in stream order; line numbers relate them to each other.
struct ParsedBatch {
    QVector<TrainerEvent> events;
    QVector<OutputLine> logLines;
    QVector<DecodeError> errors;

    [[nodiscard]] bool isEmpty() const { return events.isEmpty() && logLines.isEmpty() && errors.isEmpty(); }
    void append(const ParsedBatch& other);
};

// Separates trainer events from ordinary output in one byte stream (one rank's stdout, an events file).
// Feed it chunks as they arrive, in any sizes: the results are the same for every chunking.
class EventStreamParser final {
public:
    explicit EventStreamParser(qsizetype maxLineBytes = LineSplitter::kDefaultMaxLineBytes);

    [[nodiscard]] ParsedBatch feed(QByteArrayView chunk);
    // End of stream: parses an unterminated last line. The parser can then read a new stream from line 1.
    [[nodiscard]] ParsedBatch finish();

    [[nodiscard]] qint64 lineCount() const { return m_lineCount; }

private:
    void handlePieces(const QVector<LinePiece>& pieces, ParsedBatch& batch);
    void handleLine(const QByteArray& line, ParsedBatch& batch) const;
    void handleOverlongPiece(const LinePiece& piece, bool firstPiece, ParsedBatch& batch) const;

    LineSplitter m_splitter;
    qint64 m_lineCount = 0;
    bool m_inOverlongLine = false; // the previous piece did not end its line
};

} // namespace rankscope
