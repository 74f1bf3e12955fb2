// SPDX-License-Identifier: MIT
// Reading the recorded event streams of tests/data/events into the batches the engine would deliver.
#pragma once

#include "core/eventstreamparser.h"

#include <rankscope/event_schema.h>

#include <QFile>
#include <QVector>

#include <algorithm>

namespace rankscope::test {

// Both ranks of recorded run `name` ("recorded-ok", "clean", ...), merged in time order.
inline QVector<TrainerEvent> recordedEvents(const QString& name, const QString& suffix = QStringLiteral(".out")) {
    QVector<TrainerEvent> all;
    for (int rank = 0; rank < 2; ++rank) {
        QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/events/%1-rank%2%3").arg(name).arg(rank).arg(suffix));
        if (!file.open(QIODevice::ReadOnly))
            qFatal("missing recording %s", qPrintable(file.fileName()));
        EventStreamParser parser;
        ParsedBatch batch = parser.feed(file.readAll());
        batch.append(parser.finish());
        all += batch.events;
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const TrainerEvent& a, const TrainerEvent& b) { return a.time < b.time; });
    return all;
}

// A run cut short after `step`, as one stopped or lost there: no step events after it, and no end events.
inline QVector<TrainerEvent> cutAfterStep(const QVector<TrainerEvent>& events, qint64 step) {
    QVector<TrainerEvent> cut;
    for (const TrainerEvent& e : events)
        if (e.type != TrainerEventType::End &&
            !(e.type == TrainerEventType::Step && e.integer(schema::step::kStep) > step))
            cut.append(e);
    return cut;
}

inline QVector<QVector<TrainerEvent>> inBatches(const QVector<TrainerEvent>& events, int size) {
    QVector<QVector<TrainerEvent>> batches;
    for (qsizetype i = 0; i < events.size(); i += size)
        batches.append(events.mid(i, size));
    return batches;
}

// A step event of schema 1.0 with every required field.
inline TrainerEvent syntheticStep(int rank, double time, qint64 step, double loss, double imagesPerSec = 100.0,
                                  double forwardMs = 2.0) {
    QJsonObject o{{"v", "1.0"},         {"type", "step"},      {"rank", rank},
                  {"time", time},       {"epoch", 1},          {"step", step},
                  {"loss", loss},       {"lr", 0.1},           {"images_per_sec", imagesPerSec},
                  {"step_ms", 10.0},    {"data_ms", 1.0},      {"forward_ms", forwardMs},
                  {"backward_ms", 3.0}, {"comm_wait_ms", 3.0}, {"optimizer_ms", 1.0}};
    const TrainerEventResult r = decodeTrainerEvent(o);
    if (!r.ok())
        qFatal("bad synthetic step: %s", qPrintable(r.error));
    return *r.event;
}

// A start event of schema 1.0: a GPU rank of a run of `totalSteps` steps in 5 epochs, 8 ranks a node.
inline TrainerEvent syntheticStart(int rank, int worldSize, double time, const QString& host, int totalSteps) {
    const TrainerEventResult r = decodeTrainerEvent(QJsonObject{{"v", "1.0"},
                                                                {"type", "start"},
                                                                {"rank", rank},
                                                                {"time", time},
                                                                {"world_size", worldSize},
                                                                {"local_rank", rank % 8},
                                                                {"local_world_size", 8},
                                                                {"host", host},
                                                                {"pid", 1000 + rank},
                                                                {"backend", "nccl"},
                                                                {"device", "cuda"},
                                                                {"torch_version", "2.5.1"},
                                                                {"steps_per_epoch", totalSteps / 5},
                                                                {"total_steps", totalSteps},
                                                                {"config", QJsonObject{{"epochs", 5}}}});
    if (!r.ok())
        qFatal("bad synthetic start: %s", qPrintable(r.error));
    return *r.event;
}

} // namespace rankscope::test
