// SPDX-License-Identifier: MIT
#pragma once

#include "core/kernellog.h"
#include "core/stacks.h"

#include <QByteArray>
#include <QDateTime>
#include <QHash>
#include <QJsonObject>
#include <QMap>
#include <QPair>
#include <QString>
#include <QVector>

#include <optional>

namespace rankscope {

// The three byte streams every rank has, each copied byte for byte from the node.
enum class RankStream { Out, Err, Events };
[[nodiscard]] QString rankStreamSuffix(RankStream stream); // "out", "err", "events"
inline constexpr RankStream kRankStreams[] = {RankStream::Out, RankStream::Err, RankStream::Events};

// One log line of one rank's stdout or stderr (or a non-event line of its events stream), as the engine
// delivers it to every front end.
struct RankLogLine {
    int rank = 0;
    RankStream stream = RankStream::Out;
    qint64 lineNumber = 0; // 1-based within its stream
    QString text;
    // Unix seconds when the engine read the line: the order of a merged view. Read back from the run store (a
    // stored run opened, the history replayed on attach), when it first arrived (RunStore::arrivals); 0: not
    // known, a run stored before arrivals were kept.
    double receivedAt = 0.0;
    int severity = -1;       // a LogSeverity, as classifyLogLine() says; -1: not classified
    bool nccl = false;       // classifyLogLine()'s verdict, when classified
    bool endsLine = true;    // false: a piece of a line too long for one; the next piece has the same number
};

struct RunNodeRecord {
    QString name;
    QString host;
    bool local = false;
    QString runDir; // absolute, on the node
    QVector<int> ranks;
};

// The status of a rank whose node stopped answering before the rank's own status was written.
inline constexpr int kLostExitStatus = -1;

// "SIGKILL" for 9; "signal N" for one without a common name.
[[nodiscard]] QString signalName(int signal);
// One sentence: "killed by SIGKILL", "exit status 1", "lost: ...". Statuses are as the shell reports them.
[[nodiscard]] QString describeExitStatus(int status);
// A table cell: "SIGKILL", "exit 1", "lost".
[[nodiscard]] QString shortExitStatus(int status);

struct RankExit {
    int status = 0; // wait status as the shell reports it: 128+N for signal N
    QDateTime seenAt;
    // Ended by RankScope's teardown (the user's stop, or the peers of a failed rank), not by itself: no failure.
    bool stopped = false;
    [[nodiscard]] int signal() const { return status > 128 && status < 160 ? status - 128 : 0; }
};

// One run as stored on this machine: enough to list it, reopen it offline, and reattach to its nodes.
struct RunRecord {
    QString id;
    QString name;
    QString mode;  // "debug" | "submit"
    QString state; // "launching" | "running" | "finished" | "failed" | "stopped" | "lost"
    QDateTime created;
    QDateTime ended;
    QJsonObject job; // the job as launched (no secrets: job files hold none)
    int worldSize = 0;
    QVector<RunNodeRecord> nodes;
    QMap<int, RankExit> exits;
    int firstFailedRank = -1;
    QVector<int> failedAlike; // ranks that failed as firstFailedRank did, on their own (FirstFailure::alike)
    QString summary;    // one line for listings, e.g. "rank 1 on node-b killed by SIGKILL"
    // The whole verdict once the run ended, where its diagnoses say more than `summary` (runVerdict in
    // core/diagnostics.h): the root cause with the hung rank the failed one waited on, or the hang a stopped run
    // was stopped in. Empty where the summary says it all; `summary` itself stays the engine's first failure, which
    // the root cause is built from.
    QString verdict;
    int debugRank = -1; // the rank started under gdbserver (`run --debug-rank`); -1: none

    // What a listing shows of the run: its verdict, or its summary where it has none.
    [[nodiscard]] const QString& headline() const { return verdict.isEmpty() ? summary : verdict; }

    // Its end was seen: every rank's exit, or a failure that ended the run. A "lost" run ended for this machine
    // only (its nodes could not be followed): its ranks may still run.
    [[nodiscard]] bool endSeen() const { return ended.isValid() && state != QLatin1String("lost"); }
    // Launching or running: no end recorded yet (finished, failed, stopped or lost).
    [[nodiscard]] bool inProgress() const {
        return state == QLatin1String("launching") || state == QLatin1String("running");
    }
    // Failed, or lost (ended for this machine with no end seen): the runs shown as errors, whose first failed rank
    // is their root cause.
    [[nodiscard]] bool failedOrLost() const {
        return state == QLatin1String("failed") || state == QLatin1String("lost");
    }

    [[nodiscard]] QJsonObject toJson() const;
    [[nodiscard]] static std::optional<RunRecord> fromJson(const QJsonObject& object);
    [[nodiscard]] int nodeOfRank(int rank) const; // index into nodes, -1 when unknown
    // Each rank's node's host as the job names it ("localhost" for this machine): what every front end shows.
    [[nodiscard]] QHash<int, QString> rankHosts() const;
};

// Runs on local disk: ROOT/runs/ID/{run.json, rankR.out, rankR.err, rankR.events}, and ROOT/runs/index.json.
// The size of a local stream file is the offset from which the node's file is read next, so reattaching
// after any interruption neither loses nor repeats a byte.
class RunStore final {
public:
    explicit RunStore(QString root = defaultRoot());
    // $RANKSCOPE_HOME, else the user's data directory (~/.local/share/rankscope).
    [[nodiscard]] static QString defaultRoot();

    [[nodiscard]] const QString& root() const { return m_root; }
    [[nodiscard]] QString newRunId(const QDateTime& now = QDateTime::currentDateTimeUtc()) const;
    [[nodiscard]] QString runDir(const QString& id) const;
    // run.json and the index, both atomically. A record not seen to end does not replace one whose end was seen
    // (RunRecord::endSeen): the run stays ended, and saving it is no error.
    bool save(const RunRecord& record, QString* error = nullptr);
    [[nodiscard]] std::optional<RunRecord> load(const QString& id, QString* error = nullptr) const;
    // Newest first. A run directory missing from the index (a crash between writes) is still listed.
    [[nodiscard]] QVector<RunRecord> list() const;
    // "latest", a full id, or a unique prefix of one.
    [[nodiscard]] QString resolveId(const QString& idOrPrefix, QString* error = nullptr) const;

    [[nodiscard]] QString streamPath(const QString& id, int rank, RankStream stream) const;
    [[nodiscard]] qint64 streamSize(const QString& id, int rank, RankStream stream) const;
    // Appends bytes that start at `offset` of the node's file. Bytes the store already has are skipped;
    // a gap (offset beyond the local size) is refused so that it can never be papered over. `appended`
    // receives how many bytes, from the end of `bytes`, were new: the part a reader has not parsed yet.
    // `arrivedAt` above 0 (Unix seconds): when the bytes reached this machine, kept beside the stream (arrivals)
    // for each append that adds bytes. That record is advisory: a failure to keep it fails nothing.
    bool appendStream(const QString& id, int rank, RankStream stream, qint64 offset, QByteArrayView bytes,
                      QString* error = nullptr, qint64* appended = nullptr, double arrivedAt = 0.0);
    // When the stored stream's bytes arrived: (end offset, Unix seconds) per append, in order; the piece that
    // ends at an offset starts at the one before. Empty for a run stored before arrivals were kept.
    [[nodiscard]] QVector<QPair<qint64, double>> arrivals(const QString& id, int rank, RankStream stream) const;

    // A node's own streams (its GPU samples, "gpu.csv"): ROOT/runs/ID/nodeN.NAME, under the same byte-for-byte,
    // no-gap rules as a rank's. `node` is the index into RunRecord::nodes.
    [[nodiscard]] QString nodeStreamPath(const QString& id, int node, const QString& name) const;
    [[nodiscard]] qint64 nodeStreamSize(const QString& id, int node, const QString& name) const;
    bool appendNodeStream(const QString& id, int node, const QString& name, qint64 offset, QByteArrayView bytes,
                          QString* error = nullptr, qint64* appended = nullptr);

    // A merged stack capture (core/stacks.h's StackTree::toJson), as ROOT/runs/ID/stacks-<UTC time>.json,
    // written atomically. The path, or empty with *error set.
    QString saveStacks(const QString& id, const QJsonObject& stacks, const QDateTime& capturedAt,
                       QString* error = nullptr);
    // The newest of those captures that reads back (a damaged file is passed over), and its path in *path.
    [[nodiscard]] std::optional<StackTree> latestStacks(const QString& id, QString* path = nullptr) const;

    // What was read of a node's kernel log after a rank died by a signal, or why nothing could be, as
    // ROOT/runs/ID/kernel-nodeN.json (KernelLogCapture::toJson), written atomically. The path, or empty with
    // *error set.
    QString saveKernelLog(const QString& id, const KernelLogCapture& capture, QString* error = nullptr);
    // Every node's, by node; a file that does not parse is left out.
    [[nodiscard]] QVector<KernelLogCapture> kernelLogs(const QString& id) const;

    // The user asked to stop the run (ROOT/runs/ID/stop-requested, the UTC time in it), so that every front end
    // following it, not only the one that stops it, takes the ranks' ends for the stop and not for failures.
    // The first request's time is kept.
    bool markStopRequested(const QString& id, const QDateTime& at, QString* error = nullptr);
    // Invalid when no stop was asked for.
    [[nodiscard]] QDateTime stopRequestedAt(const QString& id) const;

private:
    void saveIndex() const;

    QString m_root;
};

} // namespace rankscope
