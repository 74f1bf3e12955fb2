// SPDX-License-Identifier: MIT
#include "core/rankstatus.h"

#include "core/runstore.h"

#include <rankscope/event_schema.h>

#include <algorithm>

namespace rankscope {

namespace {

constexpr int kMinRateSamples = 3; // fewer steps than this say nothing about a rate

bool isTerminal(RankLiveState state) {
    return state == RankLiveState::Failed || state == RankLiveState::Lost || state == RankLiveState::Finished ||
           state == RankLiveState::Stopped;
}

} // namespace

QString rankLiveStateName(RankLiveState state) {
    switch (state) {
    case RankLiveState::Starting:
        return QStringLiteral("starting");
    case RankLiveState::Running:
        return QStringLiteral("running");
    case RankLiveState::Slow:
        return QStringLiteral("slow");
    case RankLiveState::Diverged:
        return QStringLiteral("diverged");
    case RankLiveState::Hung:
        return QStringLiteral("hung");
    case RankLiveState::Failed:
        return QStringLiteral("failed");
    case RankLiveState::Lost:
        return QStringLiteral("lost");
    case RankLiveState::Finished:
        return QStringLiteral("finished");
    case RankLiveState::Stopped:
        return QStringLiteral("stopped");
    }
    return {};
}

RankStatusTracker::RankStatusTracker(RankStatusOptions options) : m_options(options) {}

const RankLiveStatus* RankStatusTracker::rank(int rank) const {
    const auto found = m_ranks.constFind(rank);
    return found != m_ranks.cend() ? &*found : nullptr;
}

void RankStatusTracker::clear() {
    m_ranks.clear();
    m_history.clear();
    m_diagnoses.clear();
    m_newestTime = 0.0;
    m_rankHosts.clear();
}

void RankStatusTracker::setRankHosts(const QHash<int, QString>& hosts) {
    m_rankHosts = hosts;
    for (auto it = m_ranks.begin(); it != m_ranks.end(); ++it)
        if (const QString host = hosts.value(it.key()); !host.isEmpty())
            it->host = host;
}

RankLiveStatus& RankStatusTracker::ensure(int rank) {
    auto found = m_ranks.find(rank);
    if (found == m_ranks.end()) {
        found = m_ranks.insert(rank, RankLiveStatus{});
        found->rank = rank;
        found->host = m_rankHosts.value(rank);
        m_history.insert(rank, History{});
    }
    return *found;
}

void RankStatusTracker::addEvents(const QVector<TrainerEvent>& events) {
    for (const TrainerEvent& event : events)
        apply(event);
    update(m_newestTime);
}

void RankStatusTracker::apply(const TrainerEvent& event) {
    RankLiveStatus& status = ensure(event.rank);
    History& history = m_history[event.rank];
    m_newestTime = std::max(m_newestTime, event.time);
    switch (event.type) {
    case TrainerEventType::Start:
        if (!m_rankHosts.contains(event.rank))
            status.host = event.string(schema::start::kHost);
        break;
    case TrainerEventType::Step:
        applyStep(event, status, history);
        break;
    case TrainerEventType::Heartbeat:
        status.lastHeartbeat = event.time;
        break;
    case TrainerEventType::End:
        if (event.string(schema::end::kStatus) == jsonKey(schema::status::kOk)) {
            history.finished = true;
        } else if (history.said.isEmpty() && history.terminated.isEmpty()) {
            history.said = QStringLiteral("ended with status error");
            settle(status, history);
        }
        break;
    case TrainerEventType::Error: {
        if (!event.boolean(schema::error::kFatal, true) || !history.said.isEmpty())
            break;
        const QString kind = event.string(schema::error::kKind);
        const QString said = kind + QStringLiteral(": ") + event.string(schema::error::kMessage);
        if (kind == jsonKey(schema::error_kind::kTerminated)) {
            // Told to stop (SIGTERM, SIGINT): its exit decides whether that was the teardown or a failure.
            if (history.terminated.isEmpty())
                history.terminated = said;
            break;
        }
        history.said = said;
        settle(status, history);
        break;
    }
    case TrainerEventType::Eval:
    case TrainerEventType::Checkpoint:
    case TrainerEventType::Unknown:
        break;
    }
}

void RankStatusTracker::applyStep(const TrainerEvent& event, RankLiveStatus& status, History& history) {
    const qint64 step = event.integer(schema::step::kStep);
    status.step = step;
    status.epoch = event.integer(schema::step::kEpoch);
    status.loss = event.number(schema::step::kLoss);
    history.steps.append({event.time, step});
    // Keep the window, but never fewer samples than a rate needs.
    const double horizon = event.time - m_options.rateWindowSeconds;
    qsizetype drop = 0;
    while (history.steps.size() - drop > kMinRateSamples && history.steps[drop].first < horizon)
        ++drop;
    history.steps.remove(0, drop);
}

void RankStatusTracker::rankExited(int rank, int exitStatus, const QString& host, bool stopped) {
    RankLiveStatus& status = ensure(rank);
    History& history = m_history[rank];
    status.exitStatus = exitStatus;
    history.exitStopped = stopped;
    if (status.host.isEmpty())
        status.host = host;
    if (exitStatus == 0)
        history.finished = true;
    settle(status, history);
    update(m_newestTime);
}

// From what the rank said and how it ended, in whichever order they came (its last error event may be read after
// its exit), and again when the engine judges its end again.
void RankStatusTracker::settle(RankLiveStatus& status, History& history) {
    history.stopped = false;
    history.failed = !history.said.isEmpty();
    if (history.failed)
        status.reason = history.said;
    if (!status.exitStatus || *status.exitStatus == 0)
        return;
    const int exitStatus = *status.exitStatus;
    const QString how = history.terminated.isEmpty() ? describeExitStatus(exitStatus) : history.terminated;
    if (history.exitStopped && exitStatus != kLostExitStatus) {
        // The engine judged this end the teardown's, or a consequence of the run's first failure (a collective
        // whose peer had died): an error it reported on the way is part of that.
        if (!history.finished) {
            history.failed = false;
            history.stopped = true;
            status.reason =
                QStringLiteral("stopped by the teardown: %1").arg(history.said.isEmpty() ? how : history.said);
        }
    } else if (exitStatus == kLostExitStatus) {
        if (!history.failed && !history.finished)
            status.reason = describeExitStatus(exitStatus);
    } else if (!history.failed) {
        history.failed = true; // a SIGTERM from anyone but the teardown is a failure
        status.reason = how;
    }
}

std::optional<double> RankStatusTracker::rateAt(const History& history, double now) const {
    if (history.steps.size() < kMinRateSamples)
        return std::nullopt;
    const auto& first = history.steps.constFirst();
    const auto& last = history.steps.constLast();
    const double span = std::max(now, last.first) - first.first;
    if (span <= 0.0)
        return std::nullopt;
    return double(last.second - first.second) / span;
}

QVector<int> RankStatusTracker::applyDiagnoses(const QVector<Diagnosis>& diagnoses) {
    for (const Diagnosis& diagnosis : diagnoses)
        m_diagnoses.insert(diagnosis.key, diagnosis);
    return update(m_newestTime);
}

QVector<int> RankStatusTracker::update(double now) {
    QVector<int> changed;
    for (auto it = m_ranks.begin(); it != m_ranks.end(); ++it) {
        const History& history = m_history[it.key()];
        it->stepsPerSecond = rateAt(history, now);
        const Diagnosis* finding = nullptr;
        const RankLiveState state = evaluate(*it, history, &finding);
        if (finding) {
            it->reason = finding->message;
            it->diagnosisKey = finding->key;
            it->diagnosisCulprits = finding->culprits;
        } else if (!it->diagnosisKey.isEmpty()) {
            it->diagnosisKey.clear(); // the finding was resolved: the reason it gave goes with it
            it->diagnosisCulprits = 0;
            if (!isTerminal(state) || state == RankLiveState::Finished) // a finished rank's reason is only a finding
                it->reason.clear();
        }
        const RankEnding ending = history.finished  ? RankEnding::Finished
                                  : history.stopped ? RankEnding::Stopped
                                                    : RankEnding::Running;
        if (state != it->state || ending != it->ending) {
            it->state = state;
            it->ending = ending;
            changed.append(it.key());
        }
    }
    return changed;
}

// `finding` is set to the diagnosis that decided the state, or that concerns a rank waiting on a hung one.
RankLiveState RankStatusTracker::evaluate(const RankLiveStatus& status, const History& history,
                                          const Diagnosis** finding) const {
    const Diagnosis* hang = nullptr;
    const Diagnosis* waitingOn = nullptr;
    const Diagnosis* straggler = nullptr;
    const Diagnosis* rootCause = nullptr;
    const Diagnosis* divergence = nullptr;
    for (const Diagnosis& d : m_diagnoses) {
        const qsizetype at = d.ranks.indexOf(status.rank);
        if (d.resolved || at < 0)
            continue;
        if (d.kind == DiagnosisKind::Hang)
            (at < d.culprits ? hang : waitingOn) = &d;
        else if (d.kind == DiagnosisKind::Straggler && at == 0)
            straggler = &d;
        else if (d.kind == DiagnosisKind::RootCause && at < d.culprits)
            rootCause = &d;
        else if (d.kind == DiagnosisKind::Divergence && at < d.culprits && !divergence)
            divergence = &d; // "divergence:check" before "divergence:end" (by key): the check says at which step
    }
    if (rootCause) {
        *finding = rootCause;
        return RankLiveState::Failed;
    }
    if (history.failed)
        return RankLiveState::Failed;
    if (status.exitStatus && *status.exitStatus == kLostExitStatus && !history.finished)
        return RankLiveState::Lost;
    if (divergence && (history.finished || !hang)) {
        *finding = divergence;
        return RankLiveState::Diverged;
    }
    if (history.finished) {
        *finding = straggler; // a straggler to the end: the grid of an ended run still tells which rank held it back
        return RankLiveState::Finished;
    }
    if (hang) {
        *finding = hang;
        return RankLiveState::Hung;
    }
    if (history.stopped)
        return RankLiveState::Stopped;
    *finding = waitingOn;
    if (straggler) {
        *finding = straggler;
        return RankLiveState::Slow;
    }
    if (!status.stepsPerSecond && status.step == 0)
        return RankLiveState::Starting;
    return RankLiveState::Running;
}

} // namespace rankscope
