// SPDX-License-Identifier: MIT
#include "eventsformat.h"

#include "texttable.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStringList>

#include <algorithm>
#include <cmath>

namespace rankscope::cli {

namespace {

QString statusName(RankStatus status) {
    switch (status) {
    case RankStatus::Running:
        return QStringLiteral("running");
    case RankStatus::FinishedOk:
        return QStringLiteral("ok");
    case RankStatus::Failed:
        return QStringLiteral("failed");
    }
    return {};
}

// Non-finite values are spelled as on the wire, so text and JSON output agree with the event files.
QString nonFiniteName(double value) {
    if (std::isnan(value))
        return QStringLiteral("nan");
    return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
}

QString formatNumber(const std::optional<double>& value, char format, int precision) {
    if (!value)
        return QStringLiteral("-");
    if (!std::isfinite(*value))
        return nonFiniteName(*value);
    return QString::number(*value, format, precision);
}

QString formatCount(qint64 value) {
    return value > 0 ? QString::number(value) : QStringLiteral("-");
}

QString filesTable(const EventsReport& report) {
    QVector<QStringList> rows{{QStringLiteral("FILE"), QStringLiteral("EVENTS"), QStringLiteral("LOG LINES"),
                               QStringLiteral("DECODE ERRORS")}};
    for (const FileResult& file : report.files) {
        rows.append({file.path, QString::number(file.eventCount), QString::number(file.logLineCount),
                     QString::number(file.errors.size())});
    }
    return formatTable(rows, {Align::Left, Align::Right, Align::Right, Align::Right});
}

// A finished rank shows its whole-run throughput, a running one its latest step's.
std::optional<double> displayedImagesPerSec(const RankState& state) {
    return state.endImagesPerSec ? state.endImagesPerSec : state.imagesPerSec;
}

QString ranksTable(const RunSummary& summary) {
    QVector<QStringList> rows{{QStringLiteral("RANK"), QStringLiteral("HOST"), QStringLiteral("EPOCH"),
                               QStringLiteral("STEP"), QStringLiteral("LOSS"), QStringLiteral("IMG/S"),
                               QStringLiteral("VAL ACC"), QStringLiteral("STATUS")}};
    for (const RankState& state : summary.ranks()) {
        rows.append({QString::number(state.rank), state.host.isEmpty() ? QStringLiteral("-") : state.host,
                     formatCount(state.epoch), formatCount(state.step), formatNumber(state.loss, 'g', 5),
                     formatNumber(displayedImagesPerSec(state), 'f', 1), formatNumber(state.valAccuracy, 'f', 4),
                     statusName(state.status)});
    }
    return formatTable(rows, {Align::Right, Align::Left, Align::Right, Align::Right, Align::Right, Align::Right,
                              Align::Right, Align::Left});
}

QString rankErrorLines(const RunSummary& summary) {
    QString text;
    for (const RankState& state : summary.ranks()) {
        for (const RankError& error : state.errors) {
            text += QStringLiteral("  rank %1: %2: %3%4\n")
                        .arg(QString::number(state.rank), error.kind, error.message,
                             error.fatal ? QStringLiteral(" (fatal)") : QString());
        }
    }
    return text;
}

QString decodeErrorLines(const EventsReport& report) {
    QString text;
    for (const FileResult& file : report.files) {
        for (const DecodeError& error : file.errors)
            text += QStringLiteral("  %1:%2: %3\n").arg(file.path, QString::number(error.lineNumber), error.message);
    }
    return text;
}

QJsonValue jsonNumber(const std::optional<double>& value) {
    if (!value)
        return QJsonValue::Null;
    return std::isfinite(*value) ? QJsonValue(*value) : QJsonValue(nonFiniteName(*value));
}

QJsonObject fileJson(const FileResult& file) {
    QJsonArray errors;
    for (const DecodeError& error : file.errors)
        errors.append(
            QJsonObject{{QStringLiteral("line"), error.lineNumber}, {QStringLiteral("message"), error.message}});
    return {{QStringLiteral("path"), file.path},
            {QStringLiteral("events"), file.eventCount},
            {QStringLiteral("log_lines"), file.logLineCount},
            {QStringLiteral("decode_errors"), errors}};
}

QJsonArray rankErrorsJson(const RankState& state) {
    QJsonArray errors;
    for (const RankError& error : state.errors) {
        errors.append(QJsonObject{{QStringLiteral("time"), error.time},
                                  {QStringLiteral("kind"), error.kind},
                                  {QStringLiteral("message"), error.message},
                                  {QStringLiteral("fatal"), error.fatal}});
    }
    return errors;
}

QJsonObject rankJson(const RankState& state) {
    return {{QStringLiteral("rank"), state.rank},
            {QStringLiteral("host"), state.host.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(state.host)},
            {QStringLiteral("epoch"), state.epoch},
            {QStringLiteral("step"), state.step},
            {QStringLiteral("loss"), jsonNumber(state.loss)},
            {QStringLiteral("images_per_sec"), jsonNumber(state.imagesPerSec)},
            {QStringLiteral("val_loss"), jsonNumber(state.valLoss)},
            {QStringLiteral("val_accuracy"), jsonNumber(state.valAccuracy)},
            {QStringLiteral("end_images_per_sec"), jsonNumber(state.endImagesPerSec)},
            {QStringLiteral("wall_s"), jsonNumber(state.wallSeconds)},
            {QStringLiteral("status"), statusName(state.status)},
            {QStringLiteral("events"), state.eventCount},
            {QStringLiteral("errors"), rankErrorsJson(state)}};
}

} // namespace

qint64 EventsReport::decodeErrorCount() const {
    qint64 count = 0;
    for (const FileResult& file : files)
        count += file.errors.size();
    return count;
}

QString formatEventsText(const EventsReport& report) {
    QString text = QStringLiteral("Files\n") + filesTable(report);
    text += QStringLiteral("\nRanks (world size %1)\n").arg(report.summary.worldSize());
    text += report.summary.ranks().isEmpty() ? QStringLiteral("  (no events)\n") : ranksTable(report.summary);
    if (const QString errors = rankErrorLines(report.summary); !errors.isEmpty())
        text += QStringLiteral("\nErrors reported by ranks\n") + errors;
    if (const QString errors = decodeErrorLines(report); !errors.isEmpty())
        text += QStringLiteral("\nDecode errors\n") + errors;
    return text;
}

QByteArray formatEventsJson(const EventsReport& report) {
    QJsonArray files;
    for (const FileResult& file : report.files)
        files.append(fileJson(file));
    QJsonArray ranks;
    for (const RankState& state : report.summary.ranks())
        ranks.append(rankJson(state));
    const QJsonObject root{{QStringLiteral("files"), files},
                           {QStringLiteral("world_size"), report.summary.worldSize()},
                           {QStringLiteral("ranks"), ranks},
                           {QStringLiteral("decode_error_count"), report.decodeErrorCount()}};
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

} // namespace rankscope::cli
