// SPDX-License-Identifier: MIT
#pragma once

#include "core/diagnostics.h"
#include "core/eventstreamparser.h"
#include "core/firstfailure.h"
#include "core/ncclfindings.h"
#include "core/jobspec.h"
#include "core/linesplitter.h"
#include "core/nvidiasmi.h"
#include "core/rankstreams.h"
#include "core/rankplan.h"
#include "core/runstore.h"
#include "core/stacks.h"
#include "core/trainerevent.h"
#include "remote/debugsession.h"
#include "remote/kernellogwatch.h"
#include "remote/nodeworker.h"
#include "remote/sshtransport.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <QStringList>
#include <QVector>

#include <functional>
#include <limits>
#include <map>
#include <memory>

class QThread;
class QTimer;

namespace rankscope::remote {

struct EngineOptions {
    QString knownHostsPath; // empty: ~/.ssh/known_hosts
    QString sshConfigPath;  // empty: ~/.ssh/config
    bool acceptNewHostKeys = false;
    std::function<bool(const QString& host, const QString& fingerprint)> confirmUnknownHost;
    std::function<std::optional<QString>(const QString& prompt)> passphrase;
    std::function<std::optional<QString>(const QString& prompt)> password;
    std::chrono::seconds connectTimeout{10};
    NodeWorkerOptions worker;
    int stopGraceSeconds = 10;
    int failureGraceSeconds = 3; // a failed rank's peers are usually blocked in a collective: end them quickly
    QString localTrainer;        // default: rankscope-trainer next to this executable
    QString trainerSources = QStringLiteral(":/rankscope/trainer");
    bool captureStacksOnHang = true; // once per hang (its key), while following a live run
    int stackTimeoutSeconds = 60;    // per rank, for gdb or eu-stack
};

// How one launch differs from a plain one.
struct LaunchOptions {
    // Start this rank under gdbserver on its node and wait for a debugger (see RunEngine::debugServerReady).
    // The other ranks run normally and wait for it in their collectives.
    std::optional<int> debugRank;
    // Passed to every rank as --timeout-s when a rank is debugged: a rank stopped at a breakpoint must not make
    // the others' collectives time out. A genuine failure of any rank then tears the run down, as in submit mode.
    std::chrono::seconds debugCollectiveTimeout{std::chrono::hours(24)};
};

// The engine every front end drives: it launches a job's ranks on their nodes (or attaches to a stored
// run), follows every rank's files into the run store byte for byte, parses them in core, and tears the
// run down. One node per worker thread, which also stores and parses that node's streams (StreamIngest);
// this object lives on the caller's thread and only receives queued signals, parsed, from the workers.
class RunEngine final : public QObject {
    Q_OBJECT

public:
    RunEngine(RunStore* store, EngineOptions options, QObject* parent = nullptr);
    ~RunEngine() override;

    bool launch(const JobSpec& job, RunMode mode, QString* error);
    // A debug rank outside the job's ranks is refused, naming the rank and the ranks there are.
    bool launch(const JobSpec& job, RunMode mode, const LaunchOptions& options, QString* error);
    bool attach(const QString& runId, QString* error);
    // Shows a stored run offline: replays its stored streams and exits through the same signals as a live
    // run, synchronously, without contacting any node.
    bool open(const QString& runId, QString* error);
    // After open() of a run not seen to end: the Unix time up to which every rank's stored events go, where its
    // diagnosis stops; infinity for a run that ended, or has no events.
    [[nodiscard]] double openedKnownUntil() const { return m_knownUntil; }
    // The launch failed on a node that could not be reached or prepared (connect, deploy, start), not in a rank.
    [[nodiscard]] bool launchFailed() const { return m_launchFailed; }
    void stop();   // teardown: SIGTERM, SIGKILL after the grace period, verified on every node
    [[nodiscard]] int stopGraceSeconds() const { return m_options.stopGraceSeconds; }
    void detach(); // stop following; the run goes on on its nodes
    // Takes every rank's native stacks on its node (gdb or eu-stack, on the node workers' threads), merges
    // them into one tree, saves it in the run store and emits stacksCaptured; a capture still running is
    // superseded. False when no run is being followed.
    bool captureStacks(QString* error = nullptr);

    [[nodiscard]] const RunRecord& record() const { return m_record; }
    [[nodiscard]] QString hostOfRank(int rank) const;
    [[nodiscard]] bool isActive() const { return !m_workers.isEmpty() && !m_finished; }
    // The rank waiting under gdbserver, once debugServerReady was emitted, until the run ends.
    [[nodiscard]] std::optional<DebugServer> debugServer() const { return m_debugServer; }

    // Builds the transport for a node of a job (LocalTransport for the local debug node).
    [[nodiscard]] std::unique_ptr<Transport> makeTransport(const NodeSpec& node, bool local) const;

signals:
    void nodeProgress(int node, const QString& host, const QString& message);
    void launched(const QString& runId);
    void events(const QVector<rankscope::TrainerEvent>& events); // a batch, any ranks, each in stream order
    void logLines(const QVector<rankscope::RankLogLine>& lines);
    void decodeErrors(int rank, const QVector<rankscope::DecodeError>& errors);
    // `stopped`: the teardown ended it (RankExit::stopped), which is no failure.
    void rankExited(int rank, const QString& host, int status, bool stopped);
    // The same end judged again with what was learnt since (judgeExits): its `stopped` changed. A front end showing
    // the ranks' states takes it as rankExited; one printing ends as they happen has nothing new to print.
    void rankExitJudged(int rank, const QString& host, int status, bool stopped);
    // A node's GPU readings (nvidia-smi, about one per GPU per second), `node` set to the node's name.
    void gpuSamples(int node, const QString& host, const QVector<rankscope::GpuSample>& samples);
    // Why a node that should sample its GPUs does not (the sampler's stderr, a line at a time: no nvidia-smi on
    // the job's PATH, a driver that does not answer), live and when a stored run is opened or attached.
    void gpuTelemetryError(int node, const QString& host, const QString& message);
    void linkLost(int node, const QString& host, const QString& message);
    void linkRestored(int node, const QString& host);
    void stopped(int processesLeft); // every node answered the teardown; -1 when one could not be verified
    void finished(const rankscope::RunRecord& record);
    // New or changed findings of the run's live diagnosis (hang, straggler, divergence, root cause), as
    // they happen; an attached or opened run's history is diagnosed too.
    void diagnoses(const QVector<rankscope::Diagnosis>& diagnoses);
    // What NCCL's lines on each rank's stdout said so far (version, device, network, transports, warnings),
    // with the findings above: at most once a second while new lines come, and once for an opened run.
    void ncclFacts(const QVector<rankscope::RankNcclFacts>& perRank);
    // A merged stack capture, and the file it was saved to in the run store (empty when saving failed:
    // stacksError says why). Ranks without stacks are in tree.errors() with the reason.
    void stacksCaptured(const rankscope::StackTree& tree, const QString& path);
    void stacksError(const QString& message);
    // The debugged rank's gdbserver accepts a debugger at server.address on this machine: a listener of the
    // engine's whose connection is piped to gdbserver's (through an SSH session of the engine's own for a remote
    // node), torn down with the run. Once per launch.
    void debugServerReady(const rankscope::remote::DebugServer& server);
    // The debugged rank cannot be reached: it ended before gdbserver listened, or the forward failed.
    void debugServerError(const QString& message);

private:
    // The node's GPU samples and nvidia-smi's errors in the run store, as the supervisor names the node's files.
    static inline const QString kGpuStream = QStringLiteral("gpu.csv");
    static inline const QString kGpuErrStream = QStringLiteral("gpu.err");

    // `parsers`: the state of the node's ranks' stream parsers (fresh for a launch, after the replay for an attach).
    NodeWorker* startWorker(int node, std::unique_ptr<Transport> transport, RankStreamParsers parsers);
    void onParsed(int node, int generation, const RankStreamChunk& chunk);
    void deliver(const RankStreamChunk& chunk); // what a chunk of a rank's stream means for the run and its front ends
    void readWatchdog(int rank, QByteArrayView stderrBytes, double arrivedAt);
    [[nodiscard]] RankStreamParsers parsersFor(const QVector<int>& ranks); // the replay's state of these ranks
    // Sets m_watchNccl from the record's job, and asks the parsers for the raw bytes of stderr (every job: the NCCL
    // watchdog) and of stdout (NCCL's own lines, where m_watchNccl).
    void chooseStreamsToRead();
    void onRankExited(int node, int rank, int status, double unixTime);
    void onPrepared(int node);
    void onFailed(int node, int kind, const QString& message);
    void onDrained(int node);
    void onStopped(int node, int left, const QString& detail);
    // Stores a node's bytes of `stream` at `offset`: those not stored before, a view into `bytes` (empty where the
    // store has them already, or failed, which goes to the log).
    QByteArrayView storeNodeStream(int node, const QString& stream, qint64 offset, const QByteArray& bytes);
    void onGpuData(int node, qint64 offset, const QByteArray& bytes);
    void parseGpu(int node, QByteArrayView bytes);
    void onGpuErrors(int node, qint64 offset, const QByteArray& bytes);
    void parseGpuErrors(int node, QByteArrayView bytes);
    void replayStored(); // replayStreams, then replayExits
    void replayStreams();
    void replayExits();
    void teardown(int graceSeconds);
    void noteFailure();
    // What the run's first failed rank said last, from the store, for its root cause; empty when none failed.
    static constexpr int kRootCauseLines = 10;
    [[nodiscard]] QVector<StoredLine> firstFailedRankLastLines() const;
    // The findings of this run's store replayed in the order things happened (open(), as `rankscope-cli diagnose`
    // gives them), each as it last stood.
    [[nodiscard]] QVector<Diagnosis> storedFindings() const;
    void noticeStopRequest();
    // When the ranks began to be ended: the teardown's start or the stop's request, the earlier; invalid: never.
    [[nodiscard]] QDateTime endsFrom() const;
    // When the ranks began to be ended (a stop, a failure's teardown; offline, the stop's mark or the first failing
    // exit), for RunDiagnostics::setEndingSince. Unix seconds; infinity: not ending.
    [[nodiscard]] double endingSince() const;
    // A non-zero exit the teardown caused: after it began (any exit once a stop was asked for), and not a rank
    // whose own error came before it (a culprit whose exit is seen late still failed), nor one killed by SIGKILL
    // before the teardown's own SIGKILL could come (killedBeforeTheTeardownCould).
    [[nodiscard]] bool endedByTeardown(int rank, const RankExit& exit) const;
    [[nodiscard]] qint64 teardownGraceMs() const;                          // m_teardownGraceSeconds in ms
    [[nodiscard]] bool erredBefore(int rank, const QDateTime& time) const; // its first error event, if any
    // A rank that failed only as a consequence (failedOnItsOwn is false: its collective failed with a dead peer, its
    // node's supervisor ended it) of the rank that failed first on its own: ended by that failure, not by itself.
    [[nodiscard]] bool consequenceOfFirstFailure(int rank, const RankExit& exit) const;
    // Judges the ended ranks again (RankExit::stopped), emitting rankExitJudged for each that changed: the
    // consequences of the first failure are stopped, once it is known; with `final` (every error event is in), a
    // rank whose own error came before the teardown, but whose exit was read after it began, failed by itself.
    void judgeExits(bool final);
    void checkNccl(double now, bool force); // network findings from the ranks' NCCL lines, at most once a second
    void finish(const QString& state);
    void saveRecord();
    void releaseWorkers();
    void reset();
    void startDebugSession(const RankPlan& plan, int rank, const DeployPlan& deploy);
    QString localPlatform() const;

    RunStore* m_store;
    EngineOptions m_options;
    RunRecord m_record;
    QVector<QThread*> m_threads;
    QVector<QPointer<NodeWorker>> m_workers;
    RankStreamParsers m_replayParsers; // the stored streams' parsers, handed to the workers after an attach
    int m_generation = 0;              // of the followed run: chunks of an earlier one are dropped
    std::map<int, NvidiaSmiParser> m_gpuParsers; // by node
    std::map<int, LineSplitter> m_gpuErrSplitters; // by node
    QHash<int, QString> m_lastStderrLine; // what a rank that dies without an error event said last
    std::map<int, WatchdogLogParser> m_watchdogs; // by rank: its stderr, where PyTorch's NCCL watchdog writes
    QHash<int, ErrorEvent> m_firstErrors;         // the first fatal error event of each rank
    RunDiagnostics m_diagnostics;
    bool m_watchNccl = false; // NCCL's lines on the ranks' stdout are read (not a Gloo job without NCCL_DEBUG)
    NcclNetworkWatch m_nccl;
    QElapsedTimer m_ncclClock;
    std::optional<QVector<TrainerEvent>> m_offlineEvents; // open(): events gathered to be diagnosed in time order
    QTimer* m_diagnosisTimer = nullptr;
    void diagnose(double now);
    void startDiagnosis();
    void onStacksCaptured(int node, int job, const QVector<RankStackCapture>& captures);
    int m_stackJob = 0;
    QSet<int> m_stackNodesPending;
    StackTree m_stackTree;
    QSet<QString> m_stackedHangs; // hang keys already captured automatically
    KernelLogWatch* m_kernelLogs = nullptr; // what the kernel said when a rank died by a signal
    std::unique_ptr<DebugSession> m_debug; // while a launched run with a debug rank is followed
    std::optional<DebugServer> m_debugServer;
    QSet<int> m_drainedNodes;
    QSet<int> m_preparedNodes; // deployed, ranks not started yet (onPrepared)
    QSet<int> m_stoppedNodes;
    int m_processesLeft = 0;
    QDateTime m_teardownAt;
    int m_teardownGraceSeconds = 0; // after the teardown's SIGTERM, its SIGKILL
    QDateTime m_offlineEndingSince; // open(): see endingSince()
    bool m_stopRequested = false;
    QDateTime m_stopRequestedAt; // by this front end or another (the run store's mark)
    bool m_tearingDown = false;
    bool m_finished = false;
    double m_knownUntil = std::numeric_limits<double>::infinity(); // open(): see openedKnownUntil()
    bool m_launchFailed = false;
    QString m_firstLaunchFailure;      // the summary of a failed launch: the first node's failure in full
    QStringList m_otherLaunchFailures; // and each node that failed after it: "host (kind)"
    bool m_unfollowed = false; // attached, and a node could not be reached
    bool m_attached = false;   // following since attach(): what happened before it is diagnosed from the store
};

} // namespace rankscope::remote

Q_DECLARE_METATYPE(rankscope::RankLogLine)
Q_DECLARE_METATYPE(rankscope::Diagnosis)
Q_DECLARE_METATYPE(rankscope::GpuSample)
Q_DECLARE_METATYPE(rankscope::StackTree)
