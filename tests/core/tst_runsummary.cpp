// SPDX-License-Identifier: MIT
#include "core/eventstreamparser.h"
#include "core/runsummary.h"

#include <QFile>
#include <QTest>

#include <cmath>

using rankscope::RankState;
using rankscope::RankStatus;
using rankscope::RunSummary;
using rankscope::TrainerEvent;

Q_DECLARE_METATYPE(RankStatus)

namespace {

// Builds a valid event of the given type with its required fields; `extra` overrides or adds fields.
TrainerEvent makeEvent(const QString& type, int rank, double time, const QJsonObject& extra = {}) {
    QJsonObject object{{"v", "1.0"}, {"type", type}, {"rank", rank}, {"time", time}};
    QJsonObject fields;
    if (type == "start") {
        fields = {{"world_size", 2},   {"local_rank", 0}, {"host", "node-a"},         {"pid", 100},
                  {"backend", "gloo"}, {"device", "cpu"}, {"torch_version", "2.5.1"}, {"config", QJsonObject{}}};
    } else if (type == "step") {
        fields = {{"epoch", 1},
                  {"step", 1},
                  {"loss", 2.0},
                  {"lr", 0.1},
                  {"images_per_sec", 100.0},
                  {"step_ms", 1.0},
                  {"data_ms", 1.0},
                  {"forward_ms", 1.0},
                  {"backward_ms", 1.0},
                  {"comm_wait_ms", 1.0},
                  {"optimizer_ms", 1.0}};
    } else if (type == "eval") {
        fields = {{"epoch", 1}, {"val_loss", 1.0}, {"val_accuracy", 0.5}};
    } else if (type == "checkpoint") {
        fields = {{"path", "/c.pt"}, {"epoch", 1}, {"step", 1}, {"bytes", 10}, {"ms", 1.0}};
    } else if (type == "heartbeat") {
        fields = {{"phase", "forward"}, {"step", 1}, {"collective_started", 1}, {"collective_finished", 1}};
    } else if (type == "end") {
        fields = {{"status", "ok"}, {"images_per_sec", 90.0}, {"wall_s", 10.0}, {"param_checksum", 1.5}};
    } else if (type == "error") {
        fields = {{"kind", "internal"}, {"message", "boom"}};
    }
    for (const QJsonObject& source : {fields, extra}) {
        for (auto it = source.begin(); it != source.end(); ++it)
            object.insert(it.key(), it.value());
    }
    const auto result = rankscope::decodeTrainerEvent(object);
    if (!result.ok())
        qFatal("test event does not decode: %s", qPrintable(result.error));
    return *result.event;
}

QVector<TrainerEvent> parseFile(const QString& name) {
    QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/events/") + name);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot open test data %s", qPrintable(file.fileName()));
    rankscope::EventStreamParser parser;
    auto batch = parser.feed(file.readAll());
    batch.append(parser.finish());
    return batch.events;
}

} // namespace

class tst_RunSummary final : public QObject {
    Q_OBJECT

private slots:
    void status_data();
    void status();
    void stepEvalCheckpointHeartbeatEnd();
    void nanLossIsAReportNotAGap();
    void errorsAreCollected();
    void ranksAndWorldSize();
    void unknownTypeIsCountedOnly();
    void cleanRunFromFiles();
    void failedRunFromFile();
    void progressWithinEpochsAndMaxSteps();
    void stepIsTheLatestNotTheHighest();
};

void tst_RunSummary::status_data() {
    QTest::addColumn<QStringList>("types");
    QTest::addColumn<QList<QJsonObject>>("extras");
    QTest::addColumn<RankStatus>("expected");
    const QJsonObject none;
    const QJsonObject endError{{"status", "error"}};
    const QJsonObject nonFatal{{"fatal", false}};
    const QJsonObject fatal{{"fatal", true}};
    QTest::newRow("started") << QStringList{"start"} << QList<QJsonObject>{none} << RankStatus::Running;
    QTest::newRow("stepping") << QStringList{"start", "step", "heartbeat"} << QList<QJsonObject>{none, none, none}
                              << RankStatus::Running;
    QTest::newRow("end ok") << QStringList{"start", "end"} << QList<QJsonObject>{none, none} << RankStatus::FinishedOk;
    QTest::newRow("end error") << QStringList{"start", "end"} << QList<QJsonObject>{none, endError}
                               << RankStatus::Failed;
    QTest::newRow("fatal error") << QStringList{"start", "error"} << QList<QJsonObject>{none, fatal}
                                 << RankStatus::Failed;
    QTest::newRow("error without fatal is fatal")
        << QStringList{"start", "error"} << QList<QJsonObject>{none, none} << RankStatus::Failed;
    QTest::newRow("non-fatal error") << QStringList{"start", "error"} << QList<QJsonObject>{none, nonFatal}
                                     << RankStatus::Running;
    QTest::newRow("non-fatal error, then end ok")
        << QStringList{"start", "error", "end"} << QList<QJsonObject>{none, nonFatal, none} << RankStatus::FinishedOk;
    QTest::newRow("failure is final") << QStringList{"start", "error", "end"} << QList<QJsonObject>{none, fatal, none}
                                      << RankStatus::Failed;
    QTest::newRow("heartbeat after end") << QStringList{"start", "end", "heartbeat"}
                                         << QList<QJsonObject>{none, none, none} << RankStatus::FinishedOk;
}

void tst_RunSummary::status() {
    QFETCH(QStringList, types);
    QFETCH(QList<QJsonObject>, extras);
    QFETCH(RankStatus, expected);
    RunSummary summary;
    for (qsizetype i = 0; i < types.size(); ++i)
        summary.add(makeEvent(types[i], 0, double(i), extras[i]));
    QVERIFY(summary.rank(0));
    QCOMPARE(summary.rank(0)->status, expected);
}

void tst_RunSummary::stepEvalCheckpointHeartbeatEnd() {
    RunSummary summary;
    summary.add(makeEvent("start", 1, 1.0, {{"host", "node-b"}, {"pid", 777}, {"world_size", 4}}));
    summary.add(makeEvent("step", 1, 2.0, {{"epoch", 1}, {"step", 5}, {"loss", 1.5}, {"images_per_sec", 1234.5}}));
    summary.add(makeEvent("step", 1, 3.0, {{"epoch", 2}, {"step", 6}, {"loss", 1.25}, {"images_per_sec", 1300.0}}));
    summary.add(makeEvent("eval", 1, 4.0, {{"epoch", 2}, {"val_loss", 0.9}, {"val_accuracy", 0.625}}));
    summary.add(makeEvent("checkpoint", 1, 5.0, {{"path", "/s/ck.pt"}, {"step", 6}}));
    summary.add(
        makeEvent("heartbeat", 1, 6.0, {{"phase", "backward"}, {"collective_started", 9}, {"collective_finished", 8}}));
    const RankState* state = summary.rank(1);
    QVERIFY(state);
    QVERIFY(state->started);
    QCOMPARE(state->host, QStringLiteral("node-b"));
    QCOMPARE(state->pid, qint64(777));
    QCOMPARE(state->worldSize, 4);
    QCOMPARE(state->epoch, qint64(2));
    QCOMPARE(state->step, qint64(6));
    QCOMPARE(state->loss, std::optional<double>(1.25));
    QCOMPARE(state->imagesPerSec, std::optional<double>(1300.0));
    QCOMPARE(state->evalEpoch, qint64(2));
    QCOMPARE(state->valLoss, std::optional<double>(0.9));
    QCOMPARE(state->valAccuracy, std::optional<double>(0.625));
    QCOMPARE(state->lastCheckpointPath, QStringLiteral("/s/ck.pt"));
    QCOMPARE(state->lastCheckpointStep, qint64(6));
    QCOMPARE(state->phase, QStringLiteral("backward"));
    QCOMPARE(state->collectiveStarted, qint64(9));
    QCOMPARE(state->collectiveFinished, qint64(8));
    QCOMPARE(state->lastEventTime, std::optional<double>(6.0));
    QCOMPARE(state->eventCount, qint64(6));
    QVERIFY(!state->endImagesPerSec);
    QCOMPARE(state->status, RankStatus::Running);

    summary.add(makeEvent("end", 1, 7.0, {{"images_per_sec", 1250.0}, {"wall_s", 6.5}, {"param_checksum", -2.5}}));
    state = summary.rank(1);
    QCOMPARE(state->endImagesPerSec, std::optional<double>(1250.0));
    QCOMPARE(state->wallSeconds, std::optional<double>(6.5));
    QCOMPARE(state->paramChecksum, std::optional<double>(-2.5));
    QCOMPARE(state->imagesPerSec, std::optional<double>(1300.0)); // the last step's value stays
    QCOMPARE(state->status, RankStatus::FinishedOk);
}

void tst_RunSummary::nanLossIsAReportNotAGap() {
    RunSummary summary;
    summary.add(makeEvent("start", 0, 1.0));
    QVERIFY(!summary.rank(0)->loss);
    summary.add(makeEvent("step", 0, 2.0, {{"loss", "nan"}}));
    QVERIFY(summary.rank(0)->loss.has_value());
    QVERIFY(std::isnan(*summary.rank(0)->loss));
}

void tst_RunSummary::errorsAreCollected() {
    RunSummary summary;
    summary.add(makeEvent("error", 2, 3.0, {{"kind", "checkpoint"}, {"message", "truncated"}, {"fatal", false}}));
    summary.add(makeEvent("error", 2, 4.0, {{"kind", "collective"}, {"message", "timed out"}}));
    const RankState* state = summary.rank(2);
    QVERIFY(state);
    QVERIFY(!state->started); // an error can come before or without a start event
    QCOMPARE(state->errors.size(), 2);
    QCOMPARE(state->errors[0].time, 3.0);
    QCOMPARE(state->errors[0].kind, QStringLiteral("checkpoint"));
    QCOMPARE(state->errors[0].message, QStringLiteral("truncated"));
    QVERIFY(!state->errors[0].fatal);
    QCOMPARE(state->errors[1].kind, QStringLiteral("collective"));
    QVERIFY(state->errors[1].fatal);
    QCOMPARE(state->status, RankStatus::Failed);
}

void tst_RunSummary::ranksAndWorldSize() {
    RunSummary summary;
    QCOMPARE(summary.worldSize(), 0);
    QVERIFY(!summary.rank(0));
    summary.add(QVector<TrainerEvent>{makeEvent("step", 3, 1.0), makeEvent("start", 1, 1.0, {{"world_size", 4}}),
                                      makeEvent("start", 0, 1.0, {{"world_size", 2}})});
    QCOMPARE(summary.ranks().keys(), (QList<int>{0, 1, 3}));
    QCOMPARE(summary.worldSize(), 4);
    QCOMPARE(summary.eventCount(), qint64(3));
    QVERIFY(!summary.rank(2));
    QCOMPARE(summary.rank(3)->rank, 3);
}

void tst_RunSummary::unknownTypeIsCountedOnly() {
    const auto result = rankscope::decodeTrainerEvent(
        QByteArrayView(R"({"v":"1.4","type":"profile","rank":0,"time":9.0,"step":99,"loss":0.1})"));
    QVERIFY(result.ok());
    RunSummary summary;
    summary.add(makeEvent("step", 0, 1.0, {{"step", 3}}));
    summary.add(*result.event);
    QCOMPARE(summary.rank(0)->eventCount, qint64(2));
    QCOMPARE(summary.rank(0)->step, qint64(3));
    QCOMPARE(summary.rank(0)->lastEventTime, std::optional<double>(9.0));
}

void tst_RunSummary::cleanRunFromFiles() {
    RunSummary summary;
    summary.add(parseFile("clean-rank1.events"));
    summary.add(parseFile("clean-rank0.events"));
    QCOMPARE(summary.worldSize(), 2);
    QCOMPARE(summary.ranks().keys(), (QList<int>{0, 1}));
    const RankState& rank0 = summary.ranks()[0];
    QCOMPARE(rank0.host, QStringLiteral("node-a"));
    QCOMPARE(rank0.epoch, qint64(2));
    QCOMPARE(rank0.step, qint64(4));
    QCOMPARE(rank0.loss, std::optional<double>(1.125));
    QCOMPARE(rank0.valAccuracy, std::optional<double>(0.75));
    QCOMPARE(rank0.endImagesPerSec, std::optional<double>(1510.5));
    QCOMPARE(rank0.lastCheckpointPath, QStringLiteral("/scratch/run1/ckpt-epoch2.pt"));
    QCOMPARE(rank0.status, RankStatus::FinishedOk);
    const RankState& rank1 = summary.ranks()[1];
    QCOMPARE(rank1.host, QStringLiteral("node-b"));
    QCOMPARE(rank1.loss, std::optional<double>(1.0625));
    QVERIFY(rank1.lastCheckpointPath.isEmpty());
    QCOMPARE(rank1.status, RankStatus::FinishedOk);
}

void tst_RunSummary::failedRunFromFile() {
    RunSummary summary;
    summary.add(parseFile("error-with-logs.events"));
    QCOMPARE(summary.ranks().keys(), (QList<int>{1}));
    const RankState& rank1 = summary.ranks()[1];
    QCOMPARE(rank1.status, RankStatus::Failed);
    QCOMPARE(rank1.step, qint64(2));
    QCOMPARE(rank1.phase, QStringLiteral("backward"));
    QCOMPARE(rank1.collectiveStarted, qint64(5));
    QCOMPARE(rank1.collectiveFinished, qint64(4));
    QCOMPARE(rank1.errors.size(), 2);
    QVERIFY(!rank1.errors[0].fatal);
    QCOMPARE(rank1.errors[1].kind, QStringLiteral("collective"));
    QVERIFY(rank1.errors[1].fatal);
}

// Step events count steps across epochs: the step within an epoch is worked out from the start event's epoch size,
// and a run that max_steps ends before its epochs do says so.
void tst_RunSummary::progressWithinEpochsAndMaxSteps() {
    RunSummary summary;
    summary.add(makeEvent("start", 0, 1.0, {{"steps_per_epoch", 16}, {"total_steps", 48}}));
    summary.add(makeEvent("step", 0, 2.0, {{"epoch", 2}, {"step", 21}}));
    const RankState* state = summary.rank(0);
    QCOMPARE(state->stepInEpoch(), qint64(5));
    QVERIFY(!state->cappedByMaxSteps()); // its epochs are not known

    RunSummary capped;
    capped.add(makeEvent("start", 0, 1.0,
                         {{"steps_per_epoch", 469}, {"total_steps", 100}, {"config", QJsonObject{{"epochs", 1}}}}));
    capped.add(makeEvent("step", 0, 2.0, {{"epoch", 1}, {"step", 35}}));
    state = capped.rank(0);
    QCOMPARE(state->epochs, qint64(1));
    QCOMPARE(state->stepInEpoch(), qint64(35));
    QVERIFY(state->cappedByMaxSteps()); // 100 steps of an epoch of 469
}

// A rank that went back to an earlier checkpoint and goes on from there is at the step it reports now, with that
// step's loss: not at the highest step it once reached.
void tst_RunSummary::stepIsTheLatestNotTheHighest() {
    RunSummary summary;
    summary.add(makeEvent("start", 0, 1.0, {{"steps_per_epoch", 100}}));
    summary.add(makeEvent("step", 0, 2.0, {{"epoch", 1}, {"step", 30}, {"loss", 0.5}}));
    summary.add(makeEvent("step", 0, 3.0, {{"epoch", 1}, {"step", 21}, {"loss", 0.75}}));
    const RankState* state = summary.rank(0);
    QCOMPARE(state->step, qint64(21));
    QCOMPARE(state->loss, std::optional<double>(0.75));
}

QTEST_GUILESS_MAIN(tst_RunSummary)
#include "tst_runsummary.moc"
