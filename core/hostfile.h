// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"

#include <QByteArrayView>
#include <QVector>

namespace rankscope {

// The nodes of a DeepSpeed-style hostfile, one per line:
//
//   worker-1 slots=4   # four GPUs, four ranks
//   worker-2           # no slots: gpus and procs come from node_defaults, else one CPU rank
//
// "slots=N" sets gpus and procs to N. '#' starts a comment; blank lines are skipped. A node's procs is 0
// when its line has no slots, meaning "not set": parseJob resolves it.
struct HostfileResult {
    QVector<NodeSpec> nodes;
    QVector<int> lines;       // the 1-based line of each node, for messages that name it
    QVector<JobIssue> issues; // path "hostfile:LINE"

    [[nodiscard]] bool ok() const { return issues.isEmpty(); }
};

// Reports every bad line (bad slots, a host twice, a token other than slots=N) and keeps the good ones.
[[nodiscard]] HostfileResult parseHostfile(QByteArrayView text);

// "hostfile:LINE", the path of an issue on that line.
[[nodiscard]] QString hostfileLinePath(int line);

} // namespace rankscope
