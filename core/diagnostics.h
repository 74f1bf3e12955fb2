// SPDX-License-Identifier: MIT
#pragma once

#include "core/arrivalorder.h"
#include "core/kernellog.h"
#include "core/runstore.h"
#include "core/trainerevent.h"
#include "core/watchdogparser.h"

#include <QHash>
#include <QJsonObject>
#include <QMap>
#include <QPair>
#include <QSet>
#include <QString>
#include <QVector>

#include <algorithm>
#include <deque>
#include <limits>
#include <optional>

namespace rankscope {

enum class DiagnosisKind { RootCause, Hang, Straggler, Divergence, Network };

// "root-cause", "hang", "straggler", "divergence", "network".
[[nodiscard]] QString diagnosisKindName(DiagnosisKind kind);

// One finding about a run, in words a user can act on, and the ranks it is about (the culprits first).
struct Diagnosis {
    DiagnosisKind kind = DiagnosisKind::RootCause;
    QString key;        // stable identity across updates, e.g. "hang:41" (the collective) or "straggler:3"
    QVector<int> ranks; // the culprit first, then the ranks affected
    QString host;       // the culprit's
    double time = 0.0;  // Unix seconds, when it was found (or resolved)
    QString message;
    bool resolved = false; // a hang that moved on, a straggler that caught up
    // ranks[0, culprits) are at fault, the rest are affected: a hang's stuck ranks before the ranks waiting
    // for them; every rank of a hang inside one collective; the ranks of a root cause that failed alike
    // (RunRecord::failedAlike); none of a hang known only from NCCL watchdog timeouts ("hang:watchdog": who waited
    // is known, not for whom) nor of a divergence an events-1.0 trainer reports (no checksum names the replica
    // apart); 1 for the other kinds.
    int culprits = 1;
    // A root cause's: what the first rank to fail said last (core/arrivalorder.h), the newest last.
    QVector<StoredLine> lastLines = {};

    // ranks[0, culprits): those at fault.
    [[nodiscard]] QVector<int> culpritRanks() const {
        return ranks.first(std::clamp<qsizetype>(culprits, 0, ranks.size()));
    }
    [[nodiscard]] QString toString() const; // "hang: rank 1 on node-b stuck ..." (+ " (resolved)")
    // {"kind", "key", "ranks", "culprits", "host"?, "time", "message", "resolved", "last_lines"?: [{"stream":
    // "out"|"err", "text", "time"?}]}: what `diagnose --json` and the bridge send
    [[nodiscard]] QJsonObject toJson() const;
};

// Keeps each finding as last said: a changed one (same key) replaces what `known` holds of it, in place; a new
// one is appended. What a front end that follows the diagnoses signal lists at the end.
void foldFindings(QVector<Diagnosis>& known, const QVector<Diagnosis>& changed);

// The whole verdict on an ended run (RunRecord::verdict) from the findings that stand at its end: the root cause
// where it says the record's summary and more (the hung rank a failure waited on, what the kernel log said); for a
// run stopped or lost while a hang stood, the summary and that hang ("stopped by the user; hang: rank 1 on node-b
// stuck at step 5 …"), which a listing would otherwise lose. Empty where the findings add nothing to the summary,
// and for a run that has not ended or that finished.
[[nodiscard]] QString runVerdict(const RunRecord& record, const QVector<Diagnosis>& findings);

struct DiagnosticsOptions {
    // A hang is reported once the waiting ranks and the rank they wait for have shown no progress for this
    // many heartbeat intervals (the interval is measured from the heartbeats themselves), or for two typical
    // steps when steps are longer than that: a rank that is merely slow is not a hang.
    double hangIntervals = 1.2;
    double defaultHeartbeatSeconds = 1.0;
    // Before any rank has finished a step in this run (step events, not the heartbeat's count, which a run resumed
    // from a checkpoint starts high), every rank inside the same collective is how a run's set-up looks: NCCL
    // creates its communicators in the first collective, which takes seconds across nodes. Such a stillness is a
    // hang only past this many seconds. A rank missing from the collective is still named at once.
    double setupGraceSeconds = 30.0;
    // The trainer beats from a thread of its own, so a rank whose heartbeats stop while its peers' go on is stopped
    // as a whole (Ctrl-Z, SIGSTOP, a debugger) or frozen. Among ranks all stuck inside one collective, the ones
    // silent for this many heartbeat intervals (and the hang's threshold) are the ones at fault; one that has
    // missed half an interval's beat already, but not yet that many, is waited for before the hang is said, and
    // so the verdict that blames no rank (every rank inside, all heard) comes only after this long a stillness.
    double silentIntervals = 3.0;
    // A straggler's compute time per step (step time without the wait for others) stays above this factor
    // times the median of the other ranks over its window (its median and three quarters of its steps). The
    // window is a rank's last `stragglerWindow` steps, or more where those take less than `stragglerSeconds`:
    // at 50 steps a second, 20 steps are a blip (a neighbour's burst on a shared core), not a sustained window.
    // At most `stragglerMaxSteps`.
    double stragglerFactor = 1.2;
    double stragglerRecovered = 1.1;
    int stragglerWindow = 20;
    double stragglerSeconds = 5.0;
    int stragglerMaxSteps = 1000;
    // Only a rank within this share of the slowest rank's compute time is flagged: the one the others wait for.
    double stragglerSlowestShare = 0.9;
};

// Live diagnosis of a distributed run from what its ranks report: heartbeats (step, phase, collective
// counters), step timings, errors, exits. Fed with the engine's batches; update(now) re-evaluates the
// time-dependent findings and returns what is new or changed since the previous call.
//
// Hang: the ranks waiting inside collective #K (started K, finished K-1) have not moved, and neither has
// the rank that never started #K: "rank R on host H stuck at step S in phase P (collective #N); ranks ...
// waiting in collective #K". When every live rank waits inside the same collective, no rank is singled out.
// Straggler: compute time = step_ms - comm_wait_ms: in synchronous data parallelism every rank's step takes
// as long as the slowest one's, and the others' surplus shows up as waiting; the slow rank is the one that
// computes longer. Divergence: the trainer's replica check failing, or end checksums that differ.
// Root cause: the engine's verdict on a failed run (first failure by cause, not by arrival), via runEnded(); for a
// rank that died by a signal without an error of its own, what its node's kernel log says (core/kernelverdict.h);
// for a rank that failed while a hang finding stood that it is not a culprit of, that hang.
class RunDiagnostics final {
public:
    explicit RunDiagnostics(DiagnosticsOptions options = {});

    void setRankHosts(const QHash<int, QString>& hosts) { m_hosts = hosts; }
    void addEvents(const QVector<TrainerEvent>& events);
    void rankExited(int rank, int status);
    // A collective that `rank`'s NCCL watchdog gave up on, as its log says (PyTorch's "Watchdog caught collective
    // operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, ...) ran for 600035 milliseconds"), read at `time`
    // (Unix seconds); the rank's first one counts. It feeds the hang diagnosis from update() at `time` on: a hang
    // standing from the heartbeats says it too; without one, the timeouts make a hang finding of their own
    // ("hang:watchdog") that holds no rank at fault unless a desync report names one: a timeout says who waited,
    // not for whom.
    void addCollectiveTimeout(int rank, const CollectiveTimeout& timeout, double time);
    // An item of PyTorch's desync report in a rank's log (TORCH_NCCL_DESYNC_DEBUG, after a timeout), read at `time`:
    // the ranks it names as lagging, dead or mismatched are the ones at fault in the hang the timeouts make, and
    // said with it. Every rank that timed out prints the same report: each item counts once.
    void addDesyncBlame(const DesyncBlame& blame, double time);
    // What a node's kernel log said, or why it could not be read (capture.host names the node as the ranks'
    // hosts do). Before runEnded(); a later capture of the same host replaces an earlier one.
    void addKernelLog(const KernelLogCapture& capture) { m_kernelLogs.insert(capture.host, capture); }
    // `lastLines`: what the record's first failed rank said last, for the root cause (empty: nothing kept).
    void runEnded(const RunRecord& record, const QVector<StoredLine>& lastLines = {});
    QVector<Diagnosis> update(double now);
    // The ranks began to be ended at `time` (Unix seconds: a stop, a failure's teardown): from then on they stop
    // moving by design, so a hang that began after it (its ranks still for the threshold only by then) is the
    // ending's and is not reported. One that began before is, also when found after it (a front end catching up on
    // the run it is stopping), and one reported before stays, with its updates. Infinity: not ending.
    void setEndingSince(double time) { m_endingSince = time; }
    // What is known of `rank` goes up to `time` (Unix seconds), not up to now: the copy of its streams stops there
    // (a run attached to again whose newest bytes are not read yet, a node whose link is down), so its stillness
    // after `time` is not known and makes no hang. Infinity, the default: known up to now.
    void setRankKnownUntil(int rank, double time) { m_ranks[rank].knownUntil = time; }
    [[nodiscard]] double rankKnownUntil(int rank) const {
        const auto found = m_ranks.constFind(rank); // no copy of a rank's state
        return found == m_ranks.cend() ? std::numeric_limits<double>::infinity() : found->knownUntil;
    }
    // Every rank is stopped on purpose from `time` (Unix seconds) until resumeRanks: a stack capture holds them in
    // a debugger for seconds, and the peers of a rank held there wait in their collective. Stillness inside such a
    // pause is the pause's, no hang: without this, a capture set off by a hang that then cleared (a long checkpoint
    // write, say) would make the next one, and another capture after it.
    void pauseRanks(double time);
    void resumeRanks(double time);
    void clear();

    [[nodiscard]] const QVector<Diagnosis>& all() const { return m_all; }
    // Whether `event` is an error that these diagnostics report in their own words: every rank's
    // replica_divergence says the same at each check, where the divergence finding names the replica apart, once.
    // A front end that shows the findings need not show such an event as well.
    [[nodiscard]] static bool reportsError(const TrainerEvent& event);
    [[nodiscard]] double heartbeatSeconds() const;
    // How long the ranks must be still before a hang is reported (see DiagnosticsOptions::hangIntervals).
    [[nodiscard]] double hangThresholdSeconds() const;

private:
    struct RankState {
        qint64 step = 0;
        QString phase;
        qint64 started = 0;  // collective_started of the last heartbeat
        qint64 finished = 0; // collective_finished
        double lastHeartbeat = 0.0;
        double lastMove = 0.0; // when step, phase or a counter last changed
        double lastStep = 0.0; // the time of its newest step event
        double knownUntil = std::numeric_limits<double>::infinity(); // see setRankKnownUntil
        bool seenHeartbeat = false;
        bool ended = false;
        std::optional<int> exitStatus; // as rankExited says it
        qint64 totalSteps = 0;         // its start event's plan; 0: not known
        std::optional<double> endedWellAt; // the time of its end event "ok"
        struct Step {
            double computeMs = 0.0;
            double stepMs = 0.0;
        };
        std::deque<Step> window;   // the straggler's window (DiagnosticsOptions::stragglerSeconds)
        double windowMs = 0.0;     // the sum of its steps' stepMs
        std::deque<double> stepMs; // the last stragglerWindow steps, for the hang's patience
        std::deque<double> heartbeatGaps;
        std::optional<double> endChecksum;
    };

    void applyHeartbeat(const TrainerEvent& event, RankState& state);
    void applyStep(const TrainerEvent& event, RankState& state);
    void report(Diagnosis diagnosis, QVector<Diagnosis>& changed);
    void resolve(const QString& key, double now, QVector<Diagnosis>& changed);
    void checkHang(double now, QVector<Diagnosis>& changed);
    [[nodiscard]] double stillFor(const RankState& state, double now) const;
    [[nodiscard]] double silentFor(const RankState& state, double now) const;
    [[nodiscard]] double heldFor(const RankState& state, double since, double now) const;
    [[nodiscard]] QString silenceOf(const QVector<int>& silent, double now) const;
    [[nodiscard]] QString silenceOfAll(const QVector<int>& ranks, double now) const;
    [[nodiscard]] static QString leftTheLoopEarly(); // why a rank that ended is missing from a collective
    // "rank 1 ended … (after step 2)" or "ranks 1,3 ended … (rank 1 after step 2; rank 3 after step 4)": `said` is
    // a template with the ranks as %1 and what is said of each (`each`, in the same order) as %2.
    [[nodiscard]] static QString sayOfRanks(const QString& said, const QVector<int>& ranks, QStringList each);
    [[nodiscard]] QString endedOutside(qint64 collective) const;
    [[nodiscard]] QString leftBefore(const RunRecord& record, int failed) const;
    [[nodiscard]] double quietest(const QVector<int>& ranks, double now) const;
    // Some ranks by their heartbeats: silent (see DiagnosticsOptions::silentIntervals), late (a beat missed, not
    // silent yet: worth waiting for where others are heard), or heard.
    struct Silence {
        QVector<int> silent;
        QVector<int> late;
        QVector<int> heard;
    };
    // `beat`: heartbeatSeconds(); `silentAfter`: how long a rank must not beat to be silent. Both are medians over
    // every rank, so checkHang, which runs ten times a second, takes them once.
    [[nodiscard]] Silence silenceAmong(const QVector<int>& ranks, double now, double beat, double silentAfter) const;
    [[nodiscard]] double hangThreshold(double heartbeat) const; // hangThresholdSeconds() for that interval
    [[nodiscard]] static QString stuckAt(const RankState& state, bool inside);
    void checkStragglers(double now, QVector<Diagnosis>& changed);
    void checkChecksums(double now, QVector<Diagnosis>& changed);
    void checkReplicaChecks(double now, QVector<Diagnosis>& changed);
    void checkWatchdogTimeouts(double now, QVector<Diagnosis>& changed);
    // What the watchdog's timeouts and desync reports read by `now` say, one text; the ranks that timed out and the
    // ranks blamed, each in the order said. Empty when nothing was read by then.
    [[nodiscard]] QString watchdogSays(double now, QVector<int>& timedOut, QVector<int>& blamed) const;
    [[nodiscard]] double hangBegan(const Diagnosis& diagnosis) const;
    [[nodiscard]] QString where(int rank) const; // "rank 3 on node-b"
    // The newest lastMove of a finding's ranks at fault that have not ended.
    [[nodiscard]] double newestMove(const Diagnosis& diagnosis) const;
    [[nodiscard]] QString kernelSays(const RunRecord& record, int rank) const;

    DiagnosticsOptions m_options;
    QHash<int, QString> m_hosts;
    QMap<int, RankState> m_ranks;
    QVector<Diagnosis> m_all;
    QVector<Diagnosis> m_pending; // found while feeding, handed out by the next update()
    QHash<QString, double> m_hangStill; // a hang's key -> newestMove() when it was reported
    QHash<int, qint64> m_pids;    // from the ranks' start events
    QSet<int> m_erred;            // ranks that reported a fatal error of their own
    QHash<QString, KernelLogCapture> m_kernelLogs; // by host
    double m_endingSince = std::numeric_limits<double>::infinity();
    QVector<QPair<double, double>> m_pauses; // [from, to), in order, not overlapping; to infinity: still paused
    // The trainer's replica checks that found the parameters apart (events 1.1 and later): by step, when the
    // first rank said so, and each rank's checksum.
    struct ReplicaCheck {
        double firstSaid = 0.0;
        QMap<int, double> checksums;
    };
    QMap<qint64, ReplicaCheck> m_replicaChecks; // none once the first check is reported (m_all has it)
    struct WatchdogTimeout {
        CollectiveTimeout timeout;
        double time = 0.0;
    };
    QMap<int, WatchdogTimeout> m_watchdogTimeouts; // by rank
    struct TimedBlame {
        DesyncBlame blame;
        double time;
    };
    QVector<TimedBlame> m_desyncBlames; // in the order read
    // What the findings say of them so far, and in which finding (its key): said again only when it changes.
    QString m_watchdogSaid;
    QString m_watchdogSaidIn;
};

} // namespace rankscope
