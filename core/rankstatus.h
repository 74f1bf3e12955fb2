// SPDX-License-Identifier: MIT
#pragma once

#include "core/diagnostics.h"
#include "core/trainerevent.h"

#include <QHash>
#include <QMap>
#include <QString>
#include <QVector>

#include <optional>

namespace rankscope {

// What the rank grid shows for one rank. The order is the order of severity a tile is read by.
enum class RankLiveState { Starting, Running, Slow, Diverged, Hung, Failed, Lost, Finished, Stopped };

// "starting", "running", ...: the word the grid and the CSV use.
[[nodiscard]] QString rankLiveStateName(RankLiveState state);

// Whether a rank still runs, for the states a finding decides (hung, diverged), which hold after its end too.
enum class RankEnding { Running, Finished, Stopped };

struct RankStatusOptions {
    double rateWindowSeconds = 30.0; // the span stepsPerSecond is measured over
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
    std::optional<double> stepsPerSecond; // over the rate window, measured up to `now`
    std::optional<int> exitStatus;
    RankEnding ending = RankEnding::Running; // finished: it said so or exited 0; stopped: the teardown ended it
    // Why failed/lost/hung/slow, one line: "collective: ...", "exit status 1", or the finding that decided it.
    QString reason;
    QString diagnosisKey; // the finding behind a hung, slow or failed state ("hang:41", "root-cause"); empty: none
    int diagnosisCulprits = 0; // how many ranks that finding holds at fault (Diagnosis::culprits)
};

// Folds event batches, exits and the run's diagnoses into a per-rank live state. Rules (evaluated by update()):
//  - failed:   a fatal error event, an end event with status "error", a non-zero exit status, or the culprit of
//              the run's root cause, or of the ranks that failed alike with it (whose finding then gives the reason). A
//              rank's "terminated" error (it was sent SIGTERM or SIGINT) and the end after it wait for its exit:
//              stopped when the teardown ended it;
//  - lost:     the exit status is kLostExitStatus (the node stopped answering), unless already failed;
//  - finished: an end event with status "ok", or exit status 0, and nothing failed; a rank that was still the
//              straggler of an open finding keeps that finding as its reason;
//  - stopped:  ended by RankScope's teardown (RankExit::stopped: the user's stop, or the peers of a failed rank),
//              not by itself. A hung rank that is stopped stays hung: the teardown did not end its hang;
//  - hung:     a rank an open hang finding holds at fault (RunDiagnostics: the rank that never reached the
//              collective the others wait in, or every rank when all of them are stuck inside it). The ranks
//              that merely wait for it keep their state, with the finding as their reason;
//  - diverged: a replica the run's divergence finding holds apart from the others (its parameters differ from
//              the majority's, or every rank's differs), running, finished or stopped: its model is not the
//              others', which no end changes. A hang or a failure wins: they say what happens now;
//  - slow:     the rank of an open straggler finding;
//  - starting: no step event yet; otherwise running.
// So the grid, the CLI and the bridge show the same verdicts as the diagnostics, with one set of rules.
// Terminal states (failed, lost, finished) never change back, but for a finished replica that a divergence finding
// holds apart (the checksums the ranks end with are compared once all have ended): it reads diverged.
class RankStatusTracker final {
public:
    explicit RankStatusTracker(RankStatusOptions options = {});

    void setOptions(const RankStatusOptions& options) { m_options = options; }
    [[nodiscard]] const RankStatusOptions& options() const { return m_options; }

    void addEvents(const QVector<TrainerEvent>& events);
    // The host of each rank's node as the job names it (RunRecord::rankHosts), which the diagnoses and the logs
    // also name: it wins over the host name a rank reports in its start event, kept for ranks not listed here.
    void setRankHosts(const QHash<int, QString>& hosts);
    // `stopped`: the teardown ended it (RankExit::stopped). Called again for the same rank when the engine judges
    // its end again (RunEngine::rankExitJudged).
    void rankExited(int rank, int status, const QString& host = {}, bool stopped = false);
    // New or changed findings (RunDiagnostics' output, or the engine's diagnoses signal); a resolved one lifts
    // the state it caused. Returns the ranks whose state changed.
    QVector<int> applyDiagnoses(const QVector<Diagnosis>& diagnoses);
    // Re-evaluates every rank's state and its rate at `now` (Unix seconds). Returns the ranks whose state
    // changed. addEvents, rankExited and applyDiagnoses also re-evaluate, at the newest time seen.
    QVector<int> update(double now);
    void clear();

    [[nodiscard]] const QMap<int, RankLiveStatus>& ranks() const { return m_ranks; }
    [[nodiscard]] const RankLiveStatus* rank(int rank) const;
    [[nodiscard]] int rankCount() const { return int(m_ranks.size()); }
    [[nodiscard]] double newestTime() const { return m_newestTime; }

private:
    struct History {
        QVector<QPair<double, qint64>> steps; // (time, step) within the rate window
        bool failed = false;
        bool finished = false;
        bool stopped = false;
        bool exitStopped = false; // its exit, judged the teardown's (RankExit::stopped)
        QString said;             // why it failed in its own words: its first fatal error, or an end with status error
        QString terminated; // "terminated: SIGTERM received at …", the rank's own word that it was told to stop
    };

    void apply(const TrainerEvent& event);
    void applyStep(const TrainerEvent& event, RankLiveStatus& status, History& history);
    static void settle(RankLiveStatus& status, History& history); // failed or stopped, and why
    RankLiveStatus& ensure(int rank);
    [[nodiscard]] RankLiveState evaluate(const RankLiveStatus& status, const History& history,
                                         const Diagnosis** finding) const;
    [[nodiscard]] std::optional<double> rateAt(const History& history, double now) const;

    RankStatusOptions m_options;
    QMap<int, RankLiveStatus> m_ranks;
    QMap<int, History> m_history;
    QMap<QString, Diagnosis> m_diagnoses; // by key, the newest version of each
    QHash<int, QString> m_rankHosts;
    double m_newestTime = 0.0;
};

} // namespace rankscope
