// SPDX-License-Identifier: MIT
#pragma once

#include "core/diagnostics.h"
#include "core/jobspec.h"
#include "core/runstore.h"
#include "remote/runengine.h"

#include <QFile>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTest>

#include <algorithm>
#include <vector>

namespace rankscope::test {

// A job from JSON text, failing the test on any issue.
// Stops every run of `store` whose end was not seen: what a test that failed half-way left running (its ranks'
// command lines do not name the test's directory, so `pkill -f` on it misses them). For cleanupTestCase.
inline void stopRunsLeftIn(RunStore& store, remote::EngineOptions options) {
    options.captureStacksOnHang = false;
    for (const RunRecord& record : store.list()) {
        if (record.endSeen())
            continue;
        remote::RunEngine engine(&store, options);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        if (engine.attach(record.id, nullptr) && engine.isActive()) {
            engine.stop();
            finished.wait(60000);
        }
    }
}

inline JobSpec jobFrom(const QJsonObject& json) {
    const JobParseResult result = parseJob(QJsonDocument(json).toJson());
    for (const JobIssue& issue : result.issues)
        qWarning("job issue: %s", qPrintable(issue.toString()));
    return result.job.value_or(JobSpec());
}

// A stand-in program (a fake trainer, a fake debugger): `text` written to `path`, executable by its owner.
inline bool writeExecutable(const QString& path, const QByteArray& text) {
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(text) == text.size() && file.flush() &&
           file.setPermissions(file.permissions() | QFileDevice::ExeOwner);
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

// The findings of one kind that a QSignalSpy on RunEngine::diagnoses saw, in the order they came.
inline QVector<Diagnosis> collected(const QSignalSpy& diagnoses, DiagnosisKind kind) {
    QVector<Diagnosis> found;
    for (const auto& call : diagnoses)
        for (const Diagnosis& d : call.front().value<QVector<Diagnosis>>())
            if (d.kind == kind)
                found.append(d);
    return found;
}

// The heartbeats a QSignalSpy on RunEngine::events saw, each rank's in stream order.
inline QVector<TrainerEvent> heartbeats(const QSignalSpy& events) {
    QVector<TrainerEvent> found;
    for (const auto& call : events)
        for (const TrainerEvent& event : call.front().value<QVector<TrainerEvent>>())
            if (event.type == TrainerEventType::Heartbeat)
                found.append(event);
    return found;
}

// The heartbeat interval the ranks report: the median gap between a rank's consecutive heartbeats (the engine
// measures it the same way). 0 before any rank sent two.
inline double heartbeatInterval(const QSignalSpy& events) {
    std::vector<double> gaps;
    QHash<int, double> last;
    for (const TrainerEvent& beat : heartbeats(events)) {
        if (last.contains(beat.rank))
            gaps.push_back(beat.time - last.value(beat.rank));
        last.insert(beat.rank, beat.time);
    }
    if (gaps.empty())
        return 0.0;
    std::nth_element(gaps.begin(), gaps.begin() + std::ptrdiff_t(gaps.size() / 2), gaps.end());
    return gaps[gaps.size() / 2];
}

// When a hang became visible in the events: each rank's heartbeats (step, phase, collective counters) stay the
// same from some heartbeat on up to `until`, and the last rank to show its final state did so at the time
// returned. Measured from the first waiting rank instead, a hung rank whose heartbeat thread ticks up to an
// interval later (ranks on other nodes start at other moments) would be counted against the engine. 0 when no
// heartbeat came by `until`.
inline double stillSince(const QSignalSpy& events, double until) {
    struct Still {
        QString state;
        double since = 0.0;
    };
    QHash<int, Still> ranks;
    for (const TrainerEvent& beat : heartbeats(events)) {
        if (beat.time > until)
            continue;
        const QString state = QStringLiteral("%1 %2 %3 %4")
                                  .arg(beat.integer("step"))
                                  .arg(beat.string("phase"))
                                  .arg(beat.integer("collective_started"))
                                  .arg(beat.integer("collective_finished"));
        Still& still = ranks[beat.rank];
        if (still.state != state)
            still = {state, beat.time};
    }
    double since = 0.0;
    for (const Still& still : std::as_const(ranks))
        since = std::max(since, still.since);
    return since;
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
