// SPDX-License-Identifier: MIT
#pragma once

#include "core/kernellog.h"
#include "remote/transport.h"

#include <QString>

namespace rankscope::remote {

// The command that reads a node's kernel log: `dmesg --time-format iso`, else `dmesg`, else
// `journalctl -k -o short-iso --since @SINCE`, each under `timeout` (timeoutSeconds). On stdout the newest
// maxBytes of the first that answers; on stderr, one line each: the node's clock and uptime (for `[seconds]`
// stamps), the pids in runDir's rankR.pid files, the source that answered and how much it printed, and why the
// others did not. Every value reaches the script as a quoted argument of `/bin/sh -c`, never inside its text.
[[nodiscard]] QString kernelLogCommand(double since, int timeoutSeconds, qint64 maxBytes, const QString& runDir);

// What that command's result says. A refusal (dmesg's "Operation not permitted" under kernel.dmesg_restrict, a
// journal the user may not read) is a fact, put in `problem` as a sentence naming `host` and what to do.
[[nodiscard]] KernelLogCapture kernelLogCaptureFrom(const ExecResult& result, const QString& host);

} // namespace rankscope::remote
