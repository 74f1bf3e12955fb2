// SPDX-License-Identifier: MIT
#include "core/nccltext.h"

#include <optional>

namespace rankscope::nccltext {

namespace {

// Calls `take(at)` for each place in `text` where a word starts: 0 and every place after a space or tab, in order.
// The blanks are found 16 bytes a step; no byte past the end is read.
template <typename Take> void forEachWordStart(QByteArrayView text, Take take) {
    const char* const data = text.data();
    const qsizetype size = text.size();
    if (size > 0)
        take(qsizetype(0));
    qsizetype at = 0;
#ifdef __SSE2__
    for (; at + 16 <= size; at += 16) {
        for (unsigned blanks = blanksIn16(data + at); blanks != 0; blanks &= blanks - 1) {
            const qsizetype next = at + qCountTrailingZeroBits(blanks) + 1;
            if (next < size)
                take(next);
        }
    }
#endif
    for (; at < size; ++at) {
        if (isSpace(data[at]) && at + 1 < size)
            take(at + 1);
    }
}

// `field` becomes the value after `key` ("rank ", with the space) when the word at `at` is that key and `field` has
// none yet. The key's length is known when compiling, so it is compared inline.
template <qsizetype N>
void takeCommField(QByteArrayView text, qsizetype at, const char (&key)[N], QByteArrayView& field) {
    constexpr qsizetype kKey = N - 1;
    if (field.data() || text.size() - at < kKey || std::memcmp(text.data() + at, key, kKey) != 0)
        return;
    field = text.sliced(at + kKey, blankFrom(text, at + kKey) - at - kKey);
}

// The value at the cursor and the one space after it, then the cursor after them. No value may be a key of a comm
// init line.
Q_ALWAYS_INLINE bool takeValue(TextCursor& in, QByteArrayView& field) {
    const qsizetype end = blankFrom(in.text, in.at);
    if (end == in.at || end == in.text.size() || in.text[end] != ' ')
        return false;
    field = in.text.sliced(in.at, end - in.at);
    in.at = end + 1;
    switch (field.front()) { // the keys' first letters
    case 'r':
    case 'n':
    case 'c':
    case 'b':
        for (const QByteArrayView word : {"rank", "nranks", "cudaDev", "busId", "commId"}) {
            if (sameBytes(field, word))
                return false;
        }
        break;
    default:
        break;
    }
    return true;
}

// Reads a comm init line left to right as NCCL prints it, "[ncclCommInitRank ]comm 0x… rank R nranks N cudaDev D
// [nvmlDev V ]busId B [commId C ]- Init START|COMPLETE", one space between words and nothing after. Nothing when the
// text differs in any way: the caller then reads it word by word. Where it succeeds the two readings agree: no value
// is a key (checked) or "Init" (the word before each value is a key), so each key is read where it is printed.
std::optional<CommInitFields> readCommInitAsPrinted(QByteArrayView text) {
    TextCursor in{text, 0};
    in.skip("ncclCommInitRank ");
    QByteArrayView comm, rank, nranks, cudaDev, nvmlDev, busId, commId;
    if (!in.skip("comm ") || !takeValue(in, comm) || !in.skip("rank ") || !takeValue(in, rank) || !in.skip("nranks ") ||
        !takeValue(in, nranks) || !in.skip("cudaDev ") || !takeValue(in, cudaDev) ||
        (in.skip("nvmlDev ") && !takeValue(in, nvmlDev)) || !in.skip("busId ") || !takeValue(in, busId) ||
        (in.skip("commId ") && !takeValue(in, commId)) || !in.skip("- Init "))
        return std::nullopt;
    const QByteArrayView state = text.sliced(in.at);
    const bool complete = state == "COMPLETE";
    const bool start = state == "START";
    if (!complete && !start)
        return std::nullopt;
    return CommInitFields{rank, nranks, cudaDev, busId, commId, complete, start};
}

} // namespace

CommInitFields readCommInit(QByteArrayView text) {
    if (const std::optional<CommInitFields> printed = readCommInitAsPrinted(text))
        return *printed;
    CommInitFields fields;
    forEachWordStart(text, [text, &fields](qsizetype at) {
        switch (text[at]) {
        case 'r':
            takeCommField(text, at, "rank ", fields.rank);
            break;
        case 'n':
            takeCommField(text, at, "nranks ", fields.nranks);
            break;
        case 'c':
            takeCommField(text, at, "cudaDev ", fields.cudaDev);
            takeCommField(text, at, "commId ", fields.commId);
            break;
        case 'b':
            takeCommField(text, at, "busId ", fields.busId);
            break;
        case 'C':
        case 'S':
            // "Init COMPLETE" anywhere: its space is a blank, so the word after it starts here.
            if (at >= 5 && startsWithLiteral(text.sliced(at - 5), "Init ")) {
                fields.complete = fields.complete || startsWithLiteral(text.sliced(at), "COMPLETE");
                fields.start = fields.start || startsWithLiteral(text.sliced(at), "START");
            }
            break;
        default:
            break;
        }
    });
    return fields;
}

} // namespace rankscope::nccltext
