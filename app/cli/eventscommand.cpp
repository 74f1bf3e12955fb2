// SPDX-License-Identifier: MIT
#include "eventscommand.h"

#include "cli.h"

#include <QFile>
#include <QTextStream>

#include <cstdio>

namespace rankscope::cli {

namespace {

constexpr qint64 kChunkBytes = 64 * 1024;

void addBatch(const ParsedBatch& batch, FileResult& file, RunSummary& summary) {
    file.eventCount += batch.events.size();
    file.logLineCount += batch.logLines.size();
    file.errors.append(batch.errors);
    summary.add(batch.events);
}

} // namespace

std::optional<QString> readEventFile(const QString& path, EventsReport& report) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return QStringLiteral("cannot open '%1': %2").arg(path, file.errorString());
    FileResult result{path, 0, 0, {}};
    EventStreamParser parser;
    QByteArray chunk;
    // The same chunked feeding as a live stream, so a large file is never held whole in memory.
    while (!(chunk = file.read(kChunkBytes)).isEmpty())
        addBatch(parser.feed(chunk), result, report.summary);
    if (file.error() != QFileDevice::NoError)
        return QStringLiteral("cannot read '%1': %2").arg(path, file.errorString());
    addBatch(parser.finish(), result, report.summary);
    report.files.append(result);
    return std::nullopt;
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
