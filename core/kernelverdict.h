// SPDX-License-Identifier: MIT
#pragma once

#include "core/kernellog.h"

#include <QString>

namespace rankscope {

// A rank that died by a signal, as the run knows it.
struct RankDeath {
    int rank = -1;
    QString host;
    qint64 pid = -1; // its process (its start event, else the supervisor's pid file); -1 when unknown
    int signal = 0;
    double diedAt = kUnknownTime;                          // when its exit was recorded (Unix seconds)
    double runStarted = kUnknownTime;                      // an earlier kill of the same pid was another process's
    QString program = QStringLiteral("rankscope-trainer"); // the kernel names it by its first 15 bytes
};

// What the kernel log of the rank's node says about its death, in words for the root cause:
//  - the OOM kill of its process: by pid; when the pid is unknown or differs (a container's pid namespace), by
//    the program's name within two minutes before the death ("most likely");
//  - an OOM kill of another process near that time, which freed memory but not the rank's;
//  - GPU Xid errors on the node from five minutes before the death, or of the rank's pid, with their meaning;
//  - for a SIGKILL, that the log shows no OOM kill of it;
//  - or that the log could not be read, and why.
// Empty when there is nothing to say (a signal other than SIGKILL, and neither an OOM kill nor an Xid).
[[nodiscard]] QString kernelLogVerdict(const RankDeath& death, const KernelLogCapture& capture);

// "2.0 GiB", "640 MiB", "12 KiB".
[[nodiscard]] QString formatKiB(qint64 kib);

} // namespace rankscope
