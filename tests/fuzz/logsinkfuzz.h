// SPDX-License-Identifier: MIT
// The fuzz check shared by the log parsers that are LogLineSinks with their own scanner (NCCL, watchdog,
// elastic, traceback): feed whole, feed in pieces, compare the JSON of what they found.
#pragma once

#include "core/loginspect.h"
#include "tests/fuzz/fuzzcommon.h"

namespace rankscope::fuzz {

// describe(parser) -> QByteArray; the parser is default-constructed and fed once whole, once in pieces.
template <typename Parser, typename Describe>
int checkLogSink(const uint8_t* bytes, size_t size, const char* what, Describe&& describe) {
    const QByteArrayView data = inputView(bytes, size);
    const Cuts cuts = cutsFor(data);
    Parser whole;
    whole.feed(data);
    whole.finish();
    Parser pieces;
    feedInPieces(data, cuts, [&](QByteArrayView piece) { pieces.feed(piece); });
    pieces.finish();
    requireSame(describe(whole), describe(pieces), cuts, what);
    return 0;
}

} // namespace rankscope::fuzz
