// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"
#include "core/preflight.h"
#include "remote/transport.h"
#include "remote/transportfactory.h"

#include <QJsonObject>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QVector>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

namespace rankscope::remote {

enum class VerdictLevel { Ok, Warn, Fail }; // ordered: the worst of a list is its maximum

[[nodiscard]] QString verdictLevelName(VerdictLevel level); // "ok", "warn", "fail"

// One judgement on one node: what was found, as a sentence that names the node, and what to do about it.
struct CheckVerdict {
    VerdictLevel level = VerdictLevel::Ok;
    QString item;    // connect, probe, system, workdir, disk, gpus, torch, build-tools, master-port, rendezvous,
                     // socket-ifname
    QString message; // "master port 29500 already in use on node-a"
    QString fix;     // empty when there is nothing to do
};

// The pre-flight of one node of the plan.
struct NodeCheck {
    int index = 0; // in the plan
    QString name;
    QString host;
    int port = 0; // as in the job: 0 is ssh config or 22
    bool local = false;
    bool master = false; // hosts the rendezvous

    bool reachable = false; // connected and the probe ran
    std::optional<TransportErrorKind> errorKind;
    QString errorMessage;
    QString fingerprint; // the server's SHA256 key fingerprint, once the SSH handshake got that far

    ProbeReport report;
    QVector<CheckVerdict> verdicts;

    [[nodiscard]] VerdictLevel level() const; // the worst verdict; Ok when there is none
    [[nodiscard]] QString cause() const;      // the first failing verdict's message, else the first warning's
};

struct ClusterCheckResult {
    QString masterAddress;
    int masterPort = 0;
    QVector<NodeCheck> nodes;

    [[nodiscard]] bool ok() const; // no node fails (warnings allowed)
};

// What the verdicts are measured against, taken from the job.
struct CheckContext {
    DeployStrategy deploy = DeployStrategy::Auto;
    QString masterAddress;
    int masterPort = 0;
    int nodeCount = 0;
    int gpus = 0;                // the node's gpus in the job
    bool wantsCuda = false;      // trainer.device cuda or backend nccl
    QString socketIfnameSetting; // the job's NCCL_SOCKET_IFNAME, if any
    // "x86_64 debian 12" of this machine: an "auto" deploy tries its prebuilt trainer on a node that says the same.
    QString localPlatform;
    qint64 buildDiskKb = 2'000'000; // what building the trainer takes in the work directory
};

// The verdicts on one node from what its probe reported (or why it was not reached). The cross-node ones
// (the master's port seen from the other nodes, LibTorch versions that differ) are added by judgeCluster.
[[nodiscard]] QVector<CheckVerdict> judgeNode(const NodeCheck& node, const CheckContext& context);
void judgeCluster(ClusterCheckResult& result);

// {"name","host","port","local","master","reachable","level","error":{"kind","message","fingerprint"}|null,
//  "report":{probeReportToJson}|null,"verdicts":[{"level","item","message","fix"}]}
[[nodiscard]] QJsonObject nodeCheckToJson(const NodeCheck& node);
// {"master":{"address","port"},"nodes":[...],"ok":bool}
[[nodiscard]] QJsonObject clusterCheckToJson(const ClusterCheckResult& result);

// The pre-flight of a job: every node of its plan is connected to and probed at the same time, one thread
// per node (libssh blocks), and each result comes back to this object's thread by a queued call. The
// probe (resources/remote/probe.sh) checks the work directory, whether the master port is free on the
// master node, and whether every node, the master included, reaches it at the master address.
class ClusterCheck final : public QObject {
    Q_OBJECT

public:
    explicit ClusterCheck(ConnectionOptions options, QObject* parent = nullptr);
    ~ClusterCheck() override; // waits for the node threads: each ends within its connect and probe timeouts

    // Starts checking; false (with *error) when the job has nothing to check in this mode or a check runs.
    bool start(const JobSpec& job, RunMode mode, QString* error);
    [[nodiscard]] bool isRunning() const { return m_pending > 0; }
    [[nodiscard]] const ClusterCheckResult& result() const { return m_result; }

    // How long the probe may run on a node: its slow parts (python, nvidia-smi, the TCP check) run side by
    // side and each gives up after 10 s.
    static constexpr std::chrono::seconds kProbeTimeout{45};

signals:
    void nodeChecked(const rankscope::remote::NodeCheck& node); // the node's own verdicts
    void finished(const rankscope::remote::ClusterCheckResult& result);

private:
    void onNodeDone(NodeCheck node);
    void joinThreads();

    ConnectionOptions m_options;
    QVector<CheckContext> m_contexts; // by node index
    ClusterCheckResult m_result;
    std::vector<std::thread> m_threads;
    int m_pending = 0;
};

} // namespace rankscope::remote

Q_DECLARE_METATYPE(rankscope::remote::NodeCheck)
Q_DECLARE_METATYPE(rankscope::remote::ClusterCheckResult)
