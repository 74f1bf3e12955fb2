// SPDX-License-Identifier: MIT
#pragma once

#include "core/eventstreamparser.h"
#include "core/linesplitter.h"
#include "core/runstore.h"

#include <QByteArray>
#include <QHash>
#include <QVector>

#include <memory>

namespace rankscope {

// What one chunk of one rank's stream became.
struct RankStreamChunk {
    int rank = 0;
    RankStream stream = RankStream::Events;
    QVector<TrainerEvent> events;      // the events file's events, in stream order
    QVector<DecodeError> decodeErrors; // its lines that are not valid events (they are in `lines` too)
    QVector<RankLogLine> lines;        // numbered, classified lines (stdout, stderr, the events file's others)
    QByteArray raw;                    // the chunk's bytes, for streams asked for with keepRaw()

    [[nodiscard]] bool isEmpty() const {
        return events.isEmpty() && decodeErrors.isEmpty() && lines.isEmpty() && raw.isEmpty();
    }
};

// The parsers of every stream of a set of ranks: a rank's events file through EventStreamParser, its stdout
// and stderr through LineSplitter into numbered pieces, each classified (severity, NCCL) so that no front end
// has to. Resumable and fed by byte chunks; the output depends only on the bytes. Not thread-safe, but it may
// be handed from one thread to another (the engine replays the stored streams, then the node's worker thread
// goes on with the same state, so a line cut by an interruption is completed by the bytes that follow).
class RankStreamParsers final {
public:
    RankStreamParsers();
    ~RankStreamParsers();
    RankStreamParsers(RankStreamParsers&&) noexcept;
    RankStreamParsers& operator=(RankStreamParsers&&) noexcept;

    // `receivedAt` stamps the lines (Unix seconds): the order of a merged view.
    [[nodiscard]] RankStreamChunk feed(int rank, RankStream stream, QByteArrayView bytes, double receivedAt);
    // Chunks of this (rank, stream) also carry their bytes in `raw`: NCCL's lines on stdout are read by a parser
    // of their own.
    void keepRaw(int rank, RankStream stream);
    // Moves the state of `ranks` into a new object (the ranks of one node), leaving the others here.
    [[nodiscard]] RankStreamParsers take(const QVector<int>& ranks);

private:
    struct Rank {
        EventStreamParser events;
        LineSplitter out;
        LineSplitter err;
        qint64 outLines = 0;
        qint64 errLines = 0;
        bool rawOut = false;
        bool rawErr = false;
    };
    Rank& rank(int rank);

    QHash<int, std::shared_ptr<Rank>> m_ranks;
};

} // namespace rankscope
