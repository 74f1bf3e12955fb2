// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QVector>

namespace rankscope {

// One complete line, or one piece of a line longer than the splitter's cap.
struct LinePiece {
    QByteArray bytes;     // without its "\n" or "\r\n"
    bool endsLine = true; // false: the line was cut here because of its length and its next piece follows
};

// Splits a byte stream into lines. It is fed chunks as they arrive (from a pipe, an SSH channel or a file),
// and a chunk may end anywhere: mid-line, between '\r' and '\n', or inside a UTF-8 sequence. Only the
// unterminated rest of the current line is kept between calls, and that rest never grows past the cap:
// a longer line comes out in pieces, so a rank printing megabytes without a newline cannot exhaust memory.
//
// The output depends only on the bytes, never on how they were chunked.
class LineSplitter final {
public:
    static constexpr qsizetype kDefaultMaxLineBytes = 1024 * 1024;

    // maxLineBytes below 4 is raised to 4, so that a piece can always hold a whole UTF-8 sequence.
    explicit LineSplitter(qsizetype maxLineBytes = kDefaultMaxLineBytes);

    [[nodiscard]] QVector<LinePiece> feed(QByteArrayView chunk);

    // End of stream: returns the unterminated last line (if any) and resets the splitter.
    [[nodiscard]] QVector<LinePiece> finish();

    [[nodiscard]] qsizetype maxLineBytes() const { return m_maxLineBytes; }
    [[nodiscard]] qsizetype bufferedBytes() const { return m_partial.size(); }

private:
    void takeLine(QVector<LinePiece>& out);
    void cutOverlongPieces(qsizetype contentSize, QVector<LinePiece>& out);
    [[nodiscard]] qsizetype pieceLengthAt(qsizetype start) const;

    qsizetype m_maxLineBytes;
    QByteArray m_partial;
};

} // namespace rankscope
