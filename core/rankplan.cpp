// SPDX-License-Identifier: MIT
#include "core/rankplan.h"

#include <algorithm>

namespace rankscope {

namespace {

using Environment = QList<QPair<QString, QString>>;

// What a verbose debug run turns on: NCCL's and c10d's own diagnostics.
const Environment kVerboseDebugEnv = {
    {"NCCL_DEBUG", "INFO"},
    {"TORCH_DISTRIBUTED_DEBUG", "DETAIL"},
    {"TORCH_CPP_LOG_LEVEL", "INFO"},
    // After a collective's timeout, PyTorch's watchdog says which ranks lagged (a desync report the diagnosis reads).
    {"TORCH_NCCL_DESYNC_DEBUG", "1"},
};

QString withoutBrackets(const QString& address) {
    if (address.size() > 2 && address.startsWith(QLatin1Char('[')) && address.endsWith(QLatin1Char(']')))
        return address.mid(1, address.size() - 2);
    return address;
}

// Sets a variable, replacing an earlier value in place so that no name appears twice.
void setVariable(Environment& env, const QString& name, const QString& value) {
    const auto it = std::find_if(env.begin(), env.end(), [&](const auto& entry) { return entry.first == name; });
    if (it != env.end())
        it->second = value;
    else
        env.append({name, value});
}

PlanNode localDebugNode(const JobSpec& job) {
    PlanNode plan;
    plan.node.host = QStringLiteral("localhost");
    plan.node.name = kLocalNodeName;
    plan.node.address = QStringLiteral("127.0.0.1");
    plan.node.procs = job.debug.procs;
    plan.local = true;
    return plan;
}

QVector<PlanNode> planNodes(const JobSpec& job, RunMode mode) {
    QVector<PlanNode> nodes;
    if (mode == RunMode::Debug && job.debug.node == kLocalNodeName) {
        nodes.append(localDebugNode(job));
    } else if (mode == RunMode::Debug) {
        const auto it = std::find_if(job.nodes.cbegin(), job.nodes.cend(),
                                     [&](const NodeSpec& node) { return node.name == job.debug.node; });
        if (it != job.nodes.cend())
            nodes.append({*it, false, 0, 0});
    } else {
        for (const NodeSpec& node : job.nodes)
            nodes.append({node, false, 0, 0});
    }
    qint64 firstRank = 0;
    for (qsizetype i = 0; i < nodes.size(); ++i) {
        nodes[i].node.procs = std::max(nodes[i].node.effectiveProcs(), 1);
        nodes[i].groupRank = static_cast<int>(i);
        nodes[i].firstRank = static_cast<int>(firstRank);
        firstRank += nodes[i].node.procs;
        // A job that parseJob would reject must not turn into a huge allocation.
        if (firstRank > kMaxWorldSize)
            return {};
    }
    return nodes;
}

// The trainer flags shared by every rank, after the per-rank distributed ones.
QStringList trainerArguments(const JobSpec& job, RunMode mode) {
    TrainerSpec trainer = job.trainer;
    if (mode != RunMode::Debug)
        return trainer.toArguments();
    if (job.debug.maxSteps > 0)
        trainer.maxSteps = trainer.maxSteps > 0 ? std::min(trainer.maxSteps, job.debug.maxSteps) : job.debug.maxSteps;
    QStringList args = trainer.fieldArguments();
    // A check every step finds the first step on which replicas diverge; extra_args still come last and win.
    if (job.debug.verbose)
        args << QStringLiteral("--replica-check-every") << QStringLiteral("1");
    return args + trainer.extraArgs;
}

Environment rankEnvironment(const JobSpec& job, RunMode mode, const RankPlan& plan, const PlanNode& node,
                            int localRank) {
    Environment env;
    if (plan.launcher == Launcher::Direct)
        env = {
            {"RANK", QString::number(node.firstRank + localRank)},
            {"LOCAL_RANK", QString::number(localRank)},
            {"WORLD_SIZE", QString::number(plan.worldSize)},
            {"LOCAL_WORLD_SIZE", QString::number(node.node.procs)},
            {"GROUP_RANK", QString::number(node.groupRank)},
            {"MASTER_ADDR", plan.masterAddress},
            {"MASTER_PORT", QString::number(plan.masterPort)},
        };
    // Each rank gets its own GPU; parseJob guarantees procs <= gpus on a GPU node.
    if (node.node.gpus > 0)
        env.append({"CUDA_VISIBLE_DEVICES", QString::number(localRank)});
    if (mode == RunMode::Debug && job.debug.verbose)
        env += kVerboseDebugEnv;
    for (const auto& [name, value] : job.env)
        setVariable(env, name, value);
    return env;
}

} // namespace

QString tcpInitMethod(const QString& host, int port) {
    const QString bare = withoutBrackets(host);
    const QString shown = bare.contains(QLatin1Char(':')) ? QLatin1Char('[') + bare + QLatin1Char(']') : bare;
    return QStringLiteral("tcp://%1:%2").arg(shown).arg(port);
}

QStringList torchrunCommand(const RankPlan& plan, int nodeIndex, const QString& logDir) {
    const PlanNode& node = plan.nodes.at(nodeIndex);
    return {plan.torchrun,
            QStringLiteral("--nnodes=%1").arg(plan.nodes.size()),
            QStringLiteral("--node_rank=%1").arg(node.groupRank),
            QStringLiteral("--nproc_per_node=%1").arg(node.node.procs),
            QStringLiteral("--master_addr=%1").arg(plan.masterAddress),
            QStringLiteral("--master_port=%1").arg(plan.masterPort),
            // A failed rank fails the run, as with the direct launcher; restarting it is not RankScope's call.
            QStringLiteral("--max_restarts=0"),
            // Each rank writes its own files, so torchrun's redirection stays unused. "0" (the default)
            // would be the natural value, but torchrun 1.13 under Python 3.11 cannot parse it (Std.from_str
            // returns None for 0) and dies before starting anything; "1" parses everywhere.
            QStringLiteral("--redirects=1"),
            QStringLiteral("--tee=1"),
            QStringLiteral("--log_dir=%1").arg(logDir),
            QStringLiteral("--no_python")};
}

RankPlan planRanks(const JobSpec& job, RunMode mode) {
    RankPlan plan;
    plan.mode = mode;
    plan.nodes = planNodes(job, mode);
    if (plan.nodes.isEmpty())
        return plan;
    for (const PlanNode& node : std::as_const(plan.nodes))
        plan.worldSize += node.node.procs;
    plan.masterAddress = withoutBrackets(plan.nodes.first().node.rendezvousAddress());
    plan.masterPort = job.masterPort;
    plan.launcher = job.launcher;
    plan.torchrun = job.torchrun;

    const QString initMethod = tcpInitMethod(plan.masterAddress, plan.masterPort);
    const QStringList trainerArgs = trainerArguments(job, mode);
    plan.ranks.reserve(plan.worldSize);
    for (qsizetype n = 0; n < plan.nodes.size(); ++n) {
        const PlanNode& node = plan.nodes[n];
        for (int localRank = 0; localRank < node.node.procs; ++localRank) {
            RankAssignment rank;
            rank.rank = node.firstRank + localRank;
            rank.localRank = localRank;
            rank.nodeIndex = static_cast<int>(n);
            rank.localWorldSize = node.node.procs;
            rank.env = rankEnvironment(job, mode, plan, node, localRank);
            if (plan.launcher == Launcher::Direct)
                rank.args = QStringList{"--rank",       QString::number(rank.rank), "--world-size",
                                        QString::number(plan.worldSize), "--init-method", initMethod};
            rank.args += trainerArgs;
            plan.ranks.append(rank);
        }
    }
    return plan;
}

} // namespace rankscope
