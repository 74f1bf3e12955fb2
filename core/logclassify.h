// SPDX-License-Identifier: MIT
#pragma once

#include <QString>
#include <QStringView>

namespace rankscope {

// Ordered: a filter "at least Warning" keeps Warning, Error and Fatal.
enum class LogSeverity : quint8 { Debug, Info, Warning, Error, Fatal };
inline constexpr int kLogSeverityCount = 5;

struct LogLineTraits {
    LogSeverity severity = LogSeverity::Info;
    bool nccl = false; // NCCL's own debug output or PyTorch's ProcessGroupNCCL
};

// Classifies one log line of a rank by the forms distributed PyTorch jobs print: glog prefixes
// ("E1122 10:00:00.123 ..."), c10 prefixes ("[E ProcessGroupNCCL.cpp:458] ..."), NCCL's
// "host:pid:tid [dev] NCCL WARN ...", Python tracebacks and exceptions, Python logging
// ("WARNING:root:..."), the trainer's own "[rank N] error: ..." and RankScope event lines.
// Runs for every line: plain string scans, no regular expressions.
[[nodiscard]] LogLineTraits classifyLogLine(QStringView text);

[[nodiscard]] QString logSeverityName(LogSeverity severity); // "debug", "info", "warning", "error", "fatal"

// The line without the prefix that only names the process that printed it: NCCL's "host:pid:tid [dev] ",
// the trainer's "[rank 3] ", torchrun's "[rank3]:". Lines of many ranks that are equal after it say the same
// thing (the log inspector collapses them into one row).
[[nodiscard]] QStringView withoutProcessPrefix(QStringView text);

} // namespace rankscope
