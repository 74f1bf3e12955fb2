// SPDX-License-Identifier: MIT
// The benchmarks' command lines: "--name VALUE" pairs, each optional.
#pragma once

#include <QString>
#include <QStringList>

namespace rankscope::bench {

// The value after `name` in `args`, or `fallback` where `name` is not given or is last.
[[nodiscard]] inline QString option(const QStringList& args, const char* name, const QString& fallback) {
    const qsizetype at = args.indexOf(QLatin1String(name));
    return at > 0 && at + 1 < args.size() ? args[at + 1] : fallback;
}

} // namespace rankscope::bench
