// SPDX-License-Identifier: MIT
#pragma once

#include "eventsformat.h"

#include <QString>
#include <QStringList>

#include <optional>

namespace rankscope::cli {

enum class OutputFormat { Text, Json };

// Reads one file through an EventStreamParser into the report. Returns a message naming the file when
// it cannot be read.
[[nodiscard]] std::optional<QString> readEventFile(const QString& path, EventsReport& report);

// `rankscope-cli events FILE... [--json]`; returns the exit code.
[[nodiscard]] int runEventsCommand(const QStringList& paths, OutputFormat format);

} // namespace rankscope::cli
