// SPDX-License-Identifier: MIT
// Recorded logs as the engine delivers them: RankLogLines in batches, one batch per GUI tick.
#pragma once

#include "core/runstore.h"

#include <QFile>
#include <QRegularExpression>
#include <QVector>

#include <algorithm>

namespace rankscope::test {

inline QString dataPath(const QString& name) {
    return QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/") + name;
}

// Every line of a recorded stream, the i-th received at start + i * step: ranks that print in step
// then interleave as they do live.
inline QVector<RankLogLine> readRankLog(const QString& name, int rank, RankStream stream, double start,
                                        double step = 0.01) {
    QVector<RankLogLine> lines;
    QFile file(dataPath(name));
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(file.fileName()));
    for (QByteArray line; !file.atEnd();) {
        line = file.readLine();
        if (line.endsWith('\n'))
            line.chop(1);
        const qint64 number = lines.size() + 1;
        lines.append({rank, stream, number, QString::fromUtf8(line), start + double(number - 1) * step});
    }
    return lines;
}

// The public NCCL samples of one issue thread (by the "# source:" line containing `source`), one
// RankLogLine per line, the rank taken from NCCL's "[dev]" or torch's "[rankN]:". Lines without a rank
// (NCCL's version banner) belong to `defaultRank`.
inline QVector<RankLogLine> readNcclSample(const QString& source, double start, int defaultRank = 0) {
    QFile file(dataPath(QStringLiteral("logs/nccl-public-samples.log")));
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text))
        qFatal("cannot read %s", qPrintable(file.fileName()));
    static const QRegularExpression rankPattern(QStringLiteral(R"(^\S+:\d+:\d+ \[(\d+)\]|^\[rank(\d+)\]:)"));
    QVector<RankLogLine> lines;
    QHash<int, qint64> numbers;
    bool inSection = false;
    while (!file.atEnd()) {
        const QString text = QString::fromUtf8(file.readLine()).chopped(1);
        if (text.startsWith(u'#')) {
            inSection = text.startsWith(QStringLiteral("# source:")) && text.contains(source);
            continue;
        }
        if (!inSection)
            continue;
        const auto match = rankPattern.match(text);
        const int rank = match.hasMatch() ? (match.captured(1) + match.captured(2)).toInt() : defaultRank;
        const qint64 number = ++numbers[rank];
        lines.append({rank, RankStream::Err, number, text, start + double(number - 1) * 0.01 + rank * 0.001});
    }
    return lines;
}

// Several streams merged by arrival time and cut into batches of `tick` seconds, each stream's lines in
// order within a batch, as RunEngine::logLines delivers them.
inline QVector<QVector<RankLogLine>> intoBatches(QVector<RankLogLine> lines, double tick = 0.1) {
    std::stable_sort(lines.begin(), lines.end(),
                     [](const RankLogLine& a, const RankLogLine& b) { return a.receivedAt < b.receivedAt; });
    QVector<QVector<RankLogLine>> batches;
    double batchEnd = -1.0;
    for (const RankLogLine& line : lines) {
        if (batches.isEmpty() || line.receivedAt >= batchEnd) {
            batches.append(QVector<RankLogLine>());
            batchEnd = line.receivedAt + tick;
        }
        batches.last().append(line);
    }
    return batches;
}

// The four recorded streams of a real 2-rank trainer run ("ok" or "fail"): stdout with event lines,
// stderr with progress and errors.
inline QVector<RankLogLine> recordedTrainerRun(const QString& run, double start = 1795328000.0) {
    QVector<RankLogLine> all;
    for (int rank = 0; rank < 2; ++rank) {
        const QString base = QStringLiteral("logs/trainer-%1-rank%2.").arg(run).arg(rank);
        all += readRankLog(base + QStringLiteral("out"), rank, RankStream::Out, start + rank * 0.003);
        all += readRankLog(base + QStringLiteral("err"), rank, RankStream::Err, start + 0.005 + rank * 0.003);
    }
    return all;
}

} // namespace rankscope::test
