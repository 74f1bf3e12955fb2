// SPDX-License-Identifier: MIT
// The stored streams of a run's ranks in the order their bytes reached this machine. The store keeps each rank
// stream byte for byte, one file per stream, and beside it when each appended piece arrived
// (RunStore::arrivals). Reading the files one after another shows rank 0's whole log before rank 1's; cut at
// those arrivals and merged by time, a stored run reads as it did live: which rank spoke first, and when.
#pragma once

#include "core/runstore.h"

#include <QByteArrayView>
#include <QString>
#include <QVector>

#include <functional>

namespace rankscope {

// Bytes [from, to) of a rank's stored stream, and when they arrived (Unix seconds; 0: not recorded, a run stored
// before arrivals were kept).
struct StoredPiece {
    int rank = 0;
    RankStream stream = RankStream::Out;
    qint64 from = 0;
    qint64 to = 0;
    double arrivedAt = 0.0;
};

// One stored stream's bytes in the pieces they arrived in, in stream order: what piecesInArrivalOrder merges.
// Empty when the stream has no file.
[[nodiscard]] QVector<StoredPiece> storedPieces(const RunStore& store, const QString& id, int rank, RankStream stream);

// When the stored line that ends just before byte `end` of its stream arrived: the time of the piece holding
// that byte (`pieces` as storedPieces gives them). Bytes past the last piece take its time; 0 without pieces.
[[nodiscard]] double arrivalOfLineEnding(const QVector<StoredPiece>& pieces, qint64 end);

// Every stored byte of `ranks` x `streams`, in pieces, by time of arrival; among equal times (and untimed
// pieces, which come first) ranks and streams keep the order given. Bytes past the last recorded arrival (a
// stop between the two writes) join the stream's last time. A stream with no file gives nothing.
[[nodiscard]] QVector<StoredPiece> piecesInArrivalOrder(const RunStore& store, const QString& id,
                                                        const QVector<int>& ranks, const QVector<RankStream>& streams);

// Goes through piecesInArrivalOrder, reading each stream's file once: `visit` gets each piece with its bytes, and
// whether it is its stream's last.
void visitStoredPieces(const RunStore& store, const QString& id, const QVector<int>& ranks,
                       const QVector<RankStream>& streams,
                       const std::function<void(const StoredPiece& piece, QByteArrayView bytes, bool last)>& visit);

// A line a rank wrote, as stored, and when it arrived.
struct StoredLine {
    RankStream stream = RankStream::Out;
    QString text;           // without its line end, cut at the length asked
    double arrivedAt = 0.0; // Unix seconds; 0: not recorded
};

// What a rank said last: the last `count` lines of its stdout and stderr that are not blank, by time of arrival
// (the newest last; on equal times stdout before stderr), each cut at `maxChars`. Only the last 64 KiB of each
// stream is read, so a rank that logged for days costs no more than one that did not.
[[nodiscard]] QVector<StoredLine> lastStoredLines(const RunStore& store, const QString& id, int rank, int count,
                                                  int maxChars = 300);

// The lines as the front ends show them, one per line ending in '\n': `indent`, "[out] " or "[err] ", the text.
[[nodiscard]] QString formatStoredLines(const QVector<StoredLine>& lines, const QString& indent = {});

} // namespace rankscope
