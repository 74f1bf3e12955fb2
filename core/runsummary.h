// SPDX-License-Identifier: MIT
#pragma once

#include "core/trainerevent.h"

#include <QMap>
#include <QString>
#include <QVector>

#include <optional>

namespace rankscope {

enum class RankStatus {
    Running,    // started or seen, no end event yet
    FinishedOk, // end event with status "ok"
    Failed,     // end event with status "error", or a fatal error event
};

struct RankError {
    double time = 0.0;
    QString kind;
    QString message;
    bool fatal = true;
};

// What is known about one rank after folding its events, as raw values; formatting is the front end's
// business. Measurements are optional because a NaN loss is a real report (a diverged run), not a gap.
struct RankState {
    int rank = 0;
    RankStatus status = RankStatus::Running;
    bool started = false; // a start event was seen
    int worldSize = 0;
    QString host;
    qint64 pid = 0;
    qint64 stepsPerEpoch = 0; // from the start event: what progress is measured against
    qint64 totalSteps = 0;
    qint64 epochs = 0;

    qint64 epoch = 0; // of the last step event
    qint64 step = 0;
    std::optional<double> loss;
    std::optional<double> imagesPerSec; // of the last step event

    qint64 evalEpoch = 0;
    std::optional<double> valLoss;
    std::optional<double> valAccuracy;

    QString phase; // of the last heartbeat
    qint64 collectiveStarted = 0;
    qint64 collectiveFinished = 0;

    QString lastCheckpointPath;
    qint64 lastCheckpointStep = 0;

    std::optional<double> endImagesPerSec; // whole-run average, from the end event
    std::optional<double> wallSeconds;
    std::optional<double> paramChecksum;

    QVector<RankError> errors;
    std::optional<double> lastEventTime;
    qint64 eventCount = 0;

    // The step within its epoch (1-based): `step` counts across epochs, as the step events do.
    [[nodiscard]] qint64 stepInEpoch() const { return stepsPerEpoch > 0 ? step - (epoch - 1) * stepsPerEpoch : step; }
    // max_steps ends the run before its epochs do: progress is measured against it, not the epochs' steps.
    [[nodiscard]] bool cappedByMaxSteps() const {
        return totalSteps > 0 && stepsPerEpoch > 0 && epochs * stepsPerEpoch > totalSteps;
    }
};

// Folds a run's events, from any number of streams, into one state per rank. Events of one rank must
// come in the order that rank wrote them; ranks may interleave in any order.
class RunSummary final {
public:
    void add(const TrainerEvent& event);
    void add(const QVector<TrainerEvent>& events);

    [[nodiscard]] const QMap<int, RankState>& ranks() const { return m_ranks; }
    [[nodiscard]] const RankState* rank(int rank) const;
    // The largest world size any start event announced; 0 before the first.
    [[nodiscard]] int worldSize() const { return m_worldSize; }
    [[nodiscard]] qint64 eventCount() const { return m_eventCount; }

private:
    void applyStart(const TrainerEvent& event, RankState& state);
    static void applyStep(const TrainerEvent& event, RankState& state);
    static void applyEval(const TrainerEvent& event, RankState& state);
    static void applyCheckpoint(const TrainerEvent& event, RankState& state);
    static void applyHeartbeat(const TrainerEvent& event, RankState& state);
    static void applyEnd(const TrainerEvent& event, RankState& state);
    static void applyError(const TrainerEvent& event, RankState& state);

    QMap<int, RankState> m_ranks;
    int m_worldSize = 0;
    qint64 m_eventCount = 0;
};

} // namespace rankscope
