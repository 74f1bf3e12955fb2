// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArrayView>
#include <QJsonObject>
#include <QLatin1String>
#include <QString>

#include <limits>
#include <optional>
#include <string_view>

namespace rankscope {

enum class TrainerEventType { Unknown, Start, Step, Eval, Checkpoint, Heartbeat, End, Error };

// The schema's names are std::string_view (the header is Qt-free); this turns one into a QJsonObject key.
[[nodiscard]] inline QLatin1String jsonKey(std::string_view name) {
    return QLatin1String(name.data(), static_cast<qsizetype>(name.size()));
}
// ... and this one of the schema's texts into bytes to find in a log ("@rankscope ", "] error: ").
[[nodiscard]] inline QByteArrayView schemaBytes(std::string_view text) {
    return {text.data(), static_cast<qsizetype>(text.size())};
}

// Maps a wire type name to the enum; names this build does not know map to Unknown.
[[nodiscard]] TrainerEventType trainerEventTypeFromName(QStringView name);

// One decoded event line. Field names are those of <rankscope/event_schema.h>.
struct TrainerEvent {
    TrainerEventType type = TrainerEventType::Unknown;
    QString typeName; // as written on the wire, also when type is Unknown
    int rank = 0;
    double time = 0.0; // Unix seconds
    int versionMajor = 0;
    int versionMinor = 0;
    QJsonObject fields;    // the whole object, envelope included, so fields added by later minors are kept
    qint64 lineNumber = 0; // 1-based line in its stream, set by EventStreamParser; 0 otherwise

    [[nodiscard]] bool has(std::string_view key) const { return fields.contains(jsonKey(key)); }
    // A number; the strings "nan", "inf" and "-inf" (how the trainer writes non-finite values) also count.
    [[nodiscard]] double number(std::string_view key, double fallback = std::numeric_limits<double>::quiet_NaN()) const;
    [[nodiscard]] qint64 integer(std::string_view key, qint64 fallback = 0) const;
    [[nodiscard]] QString string(std::string_view key) const;
    [[nodiscard]] bool boolean(std::string_view key, bool fallback) const;
    [[nodiscard]] QJsonObject object(std::string_view key) const;
};

// Either an event or a message that names the event type and the offending field,
// e.g. "step event: field 'loss' must be a number".
struct TrainerEventResult {
    std::optional<TrainerEvent> event;
    QString error;

    [[nodiscard]] bool ok() const { return event.has_value(); }
};

// Decodes and validates the JSON text of one event (the part after the line prefix).
//
// Checked: "v" is "MAJOR.MINOR" with the major this build knows (any minor: minors only add fields);
// "type" is a string; "rank" is a non-negative integer; "time" is a number; and each required field of
// a known type is present with its JSON type. Optional fields of schema 1.0 are checked when present.
// Fields nobody knows are kept, not rejected.
//
// A type name this build does not know, under the known major, is accepted as TrainerEventType::Unknown
// rather than rejected: a newer minor may add event types, and an old reader should skip them, not
// report every one as an error.
[[nodiscard]] TrainerEventResult decodeTrainerEvent(QByteArrayView jsonText);
[[nodiscard]] TrainerEventResult decodeTrainerEvent(const QJsonObject& object);

} // namespace rankscope
