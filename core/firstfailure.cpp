// SPDX-License-Identifier: MIT
#include "firstfailure.h"

#include <QStringList>

#include <algorithm>

namespace rankscope {

std::optional<FirstFailure> findFirstFailure(const QMap<int, RankExit>& exits,
                                             const QHash<int, ErrorEvent>& firstErrors,
                                             const QHash<int, QString>& lastStderrLines, const QDateTime& teardownAt) {
    static const QStringList consequences = {QStringLiteral("collective"), QStringLiteral("rendezvous"),
                                             QStringLiteral("terminated")};
    struct Candidate {
        int rank = -1;
        QDateTime time;
        bool primary = false;
        QString cause;
    };
    Candidate best;
    for (auto it = exits.begin(); it != exits.end(); ++it) {
        const RankExit& exit = it.value();
        if (exit.status == 0 || exit.stopped)
            continue; // a rank the teardown ended did not fail
        const auto error = firstErrors.constFind(it.key());
        const bool hasError = error != firstErrors.cend();
        const QDateTime failedAt = hasError ? std::min(error->time, exit.seenAt) : exit.seenAt;
        if (teardownAt.isValid() && failedAt >= teardownAt)
            continue;
        Candidate candidate{it.key(), exit.seenAt,
                            exit.status == kLostExitStatus || (exit.signal() != 0 && exit.signal() != 15),
                            describeExitStatus(exit.status)};
        if (const QString said = lastStderrLines.value(it.key()); !said.isEmpty() && exit.signal() == 0) {
            candidate.primary = true; // ended by itself, saying why
            candidate.cause += QStringLiteral(" (its last words: %1)").arg(said);
        }
        if (hasError) {
            candidate.time = error->time;
            candidate.primary = !consequences.contains(error->kind);
            candidate.cause = QStringLiteral("%1 (%2: %3)")
                                  .arg(describeExitStatus(exit.status), error->kind, error->message.left(200));
        }
        const bool better = best.rank < 0 || (candidate.primary && !best.primary) ||
                            (candidate.primary == best.primary && candidate.time < best.time);
        if (better)
            best = candidate;
    }
    if (best.rank < 0)
        return std::nullopt;
    return FirstFailure{best.rank, best.cause};
}

} // namespace rankscope
