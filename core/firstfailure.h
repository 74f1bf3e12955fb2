// SPDX-License-Identifier: MIT
#pragma once

#include "runstore.h"

#include <QDateTime>
#include <QHash>
#include <QMap>
#include <QString>

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
};

// Which rank failed first. Not simply whose exit was seen first: when one rank dies, its peers fail in their
// next collective within milliseconds, sometimes before the culprit's exit is recorded. A rank that failed on
// its own (its own error, last words on stderr, a signal other than the teardown's SIGTERM, or a lost node) is
// the cause; a collective, rendezvous or termination error is a consequence, named only when there is nothing
// else. With `teardownAt` set, failures that began after the teardown are its doing and are not candidates;
// a culprit whose own error came before the teardown counts however late its exit was recorded.
[[nodiscard]] std::optional<FirstFailure> findFirstFailure(const QMap<int, RankExit>& exits,
                                                           const QHash<int, ErrorEvent>& firstErrors,
                                                           const QHash<int, QString>& lastStderrLines,
                                                           const QDateTime& teardownAt = {});

} // namespace rankscope
