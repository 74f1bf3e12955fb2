// SPDX-License-Identifier: MIT
#pragma once

#include "core/trainerevent.h"

#include <QMap>
#include <QString>
#include <QVector>

#include <optional>

namespace rankscope {

// What the rank grid shows for one rank. The order is the order of severity a tile is read by.
enum class RankLiveState { Starting, Running, Slow, Hung, Failed, Lost, Finished };

// "starting", "running", ...: the word the grid and the CSV use.
[[nodiscard]] QString rankLiveStateName(RankLiveState state);

struct RankStatusOptions {
    // A rank is hung when it has made no progress for this long while it is still alive (it sent a heartbeat
    // after its last progress) or while another rank progressed after it.
    double hungAfterSeconds = 30.0;
    // A rank is slow when its step rate over the last window is below slowFactor times the median rate of the
    // ranks that have one. At least two ranks must have a rate.
    double slowFactor = 0.7;
    double rateWindowSeconds = 30.0;
};

// The live view of one rank, as raw values.
struct RankLiveStatus {
    int rank = 0;
    RankLiveState state = RankLiveState::Starting;
    QString host;
    qint64 epoch = 0;
    qint64 step = 0;
    std::optional<double> loss;
    std::optional<double> lastHeartbeat;  // Unix seconds
    std::optional<double> lastEvent;      // Unix seconds, any event
    std::optional<double> lastProgress;   // Unix seconds: last new step, or a heartbeat that moved
    std::optional<double> stepsPerSecond; // over the rate window, measured up to `now`
    std::optional<int> exitStatus;
    QString reason; // why failed/lost/hung, one line: "collective: ...", "exit status 1", "no progress for 31 s"
};

// Folds event batches and exits into a per-rank live state. Rules (evaluated by update(now)):
//  - failed:   a fatal error event, an end event with status "error", or a non-zero exit status;
//  - lost:     the exit status is kLostExitStatus (the node stopped answering), unless already failed;
//  - finished: an end event with status "ok", or exit status 0, and nothing failed;
//  - hung:     no progress for hungAfterSeconds while the rank sent a heartbeat after its last progress or
//              another rank progressed after it. Progress is a new step, or a heartbeat whose phase or
//              collective counters differ from the previous one (so a long eval or checkpoint that still
//              moves does not count, but a rank parked in one collective does);
//  - slow:     see RankStatusOptions::slowFactor;
//  - starting: no step event yet; otherwise running.
// Terminal states (failed, lost, finished) never change back.
class RankStatusTracker final {
public:
    explicit RankStatusTracker(RankStatusOptions options = {});

    void setOptions(const RankStatusOptions& options) { m_options = options; }
    [[nodiscard]] const RankStatusOptions& options() const { return m_options; }

    void addEvents(const QVector<TrainerEvent>& events);
    void rankExited(int rank, int status, const QString& host = {});
    // Re-evaluates the time-dependent states (hung, slow) at `now` (Unix seconds). Returns the ranks whose
    // state changed. addEvents and rankExited also re-evaluate, at the newest time seen.
    QVector<int> update(double now);
    void clear();

    [[nodiscard]] const QMap<int, RankLiveStatus>& ranks() const { return m_ranks; }
    [[nodiscard]] const RankLiveStatus* rank(int rank) const;
    [[nodiscard]] int rankCount() const { return int(m_ranks.size()); }
    [[nodiscard]] int worldSize() const { return m_worldSize; }
    [[nodiscard]] double newestTime() const { return m_newestTime; }

private:
    struct History {
        QVector<QPair<double, qint64>> steps; // (time, step) within the rate window
        QString phase;
        qint64 collectiveStarted = -1;
        qint64 collectiveFinished = -1;
        bool failed = false;
        bool finished = false;
    };

    void apply(const TrainerEvent& event);
    void applyHeartbeat(const TrainerEvent& event, RankLiveStatus& status, History& history);
    void applyStep(const TrainerEvent& event, RankLiveStatus& status, History& history);
    RankLiveStatus& ensure(int rank);
    [[nodiscard]] RankLiveState evaluate(const RankLiveStatus& status, const History& history, double now,
                                         double newestProgress, double medianRate, QString* reason) const;
    [[nodiscard]] std::optional<double> rateAt(const History& history, double now) const;

    RankStatusOptions m_options;
    QMap<int, RankLiveStatus> m_ranks;
    QMap<int, History> m_history;
    int m_worldSize = 0;
    double m_newestTime = 0.0;
};

} // namespace rankscope
