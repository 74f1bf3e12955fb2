// SPDX-License-Identifier: MIT
// LineSplitter: pieces (and where long lines are cut) must not depend on how the bytes were chunked.
#include "core/linesplitter.h"
#include "tests/fuzz/fuzzcommon.h"

using namespace rankscope;

namespace {

void append(QByteArray& out, const QVector<LinePiece>& pieces) {
    for (const LinePiece& piece : pieces) {
        out += QByteArray::number(piece.bytes.size()) + (piece.endsLine ? ':' : '+') + piece.bytes + '\n';
    }
}

QByteArray split(QByteArrayView data, const fuzz::Cuts* cuts) {
    LineSplitter splitter(64); // small, so that overlong lines are common
    QByteArray out;
    if (cuts)
        fuzz::feedInPieces(data, *cuts, [&](QByteArrayView piece) { append(out, splitter.feed(piece)); });
    else
        append(out, splitter.feed(data));
    append(out, splitter.finish());
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const QByteArrayView data = fuzz::inputView(bytes, size);
    const fuzz::Cuts cuts = fuzz::cutsFor(data);
    fuzz::requireSame(split(data, nullptr), split(data, &cuts), cuts, "LineSplitter");
    return 0;
}
