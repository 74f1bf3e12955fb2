// SPDX-License-Identifier: MIT
#include "core/trainerevent.h"

#include <rankscope/event_schema.h>

#include <QJsonDocument>
#include <QJsonParseError>
#include <QJsonValue>

#include <cmath>
#include <initializer_list>
#include <utility>

namespace rankscope {

namespace {

enum class JsonKind { String, Number, NumberOrNonFinite, Count, Object, Boolean };

struct FieldRule {
    std::string_view key;
    JsonKind kind;
    bool required = true;
};

using Rules = std::initializer_list<FieldRule>;

constexpr bool kOptional = false;

// The per-type fields of schema 1.0. Counts (ranks, steps, bytes, pids) are non-negative integers.
const Rules kStartRules = {
    {schema::start::kWorldSize, JsonKind::Count},
    {schema::start::kLocalRank, JsonKind::Count},
    {schema::start::kHost, JsonKind::String},
    {schema::start::kPid, JsonKind::Count},
    {schema::start::kBackend, JsonKind::String},
    {schema::start::kDevice, JsonKind::String},
    {schema::start::kTorchVersion, JsonKind::String},
    {schema::start::kConfig, JsonKind::Object},
    {schema::start::kLocalWorldSize, JsonKind::Count, kOptional},
    {schema::start::kStepsPerEpoch, JsonKind::Count, kOptional},
    {schema::start::kTotalSteps, JsonKind::Count, kOptional},
};

const Rules kStepRules = {
    {schema::step::kEpoch, JsonKind::Count},
    {schema::step::kStep, JsonKind::Count},
    {schema::step::kLoss, JsonKind::NumberOrNonFinite},
    {schema::step::kLr, JsonKind::Number},
    {schema::step::kImagesPerSec, JsonKind::Number},
    {schema::step::kStepMs, JsonKind::Number},
    {schema::step::kDataMs, JsonKind::Number},
    {schema::step::kForwardMs, JsonKind::Number},
    {schema::step::kBackwardMs, JsonKind::Number},
    {schema::step::kCommWaitMs, JsonKind::Number},
    {schema::step::kOptimizerMs, JsonKind::Number},
};

const Rules kEvalRules = {
    {schema::eval::kEpoch, JsonKind::Count},
    {schema::eval::kValLoss, JsonKind::NumberOrNonFinite},
    {schema::eval::kValAccuracy, JsonKind::Number},
    {schema::eval::kSamples, JsonKind::Count, kOptional},
};

const Rules kCheckpointRules = {
    {schema::checkpoint::kPath, JsonKind::String}, {schema::checkpoint::kEpoch, JsonKind::Count},
    {schema::checkpoint::kStep, JsonKind::Count},  {schema::checkpoint::kBytes, JsonKind::Count},
    {schema::checkpoint::kMs, JsonKind::Number},
};

const Rules kHeartbeatRules = {
    {schema::heartbeat::kPhase, JsonKind::String},
    {schema::heartbeat::kStep, JsonKind::Count},
    {schema::heartbeat::kCollectiveStarted, JsonKind::Count},
    {schema::heartbeat::kCollectiveFinished, JsonKind::Count},
};

// A diverged model has a NaN parameter sum, and that is exactly when the end event must get through.
const Rules kEndRules = {
    {schema::end::kStatus, JsonKind::String},          {schema::end::kImagesPerSec, JsonKind::Number},
    {schema::end::kWallS, JsonKind::Number},           {schema::end::kParamChecksum, JsonKind::NumberOrNonFinite},
    {schema::end::kSteps, JsonKind::Count, kOptional},
};

const Rules kErrorRules = {
    {schema::error::kKind, JsonKind::String},
    {schema::error::kMessage, JsonKind::String},
    {schema::error::kFatal, JsonKind::Boolean, kOptional},
    {schema::error::kStep, JsonKind::Count, kOptional},
    {schema::error::kChecksum, JsonKind::NumberOrNonFinite, kOptional},
};

const Rules kNoRules = {};

const Rules& rulesFor(TrainerEventType type) {
    switch (type) {
    case TrainerEventType::Start:
        return kStartRules;
    case TrainerEventType::Step:
        return kStepRules;
    case TrainerEventType::Eval:
        return kEvalRules;
    case TrainerEventType::Checkpoint:
        return kCheckpointRules;
    case TrainerEventType::Heartbeat:
        return kHeartbeatRules;
    case TrainerEventType::End:
        return kEndRules;
    case TrainerEventType::Error:
        return kErrorRules;
    case TrainerEventType::Unknown:
        break;
    }
    return kNoRules;
}

std::optional<double> nonFiniteFromString(const QString& text) {
    if (text == QLatin1String("nan"))
        return std::numeric_limits<double>::quiet_NaN();
    if (text == QLatin1String("inf"))
        return std::numeric_limits<double>::infinity();
    if (text == QLatin1String("-inf"))
        return -std::numeric_limits<double>::infinity();
    return std::nullopt;
}

bool isCount(const QJsonValue& value) {
    if (!value.isDouble())
        return false;
    const double number = value.toDouble();
    // 2^63 is exactly representable; anything at or above it does not fit a qint64.
    return number >= 0.0 && number < 9223372036854775808.0 && std::trunc(number) == number;
}

bool hasKind(const QJsonValue& value, JsonKind kind) {
    switch (kind) {
    case JsonKind::String:
        return value.isString();
    case JsonKind::Number:
        return value.isDouble();
    case JsonKind::NumberOrNonFinite:
        return value.isDouble() || (value.isString() && nonFiniteFromString(value.toString()));
    case JsonKind::Count:
        return isCount(value);
    case JsonKind::Object:
        return value.isObject();
    case JsonKind::Boolean:
        return value.isBool();
    }
    return false;
}

QString kindDescription(JsonKind kind) {
    switch (kind) {
    case JsonKind::String:
        return QStringLiteral("a string");
    case JsonKind::Number:
    case JsonKind::NumberOrNonFinite:
        return QStringLiteral("a number");
    case JsonKind::Count:
        return QStringLiteral("a non-negative integer");
    case JsonKind::Object:
        return QStringLiteral("an object");
    case JsonKind::Boolean:
        return QStringLiteral("a boolean");
    }
    return {};
}

// Checks one field; returns an empty string when it is fine.
QString checkField(const QJsonObject& object, const FieldRule& rule, const QString& label) {
    const QString key = jsonKey(rule.key);
    const QJsonValue value = object.value(key);
    if (value.isUndefined())
        return rule.required ? QStringLiteral("%1: missing field '%2'").arg(label, key) : QString();
    if (hasKind(value, rule.kind))
        return {};
    return QStringLiteral("%1: field '%2' must be %3").arg(label, key, kindDescription(rule.kind));
}

struct Version {
    int major = 0;
    int minor = 0;
};

std::optional<int> parseDecimal(QStringView text) {
    if (text.isEmpty() || text.size() > 9)
        return std::nullopt;
    for (const QChar c : text) {
        if (c < QLatin1Char('0') || c > QLatin1Char('9'))
            return std::nullopt;
    }
    return text.toInt();
}

std::optional<Version> parseVersion(const QString& text) {
    const qsizetype dot = text.indexOf(QLatin1Char('.'));
    if (dot < 0)
        return std::nullopt;
    const auto major = parseDecimal(QStringView(text).left(dot));
    const auto minor = parseDecimal(QStringView(text).sliced(dot + 1));
    if (!major || !minor)
        return std::nullopt;
    return Version{*major, *minor};
}

// The envelope: version first, since under another major every other field may mean something else.
QString checkVersion(const QJsonObject& object, const QString& label, Version& version) {
    const QString key = jsonKey(schema::field::kVersion);
    const QJsonValue value = object.value(key);
    if (value.isUndefined())
        return QStringLiteral("%1: missing field '%2'").arg(label, key);
    const auto parsed = value.isString() ? parseVersion(value.toString()) : std::nullopt;
    if (!parsed)
        return QStringLiteral("%1: field '%2' must be a \"MAJOR.MINOR\" string").arg(label, key);
    if (parsed->major != schema::kVersionMajor) {
        return QStringLiteral("%1: unsupported schema version \"%2\" (this reader knows major version %3)")
            .arg(label, value.toString())
            .arg(schema::kVersionMajor);
    }
    version = *parsed;
    return {};
}

QString checkEnvelope(const QJsonObject& object, const QString& label) {
    for (const FieldRule& rule :
         {FieldRule{schema::field::kType, JsonKind::String}, FieldRule{schema::field::kRank, JsonKind::Count},
          FieldRule{schema::field::kTime, JsonKind::Number}}) {
        if (QString error = checkField(object, rule, label); !error.isEmpty())
            return error;
    }
    if (object.value(jsonKey(schema::field::kRank)).toDouble() > std::numeric_limits<int>::max())
        return QStringLiteral("%1: field '%2' is out of range").arg(label, jsonKey(schema::field::kRank));
    return {};
}

QString checkValues(const QJsonObject& object, TrainerEventType type, const QString& label) {
    if (type != TrainerEventType::End)
        return {};
    const QString status = object.value(jsonKey(schema::end::kStatus)).toString();
    if (status == jsonKey(schema::status::kOk) || status == jsonKey(schema::status::kError))
        return {};
    return QStringLiteral("%1: field '%2' must be \"%3\" or \"%4\", not \"%5\"")
        .arg(label, jsonKey(schema::end::kStatus), jsonKey(schema::status::kOk), jsonKey(schema::status::kError),
             status);
}

QString checkTypeFields(const QJsonObject& object, TrainerEventType type, const QString& label) {
    for (const FieldRule& rule : rulesFor(type)) {
        if (QString error = checkField(object, rule, label); !error.isEmpty())
            return error;
    }
    return checkValues(object, type, label);
}

TrainerEventResult failure(QString message) {
    return {std::nullopt, std::move(message)};
}

} // namespace

TrainerEventType trainerEventTypeFromName(QStringView name) {
    static const std::pair<std::string_view, TrainerEventType> kNames[] = {
        {schema::type::kStart, TrainerEventType::Start},
        {schema::type::kStep, TrainerEventType::Step},
        {schema::type::kEval, TrainerEventType::Eval},
        {schema::type::kCheckpoint, TrainerEventType::Checkpoint},
        {schema::type::kHeartbeat, TrainerEventType::Heartbeat},
        {schema::type::kEnd, TrainerEventType::End},
        {schema::type::kError, TrainerEventType::Error},
    };
    for (const auto& [wireName, type] : kNames) {
        if (name == jsonKey(wireName))
            return type;
    }
    return TrainerEventType::Unknown;
}

TrainerEventResult decodeTrainerEvent(QByteArrayView jsonText) {
    QJsonParseError parseError;
    const QJsonDocument document = QJsonDocument::fromJson(jsonText.toByteArray(), &parseError);
    if (parseError.error != QJsonParseError::NoError) {
        return failure(
            QStringLiteral("invalid JSON: %1 at offset %2").arg(parseError.errorString()).arg(parseError.offset));
    }
    if (!document.isObject())
        return failure(QStringLiteral("event: not a JSON object"));
    return decodeTrainerEvent(document.object());
}

TrainerEventResult decodeTrainerEvent(const QJsonObject& object) {
    const QJsonValue typeValue = object.value(jsonKey(schema::field::kType));
    const QString label =
        typeValue.isString() ? typeValue.toString() + QStringLiteral(" event") : QStringLiteral("event");
    Version version;
    if (QString error = checkVersion(object, label, version); !error.isEmpty())
        return failure(error);
    if (QString error = checkEnvelope(object, label); !error.isEmpty())
        return failure(error);
    const TrainerEventType type = trainerEventTypeFromName(typeValue.toString());
    if (QString error = checkTypeFields(object, type, label); !error.isEmpty())
        return failure(error);

    TrainerEvent event;
    event.type = type;
    event.typeName = typeValue.toString();
    event.rank = static_cast<int>(object.value(jsonKey(schema::field::kRank)).toInteger());
    event.time = object.value(jsonKey(schema::field::kTime)).toDouble();
    event.versionMajor = version.major;
    event.versionMinor = version.minor;
    event.fields = object;
    return {std::move(event), {}};
}

double TrainerEvent::number(std::string_view key, double fallback) const {
    const QJsonValue value = fields.value(jsonKey(key));
    if (value.isDouble())
        return value.toDouble();
    if (value.isString())
        return nonFiniteFromString(value.toString()).value_or(fallback);
    return fallback;
}

qint64 TrainerEvent::integer(std::string_view key, qint64 fallback) const {
    return fields.value(jsonKey(key)).toInteger(fallback);
}

QString TrainerEvent::string(std::string_view key) const {
    return fields.value(jsonKey(key)).toString();
}

bool TrainerEvent::boolean(std::string_view key, bool fallback) const {
    return fields.value(jsonKey(key)).toBool(fallback);
}

QJsonObject TrainerEvent::object(std::string_view key) const {
    return fields.value(jsonKey(key)).toObject();
}

} // namespace rankscope
