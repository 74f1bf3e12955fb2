// SPDX-License-Identifier: MIT
#include "core/linesplitter.h"

#include <algorithm>
#include <utility>

namespace rankscope {

namespace {

constexpr qsizetype kMinLineBytes = 4; // the longest UTF-8 sequence

bool isUtf8Continuation(char byte) {
    return (static_cast<unsigned char>(byte) & 0xC0) == 0x80;
}

} // namespace

LineSplitter::LineSplitter(qsizetype maxLineBytes) : m_maxLineBytes(std::max(maxLineBytes, kMinLineBytes)) {}

QVector<LinePiece> LineSplitter::feed(QByteArrayView chunk) {
    QVector<LinePiece> out;
    qsizetype pos = 0;
    while (pos < chunk.size()) {
        const qsizetype newline = chunk.indexOf('\n', pos);
        if (newline < 0) {
            m_partial.append(chunk.sliced(pos));
            // A trailing '\r' may be the first half of "\r\n"; it is not content until the next byte says so.
            const bool maybeCrLf = m_partial.endsWith('\r');
            cutOverlongPieces(m_partial.size() - (maybeCrLf ? 1 : 0), out);
            break;
        }
        m_partial.append(chunk.sliced(pos, newline - pos));
        takeLine(out);
        pos = newline + 1;
    }
    return out;
}

QVector<LinePiece> LineSplitter::finish() {
    QVector<LinePiece> out;
    if (!m_partial.isEmpty())
        takeLine(out); // a lone '\r' at the very end is an interrupted "\r\n", so it is stripped too
    m_partial = QByteArray();
    return out;
}

void LineSplitter::takeLine(QVector<LinePiece>& out) {
    if (m_partial.endsWith('\r'))
        m_partial.chop(1);
    cutOverlongPieces(m_partial.size(), out);
    out.append({std::move(m_partial), true});
    m_partial.clear();
}

// Emits pieces from the front of the partial line while more than the cap of content is known to follow.
void LineSplitter::cutOverlongPieces(qsizetype contentSize, QVector<LinePiece>& out) {
    qsizetype start = 0;
    while (contentSize - start > m_maxLineBytes) {
        const qsizetype length = pieceLengthAt(start);
        out.append({m_partial.mid(start, length), false});
        start += length;
    }
    if (start == 0)
        return;
    m_partial.remove(0, start); // once, so a huge chunk costs linear time
    if (m_partial.capacity() > 2 * m_maxLineBytes)
        m_partial.squeeze(); // do not keep the allocation a huge chunk needed
}

// A piece is the cap long, shortened so that it does not end inside a UTF-8 sequence: each piece then
// decodes on its own. Only called when at least one byte follows the cap, so the bytes looked at exist.
qsizetype LineSplitter::pieceLengthAt(qsizetype start) const {
    qsizetype length = m_maxLineBytes;
    for (int back = 0; back < kMinLineBytes - 1 && isUtf8Continuation(m_partial.at(start + length)); ++back)
        --length;
    // Not a sequence after all (stray continuation bytes): cut at the cap rather than nowhere.
    return isUtf8Continuation(m_partial.at(start + length)) ? m_maxLineBytes : length;
}

} // namespace rankscope
