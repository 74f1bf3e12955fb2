// SPDX-License-Identifier: MIT
#include "eventscommand.h"

#include "cli.h"

#include "core/eventfile.h"

#include <QTextStream>

#include <cstdio>

namespace rankscope::cli {

std::optional<QString> readEventFile(const QString& path, EventsReport& report) {
    FileResult result{path, 0, 0, {}};
    const auto error = rankscope::readEventFile(path, [&](const ParsedBatch& batch) {
        result.eventCount += batch.events.size();
        result.logLineCount += batch.logLines.size();
        result.errors.append(batch.errors);
        report.summary.add(batch.events);
    });
    if (!error)
        report.files.append(result);
    return error;
}

int runEventsCommand(const QStringList& paths, OutputFormat format) {
    EventsReport report;
    for (const QString& path : paths) {
        if (const auto error = readEventFile(path, report)) {
            QTextStream(stderr) << "rankscope-cli events: " << *error << '\n';
            return kExitUsage;
        }
    }
    if (format == OutputFormat::Json) {
        const QByteArray json = formatEventsJson(report);
        std::fwrite(json.constData(), 1, static_cast<size_t>(json.size()), stdout);
    } else {
        QTextStream(stdout) << formatEventsText(report);
    }
    return report.decodeErrorCount() > 0 ? kExitDecodeErrors : kExitOk;
}

} // namespace rankscope::cli
