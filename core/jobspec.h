// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArrayView>
#include <QJsonObject>
#include <QLatin1String>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QVector>

#include <optional>

// The job file: which nodes to use, how to reach them and what to train. docs/job-file.md describes every
// field, its default and its validation; keep the two in step.
namespace rankscope {

enum class RunMode { Debug, Submit };
enum class Launcher { Direct, Torchrun };
enum class DeployStrategy { Auto, Build, Binary };

// Wire names as written in job files ("debug", "torchrun", "binary", ...).
[[nodiscard]] QLatin1String runModeName(RunMode mode);
[[nodiscard]] QLatin1String launcherName(Launcher launcher);
[[nodiscard]] QLatin1String deployStrategyName(DeployStrategy strategy);

inline constexpr int kJobFileVersion = 1;
inline constexpr int kDefaultMasterPort = 29500;
// Relative to the login home on the node.
inline constexpr QLatin1String kDefaultWorkDir{"rankscope"};
// Reserved as debug.node for "this machine, no SSH"; no node may be called this.
inline constexpr QLatin1String kLocalNodeName{"local"};
// Bounds the rank plan's size: a typo such as "procs": 40000 should be an error, not an allocation.
inline constexpr int kMaxProcsPerNode = 4096;
inline constexpr int kMaxWorldSize = 65536;

struct NodeSpec {
    QString host;                      // required: hostname, IP or ~/.ssh/config alias
    QString name;                      // display name, default = host; unique across nodes
    int port = 0;                      // 0 = from ~/.ssh/config, else 22
    QString user;                      // empty = ssh config / current user
    QString identityFile;              // empty = ssh-agent / default keys
    QString address;                   // address the other nodes use for rendezvous; empty = host
    QString workDir = kDefaultWorkDir; // relative = relative to the login home on the node
    int gpus = 0;
    int procs = 0; // ranks on this node; parseJob always resolves it (gpus > 0 ? gpus : 1 when absent)

    // procs, or what parseJob would resolve an unset (0) procs to.
    [[nodiscard]] int effectiveProcs() const { return procs > 0 ? procs : (gpus > 0 ? gpus : 1); }
    // The address other nodes reach this one at: address, else host.
    [[nodiscard]] QString rendezvousAddress() const { return address.isEmpty() ? host : address; }
};

struct TrainerSpec {                               // JSON object "trainer"
    QString dataset = QStringLiteral("synthetic"); // synthetic|fashion-mnist|mnist|cifar10
    QString model = QStringLiteral("cnn");         // resnet18|cnn|mlp
    QString dataDir;                               // empty = trainer default
    int epochs = 1;
    int maxSteps = 0; // 0 = no limit
    int batchSize = 64;
    double lr = 0;         // 0 = trainer default
    QString optimizer;     // empty|adam|sgd
    QString backend;       // empty|gloo|nccl
    QString device;        // empty|cpu|cuda
    QStringList extraArgs; // passed through verbatim ("extra_args")

    // The trainer flags for the fields above (dataset, model, epochs and batch size always; the others only
    // when set), without extraArgs.
    [[nodiscard]] QStringList fieldArguments() const;
    // fieldArguments() then extraArgs, e.g. {"--dataset","synthetic","--model","cnn","--epochs","1",...}.
    [[nodiscard]] QStringList toArguments() const;
};

struct DebugSpec {                          // JSON object "debug"
    QString node = QString(kLocalNodeName); // "local" (this machine, no SSH) or the name of one node
    int procs = 2;                          // ranks for the local debug node (a chosen remote node uses its own)
    int maxSteps = 20;                      // debug runs stop after this many steps; 0 = no cap
    bool verbose = true; // NCCL_DEBUG=INFO, TORCH_DISTRIBUTED_DEBUG=DETAIL, TORCH_CPP_LOG_LEVEL=INFO, replica checks
};

struct JobSpec {
    int version = kJobFileVersion;
    QString name;
    QVector<NodeSpec> nodes;
    TrainerSpec trainer;
    QList<QPair<QString, QString>> env;   // "env": {"NCCL_DEBUG": "INFO"} kept in file order
    Launcher launcher = Launcher::Direct; // "launcher": "direct" | "torchrun"
    QString torchrun = QStringLiteral("torchrun"); // "torchrun": the command on the nodes (launcher torchrun)
    RunMode mode = RunMode::Submit;       // "mode": "debug" | "submit"
    int masterPort = kDefaultMasterPort;  // "master_port"
    DebugSpec debug;
    DeployStrategy deploy = DeployStrategy::Auto; // "deploy": "auto"|"build"|"binary"
};

[[nodiscard]] bool operator==(const NodeSpec& a, const NodeSpec& b);
[[nodiscard]] bool operator==(const TrainerSpec& a, const TrainerSpec& b);
[[nodiscard]] bool operator==(const DebugSpec& a, const DebugSpec& b);
[[nodiscard]] bool operator==(const JobSpec& a, const JobSpec& b);
inline bool operator!=(const NodeSpec& a, const NodeSpec& b) {
    return !(a == b);
}
inline bool operator!=(const TrainerSpec& a, const TrainerSpec& b) {
    return !(a == b);
}
inline bool operator!=(const DebugSpec& a, const DebugSpec& b) {
    return !(a == b);
}
inline bool operator!=(const JobSpec& a, const JobSpec& b) {
    return !(a == b);
}

// One problem in a job file. path is a JSON path ("nodes[1].port"), "hostfile:LINE" for a hostfile line,
// or empty for the document as a whole (a syntax error, an unreadable file).
struct JobIssue {
    QString path;
    QString message;

    [[nodiscard]] QString toString() const; // "nodes[1].port: must be 1-65535"
};

[[nodiscard]] bool operator==(const JobIssue& a, const JobIssue& b);
inline bool operator!=(const JobIssue& a, const JobIssue& b) {
    return !(a == b);
}

// A job only when there is not a single issue; otherwise every issue found: top-level fields, trainer, debug,
// env, nodes (node_defaults, nodes, hostfile), then checks across sections.
struct JobParseResult {
    std::optional<JobSpec> job;
    QVector<JobIssue> issues;

    [[nodiscard]] bool ok() const { return job.has_value() && issues.isEmpty(); }
};

// Parses and validates a job file's text. Every problem is reported, each with its path; no input crashes or
// asserts. baseDir resolves a relative "hostfile" (empty: the current directory). After parsing, every node's
// name, work_dir and procs are resolved, and "node_defaults" and the hostfile's nodes are merged in.
// `mode`: the mode a front end was asked for (`--mode`), which replaces the file's before the job is checked (a
// submit job with a local debug node and no nodes is a valid local debug run).
[[nodiscard]] JobParseResult parseJob(QByteArrayView json, const QString& baseDir = {},
                                      std::optional<RunMode> mode = std::nullopt);
// Reads a file and parses it with its folder as baseDir; an unset "name" becomes the file's base name.
[[nodiscard]] JobParseResult loadJobFile(const QString& path, std::optional<RunMode> mode = std::nullopt);

// Writes a job as JSON: the resolved job (merged nodes, no node_defaults or hostfile), fields at their
// default left out where the default is "unset". parseJob(jobToJson(j)) gives back j for every parsed j,
// except that env comes back in key order: a QJsonObject cannot hold any other.
[[nodiscard]] QJsonObject jobToJson(const JobSpec& job);
// One resolved node as jobToJson writes it in "nodes".
[[nodiscard]] QJsonObject nodeToJson(const NodeSpec& node);

} // namespace rankscope
