// SPDX-License-Identifier: MIT
#include "firstfailure.h"

#include "ranklist.h"

#include <QStringList>

#include <algorithm>

namespace rankscope {

bool failedOnItsOwn(const RankExit& exit, const ErrorEvent* error, const QString& lastStderrLine) {
    static const QStringList consequences = {QStringLiteral("collective"), QStringLiteral("rendezvous"),
                                             QStringLiteral("terminated")};
    if (error)
        return !consequences.contains(error->kind);
    if (exit.status == kLostExitStatus || (exit.signal() != 0 && exit.signal() != 15))
        return true;
    return !lastStderrLine.isEmpty() && exit.signal() == 0; // ended by itself, saying why
}

bool killedBeforeTheTeardownCould(const RankExit& exit, const QDateTime& teardownAt, qint64 graceMs) {
    constexpr int kSigkill = 9;
    return exit.signal() == kSigkill && teardownAt.isValid() && exit.seenAt >= teardownAt &&
           exit.seenAt < teardownAt.addMSecs(graceMs / 2);
}

std::optional<FirstFailure> findFirstFailure(const QMap<int, RankExit>& exits,
                                             const QHash<int, ErrorEvent>& firstErrors,
                                             const QHash<int, QString>& lastStderrLines, const QDateTime& teardownAt,
                                             qint64 teardownGraceMs) {
    struct Candidate {
        int rank = -1;
        QDateTime time;
        bool primary = false;
        QString cause;
    };
    Candidate best;
    QList<Candidate> primaries;
    for (auto it = exits.begin(); it != exits.end(); ++it) {
        const RankExit& exit = it.value();
        if (exit.status == 0 || exit.stopped)
            continue; // a rank the teardown ended did not fail
        const auto error = firstErrors.constFind(it.key());
        const bool hasError = error != firstErrors.cend();
        const QDateTime failedAt = hasError ? std::min(error->time, exit.seenAt) : exit.seenAt;
        if (teardownAt.isValid() && failedAt >= teardownAt &&
            !killedBeforeTheTeardownCould(exit, teardownAt, teardownGraceMs))
            continue;
        const QString said = lastStderrLines.value(it.key());
        Candidate candidate{it.key(), exit.seenAt, failedOnItsOwn(exit, hasError ? &*error : nullptr, said),
                            describeExitStatus(exit.status)};
        if (!said.isEmpty() && exit.signal() == 0)
            candidate.cause += QStringLiteral(" (its last words: %1)").arg(said);
        if (hasError) {
            candidate.time = error->time;
            candidate.cause = QStringLiteral("%1 (%2: %3)")
                                  .arg(describeExitStatus(exit.status), error->kind, error->message.left(200));
        }
        if (candidate.primary)
            primaries.append(candidate);
        const bool better = best.rank < 0 || (candidate.primary && !best.primary) ||
                            (candidate.primary == best.primary && candidate.time < best.time);
        if (better)
            best = candidate;
    }
    if (best.rank < 0)
        return std::nullopt;
    FirstFailure first{best.rank, best.cause, {}};
    if (best.primary) {
        for (const Candidate& other : std::as_const(primaries))
            if (other.rank != best.rank && other.cause == best.cause)
                first.alike.append(other.rank); // exits are a map: in rank order
    }
    return first;
}

QString describeFirstFailure(const FirstFailure& failure, const QString& host, int worldSize) {
    if (failure.alike.isEmpty())
        return QStringLiteral("rank %1 on %2 failed first: %3").arg(failure.rank).arg(host, failure.cause);
    const QVector<int> ranks = QVector<int>{failure.rank} + failure.alike;
    const QString who = ranks.size() == worldSize ? QStringLiteral("every rank (%1)").arg(formatRankList(ranks))
                                                  : QStringLiteral("ranks %1").arg(formatRankList(ranks));
    return QStringLiteral("%1 failed alike, first rank %2 on %3: %4")
        .arg(who)
        .arg(failure.rank)
        .arg(host, failure.cause);
}

} // namespace rankscope
