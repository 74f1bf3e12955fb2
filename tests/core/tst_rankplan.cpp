// SPDX-License-Identifier: MIT
#include "core/rankplan.h"

#include <QTest>

using rankscope::JobParseResult;
using rankscope::JobSpec;
using rankscope::planRanks;
using rankscope::RankAssignment;
using rankscope::RankPlan;
using rankscope::RunMode;

using Environment = QList<QPair<QString, QString>>;

namespace {

JobSpec job(const QByteArray& json) {
    const JobParseResult result = rankscope::parseJob(json);
    for (const auto& issue : result.issues)
        qWarning().noquote() << issue.toString();
    return result.job.value_or(JobSpec{});
}

// Two nodes of two GPUs, the first reached for rendezvous on a separate address.
const QByteArray kTwoByTwo = R"({
    "master_port": 29400,
    "nodes": [{"host": "gpu-a", "address": "10.0.0.1", "gpus": 2},
              {"host": "gpu-b", "gpus": 2, "procs": 2}],
    "trainer": {"dataset": "cifar10", "model": "resnet18", "epochs": 2, "extra_args": ["--amp", "bf16"]},
    "env": {"NCCL_SOCKET_IFNAME": "eth0"}
})";

QString value(const Environment& env, const QString& name) {
    for (const auto& [key, val] : env) {
        if (key == name)
            return val;
    }
    return QStringLiteral("<unset>");
}

QStringList names(const Environment& env) {
    QStringList result;
    for (const auto& [key, val] : env)
        result.append(key);
    return result;
}

// The value after `flag` in args, or "<absent>".
QString flagValue(const QStringList& args, const QString& flag) {
    const qsizetype at = args.indexOf(flag);
    return at >= 0 && at + 1 < args.size() ? args[at + 1] : QStringLiteral("<absent>");
}

} // namespace

class tst_RankPlan final : public QObject {
    Q_OBJECT

private slots:
    void submitTwoByTwoNodes();
    void submitTwoByTwoRanks_data();
    void submitTwoByTwoRanks();
    void debugLocal();
    void debugOnNamedNode();
    void debugMaxSteps_data();
    void debugMaxSteps();
    void debugNotVerbose();
    void jobEnvOverridesDebugDefaults();
    void gpuVisibility_data();
    void gpuVisibility();
    void initMethod_data();
    void initMethod();
    void invalidJobGivesEmptyPlan_data();
    void invalidJobGivesEmptyPlan();
    void torchrunSetsTheRankEnvironmentItself();
    void torchrunCommandPerNode();
};

void tst_RankPlan::submitTwoByTwoNodes() {
    const RankPlan plan = planRanks(job(kTwoByTwo), RunMode::Submit);
    QCOMPARE(plan.mode, RunMode::Submit);
    QCOMPARE(plan.worldSize, 4);
    QCOMPARE(plan.masterAddress, QStringLiteral("10.0.0.1"));
    QCOMPARE(plan.masterPort, 29400);
    QCOMPARE(plan.nodes.size(), 2);
    QCOMPARE(plan.nodes[0].node.name, QStringLiteral("gpu-a"));
    QCOMPARE(plan.nodes[0].groupRank, 0);
    QCOMPARE(plan.nodes[0].firstRank, 0);
    QCOMPARE(plan.nodes[0].local, false);
    QCOMPARE(plan.nodes[1].node.name, QStringLiteral("gpu-b"));
    QCOMPARE(plan.nodes[1].groupRank, 1);
    QCOMPARE(plan.nodes[1].firstRank, 2);
    QCOMPARE(plan.ranks.size(), 4);
}

void tst_RankPlan::submitTwoByTwoRanks_data() {
    QTest::addColumn<int>("rank");
    QTest::addColumn<int>("localRank");
    QTest::addColumn<int>("nodeIndex");
    for (int rank = 0; rank < 4; ++rank)
        QTest::addRow("rank %d", rank) << rank << rank % 2 << rank / 2;
}

void tst_RankPlan::submitTwoByTwoRanks() {
    QFETCH(int, rank);
    QFETCH(int, localRank);
    QFETCH(int, nodeIndex);
    const RankPlan plan = planRanks(job(kTwoByTwo), RunMode::Submit);
    QCOMPARE(plan.ranks.size(), 4);
    const RankAssignment& assignment = plan.ranks[rank];
    QCOMPARE(assignment.rank, rank);
    QCOMPARE(assignment.localRank, localRank);
    QCOMPARE(assignment.nodeIndex, nodeIndex);
    QCOMPARE(assignment.localWorldSize, 2);

    const Environment env = {
        {"RANK", QString::number(rank)},
        {"LOCAL_RANK", QString::number(localRank)},
        {"WORLD_SIZE", "4"},
        {"LOCAL_WORLD_SIZE", "2"},
        {"GROUP_RANK", QString::number(nodeIndex)},
        {"MASTER_ADDR", "10.0.0.1"},
        {"MASTER_PORT", "29400"},
        {"CUDA_VISIBLE_DEVICES", QString::number(localRank)},
        {"NCCL_SOCKET_IFNAME", "eth0"},
    };
    QCOMPARE(assignment.env, env);

    const QStringList args = {"--rank",        QString::number(rank),
                              "--world-size",  "4",
                              "--init-method", "tcp://10.0.0.1:29400",
                              "--dataset",     "cifar10",
                              "--model",       "resnet18",
                              "--epochs",      "2",
                              "--batch-size",  "64",
                              "--amp",         "bf16"};
    QCOMPARE(assignment.args, args);
    QVERIFY(!assignment.args.contains("--events")); // the engine adds it
}

void tst_RankPlan::debugLocal() {
    // A submit job with remote nodes, debugged on this machine.
    JobSpec spec = job(kTwoByTwo);
    spec.debug.procs = 3;
    const RankPlan plan = planRanks(spec, RunMode::Debug);
    QCOMPARE(plan.mode, RunMode::Debug);
    QCOMPARE(plan.nodes.size(), 1);
    const rankscope::PlanNode& node = plan.nodes[0];
    QCOMPARE(node.local, true);
    QCOMPARE(node.node.host, QStringLiteral("localhost"));
    QCOMPARE(node.node.name, QStringLiteral("local"));
    QCOMPARE(node.node.address, QStringLiteral("127.0.0.1"));
    QCOMPARE(node.node.procs, 3);
    QCOMPARE(plan.worldSize, 3);
    QCOMPARE(plan.masterAddress, QStringLiteral("127.0.0.1"));
    QCOMPARE(plan.masterPort, 29400);
    QCOMPARE(plan.ranks.size(), 3);

    const RankAssignment& last = plan.ranks[2];
    QCOMPARE(last.localRank, 2);
    QCOMPARE(names(last.env), (QStringList{"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                                           "MASTER_ADDR", "MASTER_PORT", "NCCL_DEBUG", "TORCH_DISTRIBUTED_DEBUG",
                                           "TORCH_CPP_LOG_LEVEL", "TORCH_NCCL_DESYNC_DEBUG", "NCCL_SOCKET_IFNAME"}));
    QCOMPARE(value(last.env, "NCCL_DEBUG"), QStringLiteral("INFO"));
    QCOMPARE(value(last.env, "TORCH_DISTRIBUTED_DEBUG"), QStringLiteral("DETAIL"));
    QCOMPARE(value(last.env, "TORCH_CPP_LOG_LEVEL"), QStringLiteral("INFO"));
    const QStringList args = {"--rank",
                              "2",
                              "--world-size",
                              "3",
                              "--init-method",
                              "tcp://127.0.0.1:29400",
                              "--dataset",
                              "cifar10",
                              "--model",
                              "resnet18",
                              "--epochs",
                              "2",
                              "--max-steps",
                              "20",
                              "--batch-size",
                              "64",
                              "--replica-check-every",
                              "1",
                              "--amp",
                              "bf16"};
    QCOMPARE(last.args, args);
}

void tst_RankPlan::debugOnNamedNode() {
    JobSpec spec = job(kTwoByTwo);
    spec.debug.node = QStringLiteral("gpu-b");
    const RankPlan plan = planRanks(spec, RunMode::Debug);
    QCOMPARE(plan.nodes.size(), 1);
    QCOMPARE(plan.nodes[0].node.name, QStringLiteral("gpu-b"));
    QCOMPARE(plan.nodes[0].local, false);
    QCOMPARE(plan.nodes[0].groupRank, 0);
    QCOMPARE(plan.nodes[0].firstRank, 0);
    QCOMPARE(plan.worldSize, 2);                           // its own procs, not debug.procs
    QCOMPARE(plan.masterAddress, QStringLiteral("gpu-b")); // no address: its host
    QCOMPARE(plan.ranks.size(), 2);
    QCOMPARE(value(plan.ranks[1].env, "RANK"), QStringLiteral("1"));
    QCOMPARE(value(plan.ranks[1].env, "GROUP_RANK"), QStringLiteral("0"));
    QCOMPARE(value(plan.ranks[1].env, "CUDA_VISIBLE_DEVICES"), QStringLiteral("1"));
    QCOMPARE(flagValue(plan.ranks[1].args, "--init-method"), QStringLiteral("tcp://gpu-b:29400"));

    // Submit mode ignores debug.node.
    QCOMPARE(planRanks(spec, RunMode::Submit).worldSize, 4);
}

void tst_RankPlan::debugMaxSteps_data() {
    QTest::addColumn<int>("trainerMaxSteps");
    QTest::addColumn<int>("debugMaxSteps");
    QTest::addColumn<QString>("expected");
    QTest::newRow("debug cap") << 0 << 20 << "20";
    QTest::newRow("trainer's is smaller") << 5 << 20 << "5";
    QTest::newRow("trainer's is larger") << 500 << 20 << "20";
    QTest::newRow("no debug cap") << 7 << 0 << "7";
    QTest::newRow("no cap at all") << 0 << 0 << "<absent>";
}

void tst_RankPlan::debugMaxSteps() {
    QFETCH(int, trainerMaxSteps);
    QFETCH(int, debugMaxSteps);
    QFETCH(QString, expected);
    JobSpec spec = job(R"({"mode": "debug"})");
    spec.trainer.maxSteps = trainerMaxSteps;
    spec.debug.maxSteps = debugMaxSteps;
    const RankPlan plan = planRanks(spec, RunMode::Debug);
    QCOMPARE(plan.ranks.size(), 2);
    QCOMPARE(flagValue(plan.ranks[0].args, "--max-steps"), expected);
    QCOMPARE(plan.ranks[0].args.count("--max-steps"), expected == "<absent>" ? 0 : 1);
    // Submit runs are not capped.
    spec.nodes = {rankscope::NodeSpec{}};
    spec.nodes[0].host = QStringLiteral("a");
    const RankPlan submit = planRanks(spec, RunMode::Submit);
    QCOMPARE(flagValue(submit.ranks[0].args, "--max-steps"),
             trainerMaxSteps > 0 ? QString::number(trainerMaxSteps) : QStringLiteral("<absent>"));
}

void tst_RankPlan::debugNotVerbose() {
    const RankPlan plan = planRanks(job(R"({"mode": "debug", "debug": {"verbose": false}})"), RunMode::Debug);
    QCOMPARE(plan.ranks.size(), 2);
    for (const RankAssignment& rank : plan.ranks) {
        QCOMPARE(names(rank.env), (QStringList{"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                                               "MASTER_ADDR", "MASTER_PORT"}));
        QVERIFY(!rank.args.contains("--replica-check-every"));
        QCOMPARE(flagValue(rank.args, "--max-steps"), QStringLiteral("20"));
    }
}

void tst_RankPlan::jobEnvOverridesDebugDefaults() {
    const RankPlan plan =
        planRanks(job(R"({"mode": "debug", "env": {"A": "1", "NCCL_DEBUG": "WARN", "B": "2"}})"), RunMode::Debug);
    QCOMPARE(plan.ranks.size(), 2);
    const Environment& env = plan.ranks[0].env;
    // Replaced where the default was, so each name appears once.
    QCOMPARE(names(env), (QStringList{"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                                      "MASTER_ADDR", "MASTER_PORT", "NCCL_DEBUG", "TORCH_DISTRIBUTED_DEBUG",
                                      "TORCH_CPP_LOG_LEVEL", "TORCH_NCCL_DESYNC_DEBUG", "A", "B"}));
    QCOMPARE(value(env, "NCCL_DEBUG"), QStringLiteral("WARN"));
}

void tst_RankPlan::gpuVisibility_data() {
    QTest::addColumn<QByteArray>("node");
    QTest::addColumn<QStringList>("visible"); // per local rank; "<unset>" when the variable is not set
    QTest::newRow("cpu node") << QByteArray(R"({"host": "a", "procs": 2})") << QStringList{"<unset>", "<unset>"};
    QTest::newRow("a rank per gpu") << QByteArray(R"({"host": "a", "gpus": 3})") << QStringList{"0", "1", "2"};
    QTest::newRow("fewer ranks than gpus")
        << QByteArray(R"({"host": "a", "gpus": 4, "procs": 2})") << QStringList{"0", "1"};
}

void tst_RankPlan::gpuVisibility() {
    QFETCH(QByteArray, node);
    QFETCH(QStringList, visible);
    const RankPlan plan = planRanks(job(R"({"nodes": [)" + node + "]}"), RunMode::Submit);
    QCOMPARE(plan.ranks.size(), visible.size());
    for (qsizetype i = 0; i < visible.size(); ++i)
        QCOMPARE(value(plan.ranks[i].env, "CUDA_VISIBLE_DEVICES"), visible[i]);
}

void tst_RankPlan::initMethod_data() {
    QTest::addColumn<QString>("address");
    QTest::addColumn<QString>("masterAddr");
    QTest::addColumn<QString>("initMethod");
    QTest::newRow("hostname") << "head.example.org"
                              << "head.example.org"
                              << "tcp://head.example.org:29500";
    QTest::newRow("ipv4") << "10.1.2.3"
                          << "10.1.2.3"
                          << "tcp://10.1.2.3:29500";
    QTest::newRow("ipv6") << "fe80::1"
                          << "fe80::1"
                          << "tcp://[fe80::1]:29500";
    QTest::newRow("ipv6 bracketed") << "[::1]"
                                    << "::1"
                                    << "tcp://[::1]:29500";
}

void tst_RankPlan::initMethod() {
    QFETCH(QString, address);
    QFETCH(QString, masterAddr);
    QFETCH(QString, initMethod);
    JobSpec spec = job(R"({"nodes": [{"host": "a"}, {"host": "b"}]})");
    spec.nodes[0].address = address;
    const RankPlan plan = planRanks(spec, RunMode::Submit);
    QCOMPARE(plan.masterAddress, masterAddr);
    for (const RankAssignment& rank : plan.ranks) {
        QCOMPARE(value(rank.env, "MASTER_ADDR"), masterAddr);
        QCOMPARE(flagValue(rank.args, "--init-method"), initMethod);
    }
    QCOMPARE(rankscope::tcpInitMethod(address, 29500), initMethod);
}

void tst_RankPlan::invalidJobGivesEmptyPlan_data() {
    QTest::addColumn<int>("caseIndex");
    QTest::newRow("submit without nodes") << 0;
    QTest::newRow("debug on a missing node") << 1;
    QTest::newRow("too many ranks") << 2;
}

// planRanks trusts parseJob, but a hand-built job must not crash it.
void tst_RankPlan::invalidJobGivesEmptyPlan() {
    QFETCH(int, caseIndex);
    JobSpec spec;
    RunMode mode = RunMode::Submit;
    if (caseIndex == 1) {
        spec.debug.node = QStringLiteral("gone");
        mode = RunMode::Debug;
    } else if (caseIndex == 2) {
        rankscope::NodeSpec node;
        node.host = QStringLiteral("a");
        node.procs = std::numeric_limits<int>::max();
        spec.nodes = {node, node};
    }
    const RankPlan plan = planRanks(spec, mode);
    QCOMPARE(plan.worldSize, 0);
    QVERIFY(plan.nodes.isEmpty());
    QVERIFY(plan.ranks.isEmpty());
}


// Under torchrun the rank variables and flags come from torchrun (its MASTER_PORT is its agent's store):
// the plan must not set them a second time, and keeps everything else.
void tst_RankPlan::torchrunSetsTheRankEnvironmentItself() {
    QByteArray json = kTwoByTwo;
    json.replace("\"master_port\": 29400,", "\"master_port\": 29400, \"launcher\": \"torchrun\",");
    const RankPlan plan = planRanks(job(json), RunMode::Submit);
    QCOMPARE(plan.ranks.size(), 4);
    for (const RankAssignment& rank : plan.ranks) {
        for (const char* name : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
                                 "MASTER_PORT"})
            QCOMPARE(value(rank.env, QLatin1String(name)), QStringLiteral("<unset>"));
        QCOMPARE(value(rank.env, "CUDA_VISIBLE_DEVICES"), QString::number(rank.localRank));
        QCOMPARE(value(rank.env, "NCCL_SOCKET_IFNAME"), QStringLiteral("eth0"));
        QCOMPARE(flagValue(rank.args, "--rank"), QStringLiteral("<absent>"));
        QCOMPARE(flagValue(rank.args, "--init-method"), QStringLiteral("<absent>"));
        QCOMPARE(flagValue(rank.args, "--dataset"), QStringLiteral("cifar10"));
        QCOMPARE(rank.args.mid(rank.args.size() - 2), (QStringList{"--amp", "bf16"}));
    }
}

void tst_RankPlan::torchrunCommandPerNode() {
    QByteArray json = kTwoByTwo;
    json.replace("\"master_port\": 29400,",
                 "\"master_port\": 29400, \"launcher\": \"torchrun\", \"torchrun\": \"/opt/conda/bin/torchrun\",");
    const RankPlan plan = planRanks(job(json), RunMode::Submit);
    const QStringList second = rankscope::torchrunCommand(plan, 1, QStringLiteral("logs"));
    QCOMPARE(second.first(), QStringLiteral("/opt/conda/bin/torchrun"));
    QCOMPARE(second.last(), QStringLiteral("--no_python"));
    for (const char* flag : {"--nnodes=2", "--node_rank=1", "--nproc_per_node=2", "--master_addr=10.0.0.1",
                             "--master_port=29400", "--max_restarts=0", "--log_dir=logs"})
        QVERIFY2(second.contains(QLatin1String(flag)), flag);
    // "0" crashes torchrun 1.13 under Python 3.11 before it starts anything.
    QVERIFY(!second.contains(QStringLiteral("--redirects=0")) && !second.contains(QStringLiteral("--tee=0")));
    QVERIFY(rankscope::torchrunCommand(plan, 0, QStringLiteral("logs")).contains(QStringLiteral("--node_rank=0")));
}
QTEST_GUILESS_MAIN(tst_RankPlan)
#include "tst_rankplan.moc"
