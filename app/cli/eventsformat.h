// SPDX-License-Identifier: MIT
#pragma once

#include "core/eventstreamparser.h"
#include "core/runsummary.h"

#include <QByteArray>
#include <QString>
#include <QVector>

namespace rankscope::cli {

// What the events command learned from one file.
struct FileResult {
    QString path;
    qint64 eventCount = 0;
    qint64 logLineCount = 0;
    QVector<DecodeError> errors;
};

// What the events command learned from all its files; the summary folds the events of every file.
struct EventsReport {
    QVector<FileResult> files;
    RunSummary summary;

    [[nodiscard]] qint64 decodeErrorCount() const;
};

// Tables for a terminal: files, ranks, rank errors, decode errors as FILE:LINE: MESSAGE.
[[nodiscard]] QString formatEventsText(const EventsReport& report);
// One JSON object with the same content; values are raw, a non-finite number is "nan", "inf" or "-inf"
// (as on the wire) and a value not reported is null.
[[nodiscard]] QByteArray formatEventsJson(const EventsReport& report);

} // namespace rankscope::cli
