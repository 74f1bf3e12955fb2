// SPDX-License-Identifier: MIT
#include "core/arrivalorder.h"

#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QPair>

#include <algorithm>

namespace rankscope {

QVector<StoredPiece> storedPieces(const RunStore& store, const QString& id, int rank, RankStream stream) {
    QVector<StoredPiece> pieces;
    const QFileInfo file(store.streamPath(id, rank, stream));
    if (!file.exists())
        return pieces;
    const qint64 size = file.size();
    qint64 from = 0;
    double last = 0.0;
    for (const auto& [end, time] : store.arrivals(id, rank, stream)) {
        if (end <= from || end > size)
            continue;                // not a piece of this file as it is: ignored, its bytes join the next piece
        last = std::max(last, time); // a clock set back leaves a stream's own order alone
        pieces.append({rank, stream, from, end, last});
        from = end;
    }
    if (from < size)
        pieces.append({rank, stream, from, size, last});
    return pieces;
}

double arrivalOfLineEnding(const QVector<StoredPiece>& pieces, qint64 end) {
    if (pieces.isEmpty())
        return 0.0;
    const auto holding = std::lower_bound(pieces.cbegin(), pieces.cend(), end,
                                          [](const StoredPiece& piece, qint64 at) { return piece.to < at; });
    return holding == pieces.cend() ? pieces.back().arrivedAt : holding->arrivedAt;
}

QVector<StoredPiece> piecesInArrivalOrder(const RunStore& store, const QString& id, const QVector<int>& ranks,
                                          const QVector<RankStream>& streams) {
    QVector<StoredPiece> pieces;
    for (const int rank : ranks)
        for (const RankStream stream : streams)
            pieces += storedPieces(store, id, rank, stream);
    std::stable_sort(pieces.begin(), pieces.end(),
                     [](const StoredPiece& a, const StoredPiece& b) { return a.arrivedAt < b.arrivedAt; });
    return pieces;
}

void visitStoredPieces(const RunStore& store, const QString& id, const QVector<int>& ranks,
                       const QVector<RankStream>& streams,
                       const std::function<void(const StoredPiece& piece, QByteArrayView bytes, bool last)>& visit) {
    QHash<QPair<int, int>, QByteArray> files; // (rank, stream): the file, read once
    for (const StoredPiece& piece : piecesInArrivalOrder(store, id, ranks, streams)) {
        const QPair<int, int> key{piece.rank, static_cast<int>(piece.stream)};
        auto file = files.find(key);
        if (file == files.end()) {
            QFile reading(store.streamPath(id, piece.rank, piece.stream));
            file = files.insert(key, reading.open(QIODevice::ReadOnly) ? reading.readAll() : QByteArray());
        }
        const qint64 to = std::min<qint64>(piece.to, file->size()); // the file may have grown meanwhile
        if (to > piece.from)
            visit(piece, QByteArrayView(*file).sliced(piece.from, to - piece.from), to == file->size());
    }
}

QString formatStoredLines(const QVector<StoredLine>& lines, const QString& indent) {
    QString text;
    for (const StoredLine& line : lines)
        text += indent + QLatin1Char('[') + rankStreamSuffix(line.stream) + QStringLiteral("] ") + line.text +
                QLatin1Char('\n');
    return text;
}

QVector<StoredLine> lastStoredLines(const RunStore& store, const QString& id, int rank, int count, int maxChars) {
    constexpr qint64 kTail = 64 * 1024;
    QVector<StoredLine> lines;
    if (count <= 0)
        return lines;
    for (const RankStream stream : {RankStream::Out, RankStream::Err}) {
        QFile file(store.streamPath(id, rank, stream));
        if (!file.open(QIODevice::ReadOnly))
            continue;
        const qint64 from = std::max<qint64>(0, file.size() - kTail);
        if (!file.seek(from))
            continue;
        const QByteArray tail = file.readAll();
        const QVector<StoredPiece> pieces = storedPieces(store, id, rank, stream);
        // A line cut by the tail's start is not whole: its start lies further back.
        qsizetype start = 0;
        if (from > 0) {
            const qsizetype firstEnd = tail.indexOf('\n');
            if (firstEnd < 0)
                continue;
            start = firstEnd + 1;
        }
        QVector<StoredLine> ofStream;
        while (start < tail.size()) {
            qsizetype end = tail.indexOf('\n', start);
            const qsizetype next = end < 0 ? tail.size() : end + 1;
            if (end < 0)
                end = tail.size();
            // Indentation kept (a traceback's frames); trailing blanks and a CR not.
            QString text = QString::fromUtf8(QByteArrayView(tail).sliced(start, end - start));
            while (!text.isEmpty() && text.back().isSpace())
                text.chop(1);
            if (!text.isEmpty()) {
                ofStream.append({stream, text.left(maxChars), arrivalOfLineEnding(pieces, from + next)});
                if (ofStream.size() > count)
                    ofStream.removeFirst();
            }
            start = next;
        }
        lines += ofStream;
    }
    std::stable_sort(lines.begin(), lines.end(),
                     [](const StoredLine& a, const StoredLine& b) { return a.arrivedAt < b.arrivedAt; });
    if (lines.size() > count)
        lines.remove(0, lines.size() - count);
    return lines;
}

} // namespace rankscope
