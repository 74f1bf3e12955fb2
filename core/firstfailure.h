// SPDX-License-Identifier: MIT
#pragma once

#include "runstore.h"

#include <QDateTime>
#include <QHash>
#include <QMap>
#include <QString>
#include <QVector>

#include <optional>

namespace rankscope {

// A rank's first error event, as the trainer reported it.
struct ErrorEvent {
    QDateTime time;
    QString kind; // schema error kind: "injected", "collective", "rendezvous", ...
    QString message;
};

struct FirstFailure {
    int rank = -1;
    QString cause; // "exit status 1 (injected: injected failure at step 3 ...)"
    // Other ranks that failed on their own with exactly this cause, in rank order: a setting or input they share
    // (missing data, a bad flag), where which of them came first by milliseconds says nothing.
    QVector<int> alike;
};

// Whether a rank's non-zero end was its own failure: a lost node, a signal other than the teardown's SIGTERM, its
// own error of a kind that is no consequence, or last words on stderr with no signal. Not so: a collective,
// rendezvous or termination error, a SIGTERM, or an exit that said nothing; what a peer's failure causes.
[[nodiscard]] bool failedOnItsOwn(const RankExit& exit, const ErrorEvent* error, const QString& lastStderrLine);

// Whether a rank's exit, recorded after the teardown began at `teardownAt`, cannot have been the teardown's doing:
// the teardown ends ranks by SIGTERM and sends SIGKILL only `graceMs` later, so a SIGKILL recorded in the first half
// of that was another's (the OOM killer's, a kill -9), and its rank died before the teardown. A busy node's
// supervisor can note such a death late, after a peer whose collective failed at once was seen to exit and started
// the teardown. Half, not all of it: a node's clock, which stamps the exit, may be a little behind the engine's.
[[nodiscard]] bool killedBeforeTheTeardownCould(const RankExit& exit, const QDateTime& teardownAt, qint64 graceMs);

// Which rank failed first. Not simply whose exit was seen first: when one rank dies, its peers fail in their
// next collective within milliseconds, sometimes before the culprit's exit is recorded. A rank that failed on
// its own (its own error, last words on stderr, a signal other than the teardown's SIGTERM, or a lost node) is
// the cause; a collective, rendezvous or termination error is a consequence, named only when there is nothing
// else. With `teardownAt` set, failures that began after the teardown are its doing and are not candidates;
// a culprit whose own error came before the teardown counts however late its exit was recorded, and so does a rank
// killed by SIGKILL before the teardown, which sends its own SIGKILL `teardownGraceMs` after it began, could have
// killed it (killedBeforeTheTeardownCould).
// Ranks whose own failure reads the same as the first's are listed with it (FirstFailure::alike).
[[nodiscard]] std::optional<FirstFailure> findFirstFailure(const QMap<int, RankExit>& exits,
                                                           const QHash<int, ErrorEvent>& firstErrors,
                                                           const QHash<int, QString>& lastStderrLines,
                                                           const QDateTime& teardownAt = {},
                                                           qint64 teardownGraceMs = 0);

// The run's one-line summary of it: "rank 1 on node-b failed first: CAUSE". With ranks alike: "every rank (0-3)
// failed alike, first rank 1 on node-b: CAUSE", or "ranks 1,3 failed alike, ..." when not all `worldSize` did.
[[nodiscard]] QString describeFirstFailure(const FirstFailure& failure, const QString& host, int worldSize);

} // namespace rankscope
