// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"
#include "core/runstore.h"
#include "remote/runengine.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTest>

namespace rankscope::test {

// A job from JSON text, failing the test on any issue.
inline JobSpec jobFrom(const QJsonObject& json) {
    const JobParseResult result = parseJob(QJsonDocument(json).toJson());
    for (const JobIssue& issue : result.issues)
        qWarning("job issue: %s", qPrintable(issue.toString()));
    return result.job.value_or(JobSpec());
}

inline QByteArray readAll(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// Every stored stream of a run equals the node's file byte for byte (the node's files are reachable on
// this machine: loopback and namespace nodes share its file system).
inline bool storeMatchesNodes(const RunStore& store, const RunRecord& record, QString* mismatch) {
    for (const RunNodeRecord& node : record.nodes)
        for (const int rank : node.ranks)
            for (const RankStream stream : kRankStreams) {
                const QString remote =
                    node.runDir + QStringLiteral("/rank%1.%2").arg(rank).arg(rankStreamSuffix(stream));
                const QByteArray expected = readAll(remote);
                const QByteArray got = readAll(store.streamPath(record.id, rank, stream));
                if (expected != got) {
                    *mismatch = QStringLiteral("%1: node has %2 bytes, store %3")
                                    .arg(remote)
                                    .arg(expected.size())
                                    .arg(got.size());
                    return false;
                }
            }
    return true;
}

// Whether a QSignalSpy on RunEngine::events saw `rank` (any rank when -1) reach `step`.
inline bool steppedTo(const QSignalSpy& events, int rank, qint64 step) {
    for (const auto& call : events)
        for (const TrainerEvent& event : call.front().value<QVector<TrainerEvent>>())
            if ((rank < 0 || event.rank == rank) && event.type == TrainerEventType::Step &&
                event.integer("step") >= step)
                return true;
    return false;
}

// The step numbers of one rank's stored events: each exactly once, in order, none missing.
inline bool stepsAreContiguous(const QByteArray& events, int* steps) {
    qint64 expected = 1;
    qint64 epoch = 0;
    for (const QByteArray& line : events.split('\n')) {
        if (!line.startsWith("@rankscope "))
            continue;
        const QJsonObject event = QJsonDocument::fromJson(line.mid(11)).object();
        if (event.value("type").toString() != QLatin1String("step"))
            continue;
        if (event.value("epoch").toInteger() != epoch) {
            epoch = event.value("epoch").toInteger();
            expected = event.value("step").toInteger() == 1 ? 1 : expected;
        }
        if (event.value("step").toInteger() != expected)
            return false;
        ++expected;
        ++*steps;
    }
    return *steps > 0;
}

} // namespace rankscope::test
