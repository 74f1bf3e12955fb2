// SPDX-License-Identifier: MIT
#include "core/rankstreams.h"

#include "core/logclassify.h"

namespace rankscope {

RankStreamParsers::RankStreamParsers() = default;
RankStreamParsers::~RankStreamParsers() = default;
RankStreamParsers::RankStreamParsers(RankStreamParsers&&) noexcept = default;
RankStreamParsers& RankStreamParsers::operator=(RankStreamParsers&&) noexcept = default;

RankStreamParsers::Rank& RankStreamParsers::rank(int rank) {
    std::shared_ptr<Rank>& found = m_ranks[rank];
    if (!found)
        found = std::make_shared<Rank>();
    return *found;
}

void RankStreamParsers::keepRaw(int rankNumber, RankStream stream) {
    Rank& state = rank(rankNumber);
    if (stream == RankStream::Out)
        state.rawOut = true;
    else if (stream == RankStream::Err)
        state.rawErr = true;
}

RankStreamParsers RankStreamParsers::take(const QVector<int>& ranks) {
    RankStreamParsers taken;
    for (const int r : ranks) {
        // A rank not seen yet has no state to hand over: rank() makes it when the rank is first fed.
        if (std::shared_ptr<Rank> state = m_ranks.take(r))
            taken.m_ranks.insert(r, std::move(state));
    }
    return taken;
}

namespace {

RankLogLine classified(int rank, RankStream stream, qint64 number, QString text, double receivedAt, bool endsLine) {
    RankLogLine line{rank, stream, number, std::move(text), receivedAt};
    const LogLineTraits traits = classifyLogLine(line.text);
    line.severity = int(traits.severity);
    line.nccl = traits.nccl;
    line.endsLine = endsLine;
    return line;
}

} // namespace

RankStreamChunk RankStreamParsers::feed(int rankNumber, RankStream stream, QByteArrayView bytes, double receivedAt) {
    Rank& state = rank(rankNumber);
    RankStreamChunk chunk;
    chunk.rank = rankNumber;
    chunk.stream = stream;
    if (stream == RankStream::Events) {
        ParsedBatch batch = state.events.feed(bytes);
        chunk.events = std::move(batch.events);
        chunk.decodeErrors = std::move(batch.errors);
        chunk.lines.reserve(batch.logLines.size());
        for (OutputLine& line : batch.logLines)
            chunk.lines.append(classified(rankNumber, stream, line.lineNumber, std::move(line.text), receivedAt, true));
        return chunk;
    }
    const bool out = stream == RankStream::Out;
    if (out ? state.rawOut : state.rawErr)
        chunk.raw = bytes.toByteArray();
    qint64& count = out ? state.outLines : state.errLines;
    const QVector<LinePiece> pieces = (out ? state.out : state.err).feed(bytes);
    chunk.lines.reserve(pieces.size());
    for (const LinePiece& piece : pieces) {
        chunk.lines.append(
            classified(rankNumber, stream, count + 1, QString::fromUtf8(piece.bytes), receivedAt, piece.endsLine));
        if (piece.endsLine)
            ++count;
    }
    return chunk;
}

} // namespace rankscope
