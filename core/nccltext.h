// SPDX-License-Identifier: MIT
// NCCL's record text read at the byte level: numbers, blanks, source locations, the steps of an error-code chain,
// communicator init lines. NcclLogParser's reading; inline where it runs for every record of a log.
#pragma once

#include "core/keywordsearch.h"

#include <QByteArrayView>
#include <QtAlgorithms>

#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace rankscope::nccltext {

inline bool isDigit(char c) {
    return c >= '0' && c <= '9';
}
inline bool isSpace(char c) {
    return c == ' ' || c == '\t';
}

// The last `c` before index `before`; QByteArrayView::lastIndexOf goes through a general substring search.
inline qsizetype lastIndexBefore(QByteArrayView text, char c, qsizetype before) {
    for (qsizetype i = before - 1; i >= 0; --i) {
        if (text[i] == c)
            return i;
    }
    return -1;
}

// "misc/ibvwrap.cc:63": a file with an extension, a colon and a line number.
inline bool isSourceLocation(QByteArrayView token) {
    const qsizetype colon = lastIndexBefore(token, ':', token.size());
    return colon > 0 && indexOfByte(token.first(colon), '.') >= 0 && decimalValue(token.sliced(colon + 1)) >= 0;
}

#ifdef __SSE2__
// Bit i set: the byte at text[i] (of the 16 from `text`) is a space or a tab.
inline unsigned blanksIn16(const char* text) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text));
    return static_cast<unsigned>(_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(bytes, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\t')))));
}
#endif

// Where the last space or tab before `end` is, or -1. The token before a record's marker is its
// "host:pid:tid", often tens of bytes: 16 of them a step.
inline qsizetype blankBefore(const char* text, qsizetype end) {
#ifdef __SSE2__
    for (; end >= 16; end -= 16) {
        if (const unsigned blanks = blanksIn16(text + end - 16); blanks != 0)
            return end - 16 + (31 - qCountLeadingZeroBits(static_cast<quint32>(blanks)));
    }
#endif
    for (qsizetype i = end - 1; i >= 0; --i) {
        if (isSpace(text[i]))
            return i;
    }
    return -1;
}

// Where the first space or tab at or after `from` is, or text.size(): 16 bytes a step, none read past the end.
inline qsizetype blankFrom(QByteArrayView text, qsizetype from) {
#ifdef __SSE2__
    for (; from + 16 <= text.size(); from += 16) {
        if (const unsigned blanks = blanksIn16(text.data() + from); blanks != 0)
            return from + qCountTrailingZeroBits(blanks);
    }
#endif
    while (from < text.size() && !isSpace(text[from]))
        ++from;
    return from;
}

// How many of the 8 bytes before `end` are digits, counted back from it (8: all of them). Little-endian only.
inline int digitsBefore(const char* end) {
    quint64 bytes;
    std::memcpy(&bytes, end - 8, 8);
    bytes ^= 0x3030303030303030ULL; // a digit's byte becomes its value, 0 to 9
    // A byte's high nibble set: it is no digit. Adding 6 to a low nibble above 9 carries into the high one and no
    // further.
    const quint64 others = (bytes | (bytes + 0x0606060606060606ULL)) & 0xf0f0f0f0f0f0f0f0ULL;
    return others == 0 ? 8 : static_cast<int>(qCountLeadingZeroBits(others) / 8); // the last byte is the highest
}

// The number the last `count` (1 to 8) bytes before `end` spell, all digits: the bytes before them are read as
// leading zeros, and the digits are added in pairs, then fours, then eights. Little-endian only.
inline qint64 digitsValue(const char* end, int count) {
    quint64 bytes;
    std::memcpy(&bytes, end - 8, 8);
    bytes = (bytes & 0x0f0f0f0f0f0f0f0fULL) & (~quint64(0) << (8 * (8 - count)));
    bytes = (bytes * (10 * 256 + 1)) >> 8;
    bytes = ((bytes & 0x00ff00ff00ff00ffULL) * (100 * 65536 + 1)) >> 16;
    return static_cast<qint64>(((bytes & 0x0000ffff0000ffffULL) * (10000 * (quint64(1) << 32) + 1)) >> 32);
}

// Where " -> " starts, found from its '>', which is rare in NCCL's messages.
inline qsizetype findArrow(QByteArrayView text) {
    const char* const begin = text.data();
    const char* const end = begin + text.size();
    for (const char* at = begin; at < end; ++at) {
        at = static_cast<const char*>(std::memchr(at, '>', static_cast<size_t>(end - at)));
        if (!at)
            return -1;
        if (at - begin >= 2 && end - at >= 2 && at[-2] == ' ' && at[-1] == '-' && at[1] == ' ')
            return at - 2 - begin;
    }
    return -1;
}

// "init.cc:840 -> 5" and "group.cc:73 -> 5 [Async thread]": one step of NCCL's error-code propagation.
inline bool isChainStep(QByteArrayView message) {
    const qsizetype arrow = findArrow(message);
    // The digit before the arrow first: it ends every source location, and most arrows ("0[0] -> 7[7]") lack it.
    return arrow > 0 && isDigit(message[arrow - 1]) && isSourceLocation(message.first(arrow)) &&
           arrow + 4 < message.size() && (isDigit(message[arrow + 4]) || message[arrow + 4] == '-');
}

// The fields of "comm 0x… rank R nranks N cudaDev D busId B commId C - Init START|COMPLETE", read in one pass over
// its words. A field's value is the token after "key " where the key is a whole word followed by one space; the
// first such key counts.
struct CommInitFields {
    QByteArrayView rank, nranks, cudaDev, busId, commId;
    bool complete = false; // "Init COMPLETE" is somewhere in the text
    bool start = false;    // "Init START" is
};

// Reads a communicator's init line (the message after "NCCL INFO "), as NCCL prints it or with its words in another
// order or with others between them. A field that is not there is empty.
[[nodiscard]] CommInitFields readCommInit(QByteArrayView text);

} // namespace rankscope::nccltext
