// SPDX-License-Identifier: MIT
#include "core/runsummary.h"

#include <rankscope/event_schema.h>

#include <algorithm>

namespace rankscope {

void RunSummary::add(const QVector<TrainerEvent>& events) {
    for (const TrainerEvent& event : events)
        add(event);
}

void RunSummary::add(const TrainerEvent& event) {
    ++m_eventCount;
    const auto found = m_ranks.find(event.rank);
    RankState& state = found != m_ranks.end() ? *found : *m_ranks.insert(event.rank, RankState{});
    state.rank = event.rank;
    ++state.eventCount;
    state.lastEventTime = event.time;
    switch (event.type) {
    case TrainerEventType::Start:
        applyStart(event, state);
        break;
    case TrainerEventType::Step:
        applyStep(event, state);
        break;
    case TrainerEventType::Eval:
        applyEval(event, state);
        break;
    case TrainerEventType::Checkpoint:
        applyCheckpoint(event, state);
        break;
    case TrainerEventType::Heartbeat:
        applyHeartbeat(event, state);
        break;
    case TrainerEventType::End:
        applyEnd(event, state);
        break;
    case TrainerEventType::Error:
        applyError(event, state);
        break;
    case TrainerEventType::Unknown:
        break; // from a newer minor: counted, otherwise not understood
    }
}

const RankState* RunSummary::rank(int rank) const {
    const auto found = m_ranks.constFind(rank);
    return found != m_ranks.cend() ? &*found : nullptr;
}

void RunSummary::applyStart(const TrainerEvent& event, RankState& state) {
    state.started = true;
    state.worldSize = static_cast<int>(event.integer(schema::start::kWorldSize));
    state.host = event.string(schema::start::kHost);
    state.pid = event.integer(schema::start::kPid);
    state.stepsPerEpoch = event.integer(schema::start::kStepsPerEpoch);
    state.totalSteps = event.integer(schema::start::kTotalSteps);
    state.epochs = event.object(schema::start::kConfig).value(QLatin1String("epochs")).toVariant().toLongLong();
    m_worldSize = std::max(m_worldSize, state.worldSize);
}

void RunSummary::applyStep(const TrainerEvent& event, RankState& state) {
    state.epoch = event.integer(schema::step::kEpoch);
    state.step = event.integer(schema::step::kStep);
    state.loss = event.number(schema::step::kLoss);
    state.imagesPerSec = event.number(schema::step::kImagesPerSec);
}

void RunSummary::applyEval(const TrainerEvent& event, RankState& state) {
    state.evalEpoch = event.integer(schema::eval::kEpoch);
    state.valLoss = event.number(schema::eval::kValLoss);
    state.valAccuracy = event.number(schema::eval::kValAccuracy);
}

void RunSummary::applyCheckpoint(const TrainerEvent& event, RankState& state) {
    state.lastCheckpointPath = event.string(schema::checkpoint::kPath);
    state.lastCheckpointStep = event.integer(schema::checkpoint::kStep);
}

void RunSummary::applyHeartbeat(const TrainerEvent& event, RankState& state) {
    state.phase = event.string(schema::heartbeat::kPhase);
    state.collectiveStarted = event.integer(schema::heartbeat::kCollectiveStarted);
    state.collectiveFinished = event.integer(schema::heartbeat::kCollectiveFinished);
}

// A failure is final: an "ok" end after a fatal error would hide the error.
void RunSummary::applyEnd(const TrainerEvent& event, RankState& state) {
    state.endImagesPerSec = event.number(schema::end::kImagesPerSec);
    state.wallSeconds = event.number(schema::end::kWallS);
    state.paramChecksum = event.number(schema::end::kParamChecksum);
    const bool ok = event.string(schema::end::kStatus) == jsonKey(schema::status::kOk);
    if (!ok)
        state.status = RankStatus::Failed;
    else if (state.status != RankStatus::Failed)
        state.status = RankStatus::FinishedOk;
}

// An error without "fatal" counts as fatal: the schema only promises that fatal=false means the rank goes on.
void RunSummary::applyError(const TrainerEvent& event, RankState& state) {
    const RankError error{event.time, event.string(schema::error::kKind), event.string(schema::error::kMessage),
                          event.boolean(schema::error::kFatal, true)};
    state.errors.append(error);
    if (error.fatal)
        state.status = RankStatus::Failed;
}

} // namespace rankscope
