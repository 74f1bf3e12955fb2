// SPDX-License-Identifier: MIT
#pragma once

#include "core/kernellog.h"
#include "core/runstore.h"
#include "core/stacks.h"
#include "remote/transport.h"

#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QPair>
#include <QStringList>
#include <QVector>

#include <atomic>
#include <limits>
#include <memory>
#include <optional>

class QTimer;

namespace rankscope::remote {

// How the trainer reaches a node. The build is named after the sources' hash, the binary after its own.
struct DeployPlan {
    QString strategy = QStringLiteral("auto");       // auto | build | binary
    QString sourceRoot;                              // trainer sources (a directory or a Qt resource path)
    QString localTrainer;                            // this machine's prebuilt rankscope-trainer
    QByteArray localTrainerSha256;                   // hex, computed once per launch
    QString localPlatform;                           // "x86_64 debian 12": a node that says the same runs the binary
    QList<QPair<QString, QString>> buildEnvironment; // the job's env (Torch_DIR, CMAKE_PREFIX_PATH, ...)
};

struct RankLaunch {
    int rank = 0;
    QList<QPair<QString, QString>> environment;
    QStringList arguments; // trainer arguments; --events is added here
};

struct NodeLaunch {
    int nodeIndex = 0;
    QString name;
    QString workDir; // as in the job: relative paths are relative to the login home
    QString runId;
    QString mode; // debug | submit
    QVector<RankLaunch> ranks;
    DeployPlan deploy;
    // Empty: the supervisor starts every rank itself. Otherwise the command that starts this node's ranks
    // (torchrun ... --no_python), run in the run directory with `launcherEnvironment`; the supervisor's
    // `rank` entry point is appended, and each process it starts runs the rankR.cmd of its RANK.
    QStringList launcherCommand;
    QList<QPair<QString, QString>> launcherEnvironment;
    // The node's GPUs in the job. Above 0 the supervisor samples them with nvidia-smi into gpu.csv, run with
    // `samplerEnvironment` (the job's env: its PATH may be where the node keeps nvidia-smi), and the worker
    // follows that file like the ranks' files.
    int gpus = 0;
    QList<QPair<QString, QString>> samplerEnvironment;
    // A rank of this node to start under gdbserver (debugRankScript), -1: none. Its number also goes to the
    // run directory's `debug-rank`, so that the supervisor's teardown reaches its whole session.
    int debugRank = -1;
    // Above 0: the rendezvous' port, when rank 0 runs on this node. Something listening there already (another
    // run's store) fails the launch before any rank starts: ranks would join the other run's rendezvous.
    int masterPort = 0;
};

// Where streaming resumes: bytes already stored per (rank, stream), and in the node's exits file.
struct StreamOffsets {
    QHash<QPair<int, int>, qint64> streams; // (rank, int(RankStream)) -> bytes already stored
    qint64 exits = 0;
    qint64 gpu = 0;    // bytes of the node's gpu.csv already stored
    qint64 gpuErr = 0; // and of its gpu.err
};

// One rank's native stacks, taken on its node: the parsed stacks, or why there are none.
struct RankStackCapture {
    int rank = 0;
    ProcessStacks stacks;
    QString error; // empty when `stacks` holds threads
    QString note;  // stackCaptureNote: a process that was stopped before the capture
};

struct NodeWorkerOptions {
    int pollIntervalMs = 20;
    int lostAfterMs = 15000; // no pulse for this long, with ranks still unaccounted for: they are lost
    int reconnectIntervalMs = 1000;
    qint64 maxReadBytes = 1 << 20;
};

// One node's blocking work (connect, deploy, launch, follow, stop) on the thread it is moved to. It owns
// the node's Transport; everything it learns leaves through queued signals carrying the node index.
class NodeWorker final : public QObject {
    Q_OBJECT

public:
    NodeWorker(int nodeIndex, std::unique_ptr<Transport> transport, NodeWorkerOptions options = {});
    ~NodeWorker() override;

    // How far this machine's copy of the node's files is known to be current (Unix seconds): when the last pass
    // that read them all began. It stands still while a pass cannot finish (the link is down, a capture holds the
    // node) and until the first pass after (re)connecting: the ranks' stillness past it is the copy's, not
    // theirs. -infinity before the first pass. Safe to call from any thread.
    [[nodiscard]] double copiedUntil() const {
        const qint64 ms = m_copiedUntilMs.load(std::memory_order_relaxed);
        return ms == kNotCopied ? -std::numeric_limits<double>::infinity() : static_cast<double>(ms) / 1000.0;
    }

public slots:
    // Connects, deploys, checks the master port and writes the run directory's files, then says `prepared`:
    // no rank runs yet. The engine starts every node's ranks (start) once each node is prepared, so that a node
    // that cannot be reached or deployed to leaves no rank started on the others.
    void prepare(const rankscope::remote::NodeLaunch& launch);
    void start(); // the prepared node's supervisor, which starts its ranks; then follows them
    // Follows an existing run directory from the given offsets (reattach); `debugRank` as in NodeLaunch.
    void attach(const QString& runDir, const QVector<int>& ranks, const rankscope::remote::StreamOffsets& offsets,
                int debugRank = -1);
    // SIGTERM to every rank's process group, SIGKILL after graceSeconds, then counts what is left.
    void stop(int graceSeconds);
    void shutdown(); // stops following and disconnects; call before the thread quits
    // Every rank's native stacks (gdb, else eu-stack, each bounded by timeoutSeconds), parsed here, off the
    // caller's thread; answered by stacksCaptured with the same `job`. Following pauses meanwhile.
    void captureStacks(int job, int timeoutSeconds);
    // The node's kernel log (remote/kernellogread.h: dmesg, else journalctl -k since `since`), read here and
    // bounded by timeoutSeconds per attempt and maxBytes; answered by kernelLogRead with the same `job`, also when
    // it could not be read (capture.problem says why). Following pauses meanwhile.
    void readKernelLog(int job, double since, int timeoutSeconds, qint64 maxBytes);

signals:
    void progress(int node, const QString& message);
    void failed(int node, int errorKind, const QString& message);
    void prepared(int node);
    void launched(int node, const QString& runDir);
    // Where the node's ranks run the trainer from: a copy of this machine's binary (`thisMachines`), or one
    // built on the node from the sources in `builtFrom`. Emitted before the ranks start.
    void trainerDeployed(int node, const QString& path, bool thisMachines, const QString& builtFrom);
    void data(int node, int rank, int stream, qint64 offset, const QByteArray& bytes);
    void gpuData(int node, qint64 offset, const QByteArray& bytes);   // the node's gpu.csv, from `offset`
    void gpuErrors(int node, qint64 offset, const QByteArray& bytes); // its gpu.err (why there are no samples)
    void rankExited(int node, int rank, int status, double unixTime); // kLostExitStatus: the node went silent
    void linkLost(int node, const QString& message);
    void linkRestored(int node);
    void drained(int node); // every rank ended and every byte of its files was delivered
    void stopped(int node, int processesLeft, const QString& detail);
    void stacksCaptured(int node, int job, const QVector<rankscope::remote::RankStackCapture>& captures);
    void kernelLogRead(int node, int job, const rankscope::KernelLogCapture& capture);

private:
    void poll();
    bool pollOnce();
    void checkPulse();
    void followGpu();
    void followGpuErrors(bool force); // at most every 2 s, unless forced (the last look before draining)
    void handleLinkError(const TransportError& error);
    void linkFailedBesidePolling(const TransportError& error);
    void checkMasterPortFree(int port); // throws TransportError when something listens on it
    void tryReconnect();
    void startFollowing();
    QString absolute(const QString& path) const;
    void deployTools();
    QString deployTrainer(const DeployPlan& plan, bool* thisMachines);
    QString deployBinary(const DeployPlan& plan, bool verify);
    QString buildOnNode(const DeployPlan& plan);
    QString platform();
    void writeRunFiles(const NodeLaunch& launch, const QString& trainer);
    void startSupervisor(const QString& mode);

    int m_node;
    std::unique_ptr<Transport> m_transport;
    NodeWorkerOptions m_options;
    QTimer* m_pollTimer = nullptr;
    QTimer* m_reconnectTimer = nullptr;
    QString m_home;
    QString m_workDir;
    QString m_runDir;
    QVector<int> m_ranks;
    int m_debugRank = -1;
    StreamOffsets m_offsets;
    std::optional<bool> m_followGpu; // unknown after attach until the run directory is looked at
    QHash<int, int> m_exits;
    QByteArray m_exitsTail; // an exits line not yet complete
    QByteArray m_lastPulse; // the supervisor's "alive" file, last seen
    QElapsedTimer m_sincePulseChanged;
    QElapsedTimer m_sincePulseChecked;
    QElapsedTimer m_sinceGpuErrChecked; // gpu.err is looked at every 2 s, not on every poll
    bool m_drained = false;
    QString m_mode;              // the prepared run's, for start
    bool m_runStarted = false;   // launched, or attached: the run directory has a supervisor to stop
    bool m_launchFailed = false; // said `failed` while preparing or starting: the engine counts it stopped
    static constexpr qint64 kNotCopied = std::numeric_limits<qint64>::min();
    std::atomic<qint64> m_copiedUntilMs{kNotCopied}; // copiedUntil(), in ms
    bool m_shuttingDown = false;
};

// The supervisor's exits file: "RANK STATUS UNIXTIME" lines.
struct ExitLine {
    int rank = -1;
    int status = 0;
    double time = 0;
};
[[nodiscard]] QVector<ExitLine> parseExitLines(const QByteArray& completeLines);

// The shell command that prints the native stacks of the processes whose pids are in `pidFiles` (ranks of one node):
// gdb, else eu-stack, each under `timeout`; for a rank it cannot take, one "rankscope: ..." sentence on that rank's
// stderr (see stackCaptureError). The ranks are taken at once (eight debuggers at a time), so that their stacks
// show the same moment and a node's capture takes about as long as one rank's. Each rank's output is framed on
// stdout, in the order of `pidFiles`, for splitStackCaptures() (core/stacks.h); the outputs wait in a directory
// made in `runDir` and removed at the end.
[[nodiscard]] QString stackCapturesCommand(const QString& runDir, const QStringList& pidFiles, int timeoutSeconds);

} // namespace rankscope::remote

Q_DECLARE_METATYPE(rankscope::remote::RankStackCapture)
