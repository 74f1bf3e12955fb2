// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"

#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QVector>

namespace rankscope {

// What one rank is started with.
struct RankAssignment {
    int rank = 0;
    int localRank = 0;
    int nodeIndex = 0; // into RankPlan::nodes
    int localWorldSize = 0;
    // RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
    // CUDA_VISIBLE_DEVICES (only when the node has GPUs: the local rank), then the debug-verbose variables,
    // then the job's env. A job variable replaces a debug default of the same name in place: no duplicates.
    // Under torchrun, torchrun sets the first seven itself (its MASTER_PORT is its agent's store) and they
    // are left out.
    QList<QPair<QString, QString>> env;
    // --rank R --world-size W --init-method tcp://ADDR:PORT (not under torchrun), the trainer's fields
    // (debug mode: --max-steps capped by debug.max_steps, and --replica-check-every 1 when verbose), then
    // trainer.extra_args. No --events: the engine adds it, since where events go is its business.
    QStringList args;
};

struct PlanNode {
    NodeSpec node;
    bool local = false; // this machine, no SSH
    int groupRank = 0;  // index of the node in the plan
    int firstRank = 0;  // global rank of its local rank 0
};

struct RankPlan {
    RunMode mode = RunMode::Submit;
    QVector<PlanNode> nodes;
    QVector<RankAssignment> ranks; // by global rank
    int worldSize = 0;
    QString masterAddress; // as given, without brackets
    int masterPort = 0;
    Launcher launcher = Launcher::Direct;
    QString torchrun; // the command, for Launcher::Torchrun
};

// The ranks of a job run in `mode` (which may differ from job.mode: a submit job can be debugged).
// Submit: every node in order, ranks numbered node by node, master = the first node. Debug with node "local":
// one local node "local" on 127.0.0.1 with debug.procs ranks. Debug on a named node: that node alone with its
// own procs. A job parseJob would reject (no nodes, an unknown debug.node) gives an empty plan, not a crash.
[[nodiscard]] RankPlan planRanks(const JobSpec& job, RunMode mode);

// The command line that starts a node's ranks under torchrun, up to but not including the entry point:
// torchrun --nnodes --node_rank --nproc_per_node --master_addr --master_port --max_restarts=0 ... --no_python.
// Static rendezvous numbers ranks node by node in node_rank order, as planRanks does. Flags are spelled
// with underscores, which torchrun 1.x and 2.x both accept.
[[nodiscard]] QStringList torchrunCommand(const RankPlan& plan, int nodeIndex, const QString& logDir);

// "tcp://HOST:PORT", with an IPv6 host in brackets.
[[nodiscard]] QString tcpInitMethod(const QString& host, int port);

} // namespace rankscope
