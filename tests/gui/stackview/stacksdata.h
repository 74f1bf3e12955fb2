// SPDX-License-Identifier: MIT
#pragma once

#include "core/stacks.h"

#include <QFile>

// The recorded gdb output of a hung 2-rank Gloo trainer (tests/data/stacks, as tests/core/tst_stacks.cpp
// reads it): rank 1 sleeps in injectFaults, rank 0 waits for it in the reducer's allreduce.
inline QByteArray recordedStacks(const QString& name) {
    QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/stacks/") + name);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("missing test data %s", qPrintable(name));
    return file.readAll();
}

inline rankscope::StackTree hungGlooTree() {
    rankscope::StackTree tree;
    tree.addRank(0, rankscope::parseStacks(recordedStacks(QStringLiteral("gloo-hang-rank0.gdb.txt"))));
    tree.addRank(1, rankscope::parseStacks(recordedStacks(QStringLiteral("gloo-hang-rank1.gdb.txt"))));
    tree.capturedAt = 1795000000.0;
    tree.runId = QStringLiteral("20261122-120000-abcd");
    return tree;
}
