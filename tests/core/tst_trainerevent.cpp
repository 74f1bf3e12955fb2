// SPDX-License-Identifier: MIT
#include "core/trainerevent.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

#include <cmath>

using rankscope::decodeTrainerEvent;
using rankscope::TrainerEventResult;
using rankscope::TrainerEventType;

Q_DECLARE_METATYPE(TrainerEventType)

namespace {

// One valid event per type, written here rather than taken from core, so a field that core forgets to
// require makes missingRequiredField fail.
QJsonObject validEvent(const QString& type) {
    QJsonObject event{{"v", "1.0"}, {"type", type}, {"rank", 3}, {"time", 1732240800.125}};
    QJsonObject fields;
    if (type == "start") {
        fields = {{"world_size", 4},          {"local_rank", 1},
                  {"host", "node-a"},         {"pid", 4242},
                  {"backend", "nccl"},        {"device", "cuda:1"},
                  {"torch_version", "2.5.1"}, {"config", QJsonObject{{"epochs", 2}}}};
    } else if (type == "step") {
        fields = {{"epoch", 1},
                  {"step", 7},
                  {"loss", 2.5},
                  {"lr", 0.1},
                  {"images_per_sec", 1500.5},
                  {"step_ms", 42.0},
                  {"data_ms", 3.0},
                  {"forward_ms", 12.0},
                  {"backward_ms", 20.0},
                  {"comm_wait_ms", 4.0},
                  {"optimizer_ms", 2.0}};
    } else if (type == "eval") {
        fields = {{"epoch", 1}, {"val_loss", 0.75}, {"val_accuracy", 0.8125}};
    } else if (type == "checkpoint") {
        fields = {{"path", "/scratch/c.pt"}, {"epoch", 1}, {"step", 7}, {"bytes", 1048576}, {"ms", 81.5}};
    } else if (type == "heartbeat") {
        fields = {{"phase", "backward"}, {"step", 7}, {"collective_started", 12}, {"collective_finished", 11}};
    } else if (type == "end") {
        fields = {{"status", "ok"}, {"images_per_sec", 1490.25}, {"wall_s", 12.5}, {"param_checksum", -3.25}};
    } else if (type == "error") {
        fields = {{"kind", "collective"}, {"message", "allreduce timed out"}};
    }
    for (auto it = fields.begin(); it != fields.end(); ++it)
        event.insert(it.key(), it.value());
    return event;
}

TrainerEventResult decode(const QJsonObject& object) {
    return decodeTrainerEvent(QJsonDocument(object).toJson(QJsonDocument::Compact));
}

QJsonValue jsonValue(const QByteArray& text) {
    return QJsonDocument::fromJson("[" + text + "]").array().at(0);
}

enum class Kind { String, Number, Count, Object, Boolean };

// Required fields per type and the JSON type each must have, transcribed from event_schema.h.
const QList<std::tuple<QString, QString, Kind>> kRequiredFields = {
    {"start", "world_size", Kind::Count},
    {"start", "local_rank", Kind::Count},
    {"start", "host", Kind::String},
    {"start", "pid", Kind::Count},
    {"start", "backend", Kind::String},
    {"start", "device", Kind::String},
    {"start", "torch_version", Kind::String},
    {"start", "config", Kind::Object},
    {"step", "epoch", Kind::Count},
    {"step", "step", Kind::Count},
    {"step", "loss", Kind::Number},
    {"step", "lr", Kind::Number},
    {"step", "images_per_sec", Kind::Number},
    {"step", "step_ms", Kind::Number},
    {"step", "data_ms", Kind::Number},
    {"step", "forward_ms", Kind::Number},
    {"step", "backward_ms", Kind::Number},
    {"step", "comm_wait_ms", Kind::Number},
    {"step", "optimizer_ms", Kind::Number},
    {"eval", "epoch", Kind::Count},
    {"eval", "val_loss", Kind::Number},
    {"eval", "val_accuracy", Kind::Number},
    {"checkpoint", "path", Kind::String},
    {"checkpoint", "epoch", Kind::Count},
    {"checkpoint", "step", Kind::Count},
    {"checkpoint", "bytes", Kind::Count},
    {"checkpoint", "ms", Kind::Number},
    {"heartbeat", "phase", Kind::String},
    {"heartbeat", "step", Kind::Count},
    {"heartbeat", "collective_started", Kind::Count},
    {"heartbeat", "collective_finished", Kind::Count},
    {"end", "status", Kind::String},
    {"end", "images_per_sec", Kind::Number},
    {"end", "wall_s", Kind::Number},
    {"end", "param_checksum", Kind::Number},
    {"error", "kind", Kind::String},
    {"error", "message", Kind::String},
};

const QStringList kTypes = {"start", "step", "eval", "checkpoint", "heartbeat", "end", "error"};

} // namespace

class tst_TrainerEvent final : public QObject {
    Q_OBJECT

private slots:
    void decodesEveryType_data();
    void decodesEveryType();
    void missingRequiredField_data();
    void missingRequiredField();
    void wrongFieldType_data();
    void wrongFieldType();
    void invalidJson_data();
    void invalidJson();
    void envelopeErrors_data();
    void envelopeErrors();
    void nonFiniteNumbers_data();
    void nonFiniteNumbers();
    void newerMinorIsAccepted();
    void unknownTypeIsAcceptedAsUnknown();
    void optionalFieldsAreCheckedWhenPresent_data();
    void optionalFieldsAreCheckedWhenPresent();
    void accessors();
    void zeroCountsAndAFailedEnd();
};

void tst_TrainerEvent::decodesEveryType_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<TrainerEventType>("expected");
    const QList<TrainerEventType> enums = {
        TrainerEventType::Start,     TrainerEventType::Step, TrainerEventType::Eval, TrainerEventType::Checkpoint,
        TrainerEventType::Heartbeat, TrainerEventType::End,  TrainerEventType::Error};
    for (qsizetype i = 0; i < kTypes.size(); ++i)
        QTest::newRow(qPrintable(kTypes[i])) << kTypes[i] << enums[i];
}

void tst_TrainerEvent::decodesEveryType() {
    QFETCH(QString, type);
    QFETCH(TrainerEventType, expected);
    const QJsonObject object = validEvent(type);
    const TrainerEventResult result = decode(object);
    QVERIFY2(result.ok(), qPrintable(result.error));
    QVERIFY(result.error.isEmpty());
    QCOMPARE(result.event->type, expected);
    QCOMPARE(result.event->typeName, type);
    QCOMPARE(result.event->rank, 3);
    QCOMPARE(result.event->time, 1732240800.125);
    QCOMPARE(result.event->versionMajor, 1);
    QCOMPARE(result.event->versionMinor, 0);
    QCOMPARE(result.event->fields, object);
    QCOMPARE(result.event->lineNumber, qint64(0));
}

void tst_TrainerEvent::missingRequiredField_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("message");
    for (const auto& [type, field, kind] : kRequiredFields) {
        Q_UNUSED(kind);
        QTest::addRow("%s.%s", qPrintable(type), qPrintable(field))
            << type << field << QStringLiteral("%1 event: missing field '%2'").arg(type, field);
    }
    for (const QString& type : kTypes) {
        for (const char* field : {"v", "rank", "time"}) {
            QTest::addRow("%s.%s", qPrintable(type), qPrintable(field))
                << type << field << QStringLiteral("%1 event: missing field '%2'").arg(type, field);
        }
    }
    QTest::newRow("type") << "step"
                          << "type"
                          << "event: missing field 'type'";
}

void tst_TrainerEvent::missingRequiredField() {
    QFETCH(QString, type);
    QFETCH(QString, field);
    QFETCH(QString, message);
    QJsonObject object = validEvent(type);
    QVERIFY(object.contains(field));
    object.remove(field);
    const TrainerEventResult result = decode(object);
    QVERIFY(!result.ok());
    QCOMPARE(result.error, message);
}

void tst_TrainerEvent::wrongFieldType_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QByteArray>("value");
    QTest::addColumn<QString>("message");

    const auto row = [](const QString& type, const QString& field, const QByteArray& value, const QString& need) {
        QTest::addRow("%s.%s=%s", qPrintable(type), qPrintable(field), value.constData())
            << type << field << value << QStringLiteral("%1 event: field '%2' must be %3").arg(type, field, need);
    };
    for (const auto& [type, field, kind] : kRequiredFields) {
        switch (kind) {
        case Kind::String:
            row(type, field, "7", "a string");
            row(type, field, "null", "a string");
            break;
        case Kind::Number:
            row(type, field, "\"fast\"", "a number");
            row(type, field, "null", "a number");
            break;
        case Kind::Count:
            row(type, field, "1.5", "a non-negative integer");
            row(type, field, "-1", "a non-negative integer");
            row(type, field, "\"3\"", "a non-negative integer");
            break;
        case Kind::Object:
            row(type, field, "[]", "an object");
            break;
        case Kind::Boolean:
            break;
        }
    }
    row("step", "loss", "\"NaN\"", "a number"); // only the exact spellings the trainer writes
    row("eval", "val_loss", "\"infinity\"", "a number");
    row("step", "lr", "\"nan\"", "a number"); // non-finite strings are for loss-like values only
    row("step", "rank", "-1", "a non-negative integer");
    row("step", "rank", "0.5", "a non-negative integer");
    row("step", "time", "\"now\"", "a number");
    row("error", "fatal", "\"yes\"", "a boolean");
    row("step", "v", "1.0", "a \"MAJOR.MINOR\" string");
    row("step", "v", "\"1\"", "a \"MAJOR.MINOR\" string");
    row("step", "v", "\"1.x\"", "a \"MAJOR.MINOR\" string");
    row("step", "v", "\"1.0.0\"", "a \"MAJOR.MINOR\" string");
    row("step", "v", "\"-1.0\"", "a \"MAJOR.MINOR\" string");
    row("step", "v", "\"1.\"", "a \"MAJOR.MINOR\" string");
    row("step", "v", "\".1\"", "a \"MAJOR.MINOR\" string");
    QTest::newRow("type not a string") << "step"
                                       << "type" << QByteArray("5") << "event: field 'type' must be a string";
    QTest::newRow("end status") << "end"
                                << "status" << QByteArray("\"maybe\"")
                                << "end event: field 'status' must be \"ok\" or \"error\", not \"maybe\"";
    QTest::newRow("rank too large") << "step"
                                    << "rank" << QByteArray("3000000000") << "step event: field 'rank' is out of range";
    QTest::newRow("major 2") << "step"
                             << "v" << QByteArray("\"2.0\"")
                             << "step event: unsupported schema version \"2.0\" (this reader knows major version 1)";
    QTest::newRow("major 0")
        << "heartbeat"
        << "v" << QByteArray("\"0.9\"")
        << "heartbeat event: unsupported schema version \"0.9\" (this reader knows major version 1)";
}

void tst_TrainerEvent::wrongFieldType() {
    QFETCH(QString, type);
    QFETCH(QString, field);
    QFETCH(QByteArray, value);
    QFETCH(QString, message);
    QJsonObject object = validEvent(type);
    QVERIFY(object.contains(field) || field == "fatal");
    object.insert(field, jsonValue(value));
    const TrainerEventResult result = decode(object);
    QVERIFY(!result.ok());
    QCOMPARE(result.error, message);
}

void tst_TrainerEvent::invalidJson_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::newRow("truncated") << QByteArray(R"({"v":"1.0","type":"step","ra)");
    QTest::newRow("empty") << QByteArray();
    QTest::newRow("bare nan") << QByteArray(R"({"v":"1.0","loss":NaN})");
    QTest::newRow("two objects") << QByteArray(R"({"v":"1.0"} {"v":"1.0"})");
}

// The wording after the prefix is Qt's own, so only the frame is pinned here.
void tst_TrainerEvent::invalidJson() {
    QFETCH(QByteArray, json);
    const TrainerEventResult result = decodeTrainerEvent(json);
    QVERIFY(!result.ok());
    QVERIFY2(result.error.startsWith(QStringLiteral("invalid JSON: ")), qPrintable(result.error));
    QVERIFY2(result.error.contains(QStringLiteral(" at offset ")), qPrintable(result.error));
}

void tst_TrainerEvent::envelopeErrors_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("message");
    QTest::newRow("array") << QByteArray("[1,2]") << "event: not a JSON object";
    // Under an unknown major nothing else is trusted, so the version is reported, not the missing fields.
    QTest::newRow("major 2 with other fields") << QByteArray(R"({"v":"2.1","type":"tick"})")
                                               << "tick event: unsupported schema version \"2.1\" "
                                                  "(this reader knows major version 1)";
    QTest::newRow("major 2 without type") << QByteArray(R"({"v":"2.0"})")
                                          << "event: unsupported schema version \"2.0\" "
                                             "(this reader knows major version 1)";
}

void tst_TrainerEvent::envelopeErrors() {
    QFETCH(QByteArray, json);
    QFETCH(QString, message);
    const TrainerEventResult result = decodeTrainerEvent(json);
    QVERIFY(!result.ok());
    QCOMPARE(result.error, message);
}

void tst_TrainerEvent::nonFiniteNumbers_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("text");
    QTest::addColumn<double>("expected");
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const auto& [type, field] :
         {std::pair{"step", "loss"}, {"eval", "val_loss"}, {"end", "param_checksum"}, {"error", "checksum"}}) {
        QTest::addRow("%s nan", field) << type << field << "nan" << nan;
        QTest::addRow("%s inf", field) << type << field << "inf" << inf;
        QTest::addRow("%s -inf", field) << type << field << "-inf" << -inf;
    }
}

void tst_TrainerEvent::nonFiniteNumbers() {
    QFETCH(QString, type);
    QFETCH(QString, field);
    QFETCH(QString, text);
    QFETCH(double, expected);
    QJsonObject object = validEvent(type);
    object.insert(field, text);
    const TrainerEventResult result = decode(object);
    QVERIFY2(result.ok(), qPrintable(result.error));
    const double actual = result.event->number(field.toStdString());
    if (std::isnan(expected))
        QVERIFY(std::isnan(actual));
    else
        QCOMPARE(actual, expected);
}

void tst_TrainerEvent::newerMinorIsAccepted() {
    QJsonObject object = validEvent("step");
    object.insert("v", "1.12");
    object.insert("gpu_mem_mb", 812.5); // a field a later minor might add
    const TrainerEventResult result = decode(object);
    QVERIFY2(result.ok(), qPrintable(result.error));
    QCOMPARE(result.event->versionMajor, 1);
    QCOMPARE(result.event->versionMinor, 12);
    QCOMPARE(result.event->number("gpu_mem_mb"), 812.5);
}

void tst_TrainerEvent::unknownTypeIsAcceptedAsUnknown() {
    QJsonObject object{{"v", "1.3"}, {"type", "profile"}, {"rank", 2}, {"time", 5.5}, {"trace", "t.json"}};
    const TrainerEventResult result = decode(object);
    QVERIFY2(result.ok(), qPrintable(result.error));
    QCOMPARE(result.event->type, TrainerEventType::Unknown);
    QCOMPARE(result.event->typeName, QStringLiteral("profile"));
    QCOMPARE(result.event->rank, 2);
    QCOMPARE(result.event->string("trace"), QStringLiteral("t.json"));

    object.remove("rank"); // the envelope is still required of an unknown type
    QCOMPARE(decode(object).error, QStringLiteral("profile event: missing field 'rank'"));
}

void tst_TrainerEvent::optionalFieldsAreCheckedWhenPresent_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QByteArray>("good");
    QTest::addColumn<QByteArray>("bad");
    QTest::addColumn<QString>("message");
    QTest::newRow("start.local_world_size") << "start"
                                            << "local_world_size" << QByteArray("2") << QByteArray("2.5")
                                            << "start event: field 'local_world_size' must be a non-negative integer";
    QTest::newRow("start.steps_per_epoch") << "start"
                                           << "steps_per_epoch" << QByteArray("100") << QByteArray("\"x\"")
                                           << "start event: field 'steps_per_epoch' must be a non-negative integer";
    QTest::newRow("start.total_steps") << "start"
                                       << "total_steps" << QByteArray("200") << QByteArray("-2")
                                       << "start event: field 'total_steps' must be a non-negative integer";
    QTest::newRow("eval.samples") << "eval"
                                  << "samples" << QByteArray("10000") << QByteArray("true")
                                  << "eval event: field 'samples' must be a non-negative integer";
    QTest::newRow("end.steps") << "end"
                               << "steps" << QByteArray("40") << QByteArray("null")
                               << "end event: field 'steps' must be a non-negative integer";
    QTest::newRow("error.fatal") << "error"
                                 << "fatal" << QByteArray("false") << QByteArray("0")
                                 << "error event: field 'fatal' must be a boolean";
}

void tst_TrainerEvent::optionalFieldsAreCheckedWhenPresent() {
    QFETCH(QString, type);
    QFETCH(QString, field);
    QFETCH(QByteArray, good);
    QFETCH(QByteArray, bad);
    QFETCH(QString, message);
    QJsonObject object = validEvent(type);
    QVERIFY(decode(object).ok()); // absent is fine
    object.insert(field, jsonValue(good));
    QVERIFY(decode(object).ok());
    object.insert(field, jsonValue(bad));
    QCOMPARE(decode(object).error, message);
}

// The heartbeat before the first step counts from 0, and a run that failed ends with status "error": both are
// events like any other.
void tst_TrainerEvent::zeroCountsAndAFailedEnd() {
    QJsonObject heartbeat = validEvent("heartbeat");
    for (const char* field : {"step", "collective_started", "collective_finished"})
        heartbeat.insert(field, 0);
    const TrainerEventResult first = decode(heartbeat);
    QVERIFY2(first.ok(), qPrintable(first.error));
    QCOMPARE(first.event->integer("collective_started"), qint64(0));

    QJsonObject end = validEvent("end");
    end.insert("status", "error");
    const TrainerEventResult failed = decode(end);
    QVERIFY2(failed.ok(), qPrintable(failed.error));
    QCOMPARE(failed.event->string("status"), QStringLiteral("error"));
}

void tst_TrainerEvent::accessors() {
    QJsonObject object = validEvent("error");
    const auto event = decode(object).event;
    QVERIFY(event);
    QVERIFY(event->has("kind"));
    QVERIFY(!event->has("fatal"));
    QCOMPARE(event->string("kind"), QStringLiteral("collective"));
    QCOMPARE(event->boolean("fatal", true), true);
    QCOMPARE(event->boolean("fatal", false), false);
    QCOMPARE(event->integer("rank"), qint64(3));
    QCOMPARE(event->integer("absent", -7), qint64(-7));
    QVERIFY(std::isnan(event->number("absent")));
    QCOMPARE(event->number("kind", 4.5), 4.5); // a string that is not a non-finite spelling

    const auto start = decode(validEvent("start")).event;
    QVERIFY(start);
    QCOMPARE(start->object("config"), (QJsonObject{{"epochs", 2}}));
    QCOMPARE(rankscope::trainerEventTypeFromName(u"heartbeat"), TrainerEventType::Heartbeat);
    QCOMPARE(rankscope::trainerEventTypeFromName(u"Heartbeat"), TrainerEventType::Unknown);
}

QTEST_GUILESS_MAIN(tst_TrainerEvent)
#include "tst_trainerevent.moc"
