// SPDX-License-Identifier: MIT
#include "remote/clustercheck.h"

#include "core/rankplan.h"
#include "remote/shellcommand.h"
#include "remote/sshtransport.h"

#include <QFile>
#include <QJsonArray>
#include <QSysInfo>

#include <algorithm>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <utility>

namespace rankscope::remote {

namespace {

// A run's files and logs fit in this; below it even a prebuilt trainer is likely to fail mid-run.
constexpr qint64 kMinimumDiskKb = 200'000;

// Whether the node builds the trainer from source, which needs LibTorch's CMake files, cmake, a compiler
// and about 2 GB. "Maybe": an "auto" deploy to a node of this machine's platform tries the binary first.
enum class BuildNeed { No, Maybe, Yes };

CheckVerdict verdict(VerdictLevel level, const QString& item, const QString& message, const QString& fix = {}) {
    return CheckVerdict{level, item, message, fix};
}

QString gigabytes(qint64 kb) {
    return QStringLiteral("%1 GB").arg(static_cast<double>(kb) * 1024 / 1e9, 0, 'f', 1);
}

QString hostPort(const NodeCheck& node) {
    return node.port > 0 ? QStringLiteral("%1:%2").arg(node.host).arg(node.port) : node.host;
}

QString endpoint(const QString& address, int port) {
    return address.contains(QLatin1Char(':')) ? QStringLiteral("[%1]:%2").arg(address).arg(port)
                                              : QStringLiteral("%1:%2").arg(address).arg(port);
}

QString platformOf(const ProbeReport& report) {
    return QStringLiteral("%1 %2 %3").arg(report.arch, report.osId, report.osVersion);
}

BuildNeed buildNeed(const NodeCheck& node, const CheckContext& context) {
    switch (context.deploy) {
    case DeployStrategy::Build:
        return BuildNeed::Yes;
    case DeployStrategy::Binary:
        return BuildNeed::No;
    case DeployStrategy::Auto:
        break;
    }
    if (node.local)
        return BuildNeed::No; // the local debug node runs this machine's own trainer
    return platformOf(node.report) == context.localPlatform ? BuildNeed::Maybe : BuildNeed::Yes;
}

const TorchInstall* usableTorch(const ProbeReport& report) {
    const auto it = std::find_if(report.torch.cbegin(), report.torch.cend(),
                                 [](const TorchInstall& install) { return install.hasConfig; });
    return it == report.torch.cend() ? nullptr : &*it;
}

CheckVerdict connectVerdict(const NodeCheck& node) {
    const QString where = QStringLiteral("%1 (%2)").arg(node.name, hostPort(node));
    const QString message = QStringLiteral("%1: %2").arg(where, node.errorMessage);
    QString fix;
    switch (*node.errorKind) {
    case TransportErrorKind::Dns:
        fix = QStringLiteral("check the host name of %1 in the job file (or its Host alias in ~/.ssh/config)")
                  .arg(node.name);
        break;
    case TransportErrorKind::Refused:
        fix = QStringLiteral("nothing listens on the SSH port of %1: start sshd there, or fix \"port\" in the job")
                  .arg(node.host);
        break;
    case TransportErrorKind::Unreachable:
        fix = QStringLiteral("check that %1 is up and that the network (VPN, firewall, routes) lets SSH through")
                  .arg(node.host);
        break;
    case TransportErrorKind::HostKeyUnknown:
        fix = QStringLiteral("compare %1 with the key on %2 (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), "
                             "then accept it: --accept-new-host-keys, or ssh to it once")
                  .arg(node.fingerprint.isEmpty() ? QStringLiteral("the fingerprint") : node.fingerprint, node.host);
        break;
    case TransportErrorKind::HostKeyChanged:
        fix = QStringLiteral("if %1 was reinstalled, remove its old key (ssh-keygen -R %2) and check again; "
                             "otherwise treat it as an attack")
                  .arg(node.name, node.host);
        break;
    case TransportErrorKind::Auth:
        fix = QStringLiteral("check \"user\" and \"identity_file\" of %1, or load the key into ssh-agent (ssh-add)")
                  .arg(node.name);
        break;
    default:
        fix = QStringLiteral("retry; if it persists, log in by hand (ssh %1) and look for a start-up file that "
                             "hangs or fails")
                  .arg(node.host);
        break;
    }
    return verdict(VerdictLevel::Fail, QStringLiteral("connect"), message, fix);
}

void judgeWorkdir(const NodeCheck& node, const CheckContext& context, QVector<CheckVerdict>& out) {
    const ProbeReport& r = node.report;
    if (!r.workdirWritable) {
        out << verdict(VerdictLevel::Fail, QStringLiteral("workdir"),
                       QStringLiteral("%1 cannot create or write its work directory %2 (%3 is not writable)")
                           .arg(node.name, r.workdir, r.workdirTested),
                       QStringLiteral("set \"work_dir\" of %1 to a directory %2 can write, or fix its permissions")
                           .arg(node.name, r.user));
    } else {
        out << verdict(VerdictLevel::Ok, QStringLiteral("workdir"),
                       r.workdirExists
                           ? QStringLiteral("work directory %1 is writable").arg(r.workdir)
                           : QStringLiteral("work directory %1 will be created in %2").arg(r.workdir, r.workdirTested));
    }

    const BuildNeed need = buildNeed(node, context);
    const QString where = r.workdirTested.isEmpty() ? r.workdir : r.workdirTested;
    const QString freeSpace = QStringLiteral("disk: %1 free in %2").arg(gigabytes(r.diskFreeKb), where);
    const QString makeRoom =
        QStringLiteral("free some space, or set \"work_dir\" of %1 on a larger file system").arg(node.name);
    if (r.diskFreeKb < 0) {
        out << verdict(VerdictLevel::Warn, QStringLiteral("disk"),
                       QStringLiteral("cannot tell the free disk space in %1 on %2").arg(where, node.name),
                       QStringLiteral("check it by hand (df -Pk %1 on %2): a run needs about %3 for its files and "
                                      "logs")
                           .arg(where, node.name, gigabytes(kMinimumDiskKb)));
    } else if (r.diskFreeKb < kMinimumDiskKb) {
        out << verdict(VerdictLevel::Fail, QStringLiteral("disk"),
                       freeSpace + QStringLiteral(": too little for a run's files and logs"), makeRoom);
    } else if (r.diskFreeKb < context.buildDiskKb && need != BuildNeed::No) {
        out << verdict(need == BuildNeed::Yes ? VerdictLevel::Fail : VerdictLevel::Warn, QStringLiteral("disk"),
                       freeSpace +
                           QStringLiteral(", the trainer build needs about %1").arg(gigabytes(context.buildDiskKb)),
                       makeRoom);
    } else {
        out << verdict(VerdictLevel::Ok, QStringLiteral("disk"), freeSpace);
    }
}

void judgeGpus(const NodeCheck& node, const CheckContext& context, QVector<CheckVerdict>& out) {
    const ProbeReport& r = node.report;
    const int found = static_cast<int>(r.gpus.size());
    const QString item = QStringLiteral("gpus");
    if (context.gpus > 0 && r.nvidiaSmi == QLatin1String("missing")) {
        out << verdict(
            VerdictLevel::Fail, item,
            QStringLiteral("the job gives %1 %2 GPU(s), but nvidia-smi is not installed there")
                .arg(node.name)
                .arg(context.gpus),
            QStringLiteral("install the NVIDIA driver on %1, or set its \"gpus\" to 0 to train on CPU").arg(node.name));
    } else if (r.nvidiaSmi == QLatin1String("error")) {
        out << verdict(context.gpus > 0 || context.wantsCuda ? VerdictLevel::Fail : VerdictLevel::Warn, item,
                       QStringLiteral("nvidia-smi -L fails on %1: %2").arg(node.name, r.nvidiaSmiDetail),
                       QStringLiteral("check the NVIDIA driver on %1 (nvidia-smi; a reboot after a driver update)")
                           .arg(node.name));
    } else if (found < context.gpus) {
        out << verdict(
            VerdictLevel::Fail, item,
            QStringLiteral("%1 has %2 GPU(s), the job asks for %3").arg(node.name).arg(found).arg(context.gpus),
            QStringLiteral("set \"gpus\" of %1 to %2").arg(node.name).arg(found));
    } else if (found == 0 && context.wantsCuda) {
        out << verdict(VerdictLevel::Fail, item,
                       QStringLiteral("the trainer uses CUDA or NCCL, but %1 has no GPU").arg(node.name),
                       QStringLiteral("set trainer.device to cpu and trainer.backend to gloo, or use GPU nodes"));
    } else if (found == 0) {
        out << verdict(VerdictLevel::Ok, item, QStringLiteral("no GPU on %1; the job trains on CPU").arg(node.name));
    } else {
        out << verdict(VerdictLevel::Ok, item,
                       QStringLiteral("%1 GPU(s) on %2, the job uses %3: %4")
                           .arg(found)
                           .arg(node.name)
                           .arg(context.gpus)
                           .arg(r.gpus.front().section(QLatin1String(" (UUID"), 0, 0)));
    }
}

void judgeBuild(const NodeCheck& node, const CheckContext& context, QVector<CheckVerdict>& out) {
    const ProbeReport& r = node.report;
    const BuildNeed need = buildNeed(node, context);
    // A remote node needs LibTorch even for a prebuilt trainer: the binary links its shared libraries.
    const VerdictLevel missing = (need == BuildNeed::Yes || !node.local) ? VerdictLevel::Fail : VerdictLevel::Warn;
    if (const TorchInstall* torch = usableTorch(r)) {
        out << verdict(VerdictLevel::Ok, QStringLiteral("torch"),
                       QStringLiteral("LibTorch %1 at %2 (%3)")
                           .arg(torch->version.isEmpty() ? QStringLiteral("(version unknown)") : torch->version,
                                torch->cmakeDir, torch->source));
    } else if (!r.torch.isEmpty()) {
        const TorchInstall& torch = r.torch.front();
        out << verdict(missing, QStringLiteral("torch"),
                       QStringLiteral("torch %1 from %2 on %3 has no CMake files (%4)")
                           .arg(torch.version, torch.source, node.name, torch.cmakeDir),
                       QStringLiteral("install libtorch-dev, or pip install torch (its wheel ships the CMake files)"));
    } else {
        out << verdict(missing, QStringLiteral("torch"), QStringLiteral("no LibTorch found on %1").arg(node.name),
                       QStringLiteral("install libtorch-dev, set Torch_DIR in env, or pip install torch"));
    }

    if (need == BuildNeed::No)
        return;
    QStringList absent;
    if (r.cmake == QLatin1String("missing") || r.cmake == QLatin1String("error") || r.cmake.isEmpty())
        absent << QStringLiteral("cmake");
    if (r.cxx == QLatin1String("missing") || r.cxx == QLatin1String("error") || r.cxx.isEmpty())
        absent << QStringLiteral("C++ compiler");
    if (absent.isEmpty()) {
        out << verdict(VerdictLevel::Ok, QStringLiteral("build-tools"),
                       QStringLiteral("cmake %1, %2").arg(r.cmake, r.cxx));
        return;
    }
    out << verdict(need == BuildNeed::Yes ? VerdictLevel::Fail : VerdictLevel::Warn, QStringLiteral("build-tools"),
                   QStringLiteral("%1 may have to build the trainer but has no %2")
                       .arg(node.name, absent.join(QStringLiteral(" and no "))),
                   QStringLiteral("install cmake and a C++17 compiler (apt install cmake g++), or use \"deploy\": "
                                  "\"binary\" when %1 matches this machine")
                       .arg(node.name));
}

void judgePorts(const NodeCheck& node, const CheckContext& context, QVector<CheckVerdict>& out) {
    const ProbeReport& r = node.report;
    const QString port = QString::number(context.masterPort);
    if (node.master) {
        if (r.listenPortInUse == QLatin1String("yes"))
            out << verdict(VerdictLevel::Fail, QStringLiteral("master-port"),
                           QStringLiteral("master port %1 already in use on %2").arg(port, node.name),
                           QStringLiteral("stop what listens there (ss -ltnp 'sport = :%1' on %2: another run?), "
                                          "or choose another master_port")
                               .arg(port, node.name));
        else if (r.listenPortInUse == QLatin1String("no"))
            out << verdict(VerdictLevel::Ok, QStringLiteral("master-port"),
                           QStringLiteral("master port %1 is free on %2").arg(port, node.name));
        else
            out << verdict(VerdictLevel::Warn, QStringLiteral("master-port"),
                           QStringLiteral("cannot tell whether master port %1 is free on %2").arg(port, node.name),
                           QStringLiteral("check by hand that nothing listens there (ss -ltn 'sport = :%1' on %2)")
                               .arg(port, node.name));
    }
    if (r.connectHost.isEmpty())
        return;
    const QString target = endpoint(context.masterAddress, context.masterPort);
    const QString result = r.connectResult;
    const QString detail = r.connectDetail.isEmpty() ? result : r.connectDetail;
    const QString item = QStringLiteral("rendezvous");
    if (result == QLatin1String("refused")) {
        // Refused is the good answer before a run: the path works and nothing listens yet.
        out << verdict(
            VerdictLevel::Ok, item,
            QStringLiteral("%1 reaches %2 (refused: the port is free and nothing blocks it)").arg(node.name, target));
    } else if (result == QLatin1String("open")) {
        out << verdict(VerdictLevel::Fail, item,
                       QStringLiteral("%1 reaches %2, but something already listens there").arg(node.name, target),
                       QStringLiteral("stop what listens on port %1 of the master node, or choose another "
                                      "master_port")
                           .arg(port));
    } else if (result == QLatin1String("timeout") || result == QLatin1String("unreachable")) {
        out << verdict(VerdictLevel::Fail, item,
                       QStringLiteral("%1 cannot reach %2 (%3: %4)").arg(node.name, target, result, detail),
                       QStringLiteral("open port %1 in the firewall of the master node (and on the way), or set "
                                      "the master's \"address\" to one %2 can reach")
                           .arg(port, node.name));
    } else if (result == QLatin1String("unresolved")) {
        out << verdict(
            VerdictLevel::Fail, item,
            QStringLiteral("%1 cannot resolve the master address %2").arg(node.name, context.masterAddress),
            QStringLiteral("set the master node's \"address\" to an IP address %1 can reach").arg(node.name));
    } else {
        out << verdict(
            VerdictLevel::Warn, item, QStringLiteral("%1 could not test %2: %3").arg(node.name, target, detail),
            QStringLiteral("install bash and coreutils' timeout on %1, or test the port by hand").arg(node.name));
    }
}

void judgeInterfaces(const NodeCheck& node, const CheckContext& context, QVector<CheckVerdict>& out) {
    const QString item = QStringLiteral("socket-ifname");
    if (context.nodeCount < 2) {
        out << verdict(VerdictLevel::Ok, item,
                       QStringLiteral("one node: its ranks meet on it, NCCL_SOCKET_IFNAME is not needed"));
        return;
    }
    const SocketIfnameAdvice advice =
        adviseSocketIfname(node.report.interfaces, context.masterAddress, context.socketIfnameSetting);
    if (advice.suggestion.isEmpty()) {
        out << verdict(VerdictLevel::Warn, item,
                       QStringLiteral("NCCL_SOCKET_IFNAME: no interface to suggest on %1: %2")
                           .arg(node.name, advice.warnings.join(QStringLiteral("; "))),
                       QStringLiteral("check the network interfaces of %1 (ip addr)").arg(node.name));
    } else if (!advice.warnings.isEmpty()) {
        out << verdict(VerdictLevel::Warn, item,
                       QStringLiteral("NCCL_SOCKET_IFNAME: suggest %1 on %2, but %3")
                           .arg(advice.suggestion, node.name, advice.warnings.join(QStringLiteral("; "))),
                       QStringLiteral("set env NCCL_SOCKET_IFNAME to the interface that reaches the other nodes "
                                      "(not lo or a container bridge)"));
    } else {
        out << verdict(VerdictLevel::Ok, item,
                       QStringLiteral("NCCL_SOCKET_IFNAME: suggest %1 (it reaches %2)")
                           .arg(advice.suggestion, context.masterAddress));
    }
}

} // namespace

QString verdictLevelName(VerdictLevel level) {
    switch (level) {
    case VerdictLevel::Ok:
        return QStringLiteral("ok");
    case VerdictLevel::Warn:
        return QStringLiteral("warn");
    case VerdictLevel::Fail:
        return QStringLiteral("fail");
    }
    return QStringLiteral("fail");
}

VerdictLevel NodeCheck::level() const {
    VerdictLevel worst = VerdictLevel::Ok;
    for (const CheckVerdict& v : verdicts)
        worst = std::max(worst, v.level);
    return worst;
}

QString NodeCheck::cause() const {
    for (const VerdictLevel level : {VerdictLevel::Fail, VerdictLevel::Warn})
        for (const CheckVerdict& v : verdicts)
            if (v.level == level)
                return v.message;
    return {};
}

bool ClusterCheckResult::ok() const {
    return std::none_of(nodes.cbegin(), nodes.cend(),
                        [](const NodeCheck& node) { return node.level() == VerdictLevel::Fail; });
}

QVector<CheckVerdict> judgeNode(const NodeCheck& node, const CheckContext& context) {
    QVector<CheckVerdict> out;
    if (!node.reachable) {
        if (node.errorKind)
            out << connectVerdict(node);
        return out;
    }
    const ProbeReport& r = node.report;
    if (node.errorKind || !r.complete) {
        out << verdict(VerdictLevel::Fail, QStringLiteral("probe"),
                       QStringLiteral("the probe gave no complete report on %1: %2")
                           .arg(node.name, node.errorMessage.isEmpty() ? QStringLiteral("its output was cut off")
                                                                       : node.errorMessage),
                       QStringLiteral("run it by hand to see why: rankscope's resources/remote/probe.sh with /bin/sh "
                                      "on %1")
                           .arg(node.host));
        if (node.errorKind)
            return out;
    }
    for (const QString& warning : r.warnings)
        out << verdict(VerdictLevel::Warn, QStringLiteral("probe"), QStringLiteral("%1: %2").arg(node.name, warning));
    out << verdict(VerdictLevel::Ok, QStringLiteral("system"),
                   QStringLiteral("%1, %2, kernel %3").arg(r.os, r.arch, r.kernel));
    judgeWorkdir(node, context, out);
    judgeGpus(node, context, out);
    judgeBuild(node, context, out);
    judgePorts(node, context, out);
    judgeInterfaces(node, context, out);
    return out;
}

void judgeCluster(ClusterCheckResult& result) {
    const auto master = std::find_if(result.nodes.cbegin(), result.nodes.cend(),
                                     [](const NodeCheck& node) { return node.master && node.reachable; });
    const bool masterSaysTaken =
        master != result.nodes.cend() && master->report.listenPortInUse == QLatin1String("yes");
    QStringList versions;
    QStringList byNode;
    for (const NodeCheck& node : std::as_const(result.nodes)) {
        if (const TorchInstall* torch = node.reachable ? usableTorch(node.report) : nullptr) {
            if (!torch->version.isEmpty() && !versions.contains(torch->version))
                versions << torch->version;
            byNode << QStringLiteral("%1 %2").arg(node.name, torch->version);
        }
    }
    for (NodeCheck& node : result.nodes) {
        for (CheckVerdict& v : node.verdicts) {
            // The master's own verdict names the taken port: the others only see its consequence.
            if (masterSaysTaken && v.item == QLatin1String("rendezvous") && v.level == VerdictLevel::Fail &&
                node.report.connectResult == QLatin1String("open")) {
                v.level = VerdictLevel::Warn;
                v.message += QStringLiteral(" (the master port is taken on %1)").arg(master->name);
            }
        }
        if (versions.size() > 1 && node.reachable && usableTorch(node.report))
            node.verdicts << verdict(VerdictLevel::Warn, QStringLiteral("torch"),
                                     QStringLiteral("LibTorch differs across nodes: %1").arg(byNode.join(", ")),
                                     QStringLiteral("use one LibTorch version on every node: DDP peers must agree"));
    }
}

QJsonObject nodeCheckToJson(const NodeCheck& node) {
    QJsonArray verdicts;
    for (const CheckVerdict& v : node.verdicts)
        verdicts.append(QJsonObject{{QStringLiteral("level"), verdictLevelName(v.level)},
                                    {QStringLiteral("item"), v.item},
                                    {QStringLiteral("message"), v.message},
                                    {QStringLiteral("fix"), v.fix}});
    QJsonValue error;
    if (node.errorKind || !node.errorMessage.isEmpty()) {
        QJsonObject object{{QStringLiteral("kind"),
                            node.errorKind ? transportErrorKindName(*node.errorKind) : QStringLiteral("probe")},
                           {QStringLiteral("message"), node.errorMessage}};
        if (!node.fingerprint.isEmpty())
            object.insert(QStringLiteral("fingerprint"), node.fingerprint);
        error = object;
    }
    return QJsonObject{
        {QStringLiteral("name"), node.name},
        {QStringLiteral("host"), node.host},
        {QStringLiteral("port"), node.port},
        {QStringLiteral("local"), node.local},
        {QStringLiteral("master"), node.master},
        {QStringLiteral("reachable"), node.reachable},
        {QStringLiteral("level"), verdictLevelName(node.level())},
        {QStringLiteral("error"), error},
        {QStringLiteral("report"), node.reachable ? QJsonValue(probeReportToJson(node.report)) : QJsonValue()},
        {QStringLiteral("verdicts"), verdicts}};
}

QJsonObject clusterCheckToJson(const ClusterCheckResult& result) {
    QJsonArray nodes;
    for (const NodeCheck& node : result.nodes)
        nodes.append(nodeCheckToJson(node));
    return QJsonObject{{QStringLiteral("master"), QJsonObject{{QStringLiteral("address"), result.masterAddress},
                                                              {QStringLiteral("port"), result.masterPort}}},
                       {QStringLiteral("nodes"), nodes},
                       {QStringLiteral("ok"), result.ok()}};
}

namespace {

// Runs on the node's own thread: everything here may block.
NodeCheck probeNode(NodeCheck node, std::unique_ptr<Transport> transport, const QString& command,
                    const QByteArray& script) {
    try {
        transport->connect();
        node.reachable = true;
        const ExecResult result = transport->exec(command, script, ClusterCheck::kProbeTimeout);
        node.report = parseProbeOutput(result.out);
        if (!node.report.complete)
            node.errorMessage =
                QStringLiteral("exit status %1%2")
                    .arg(result.exitStatus)
                    .arg(result.err.trimmed().isEmpty()
                             ? QString()
                             : QStringLiteral(", ") +
                                   QString::fromUtf8(result.err.trimmed()).section(QLatin1Char('\n'), 0, 0));
        transport->disconnect();
    } catch (const TransportError& error) {
        node.errorKind = error.kind();
        node.errorMessage = error.message();
    } catch (const std::exception& error) {
        node.errorKind = TransportErrorKind::Protocol;
        node.errorMessage = QString::fromLocal8Bit(error.what());
    }
    if (const auto* ssh = dynamic_cast<const SshTransport*>(transport.get()))
        node.fingerprint = ssh->serverFingerprint();
    return node;
}

// Questions to the user (an unknown host key, a passphrase) come from several node threads at once: one at a
// time, so that prompts do not interleave.
ConnectionOptions serializePrompts(ConnectionOptions options) {
    auto lock = std::make_shared<std::mutex>();
    if (auto confirm = options.confirmUnknownHost)
        options.confirmUnknownHost = [lock, confirm](const QString& host, const QString& fingerprint) {
            const std::lock_guard<std::mutex> guard(*lock);
            return confirm(host, fingerprint);
        };
    for (auto* ask : {&options.passphrase, &options.password})
        if (auto inner = *ask)
            *ask = [lock, inner](const QString& prompt) {
                const std::lock_guard<std::mutex> guard(*lock);
                return inner(prompt);
            };
    return options;
}

QString envValue(const JobSpec& job, const QString& name) {
    for (const auto& [key, value] : job.env)
        if (key == name)
            return value;
    return {};
}

} // namespace

ClusterCheck::ClusterCheck(ConnectionOptions options, QObject* parent)
    : QObject(parent), m_options(serializePrompts(std::move(options))) {
    qRegisterMetaType<NodeCheck>();
    qRegisterMetaType<ClusterCheckResult>();
}

ClusterCheck::~ClusterCheck() {
    joinThreads();
}

void ClusterCheck::joinThreads() {
    for (std::thread& thread : m_threads)
        if (thread.joinable())
            thread.join();
    m_threads.clear();
}

bool ClusterCheck::start(const JobSpec& job, RunMode mode, QString* error) {
    const auto fail = [error](const QString& message) {
        if (error)
            *error = message;
        return false;
    };
    if (isRunning())
        return fail(QStringLiteral("a check is already running"));
    const RankPlan plan = planRanks(job, mode);
    if (plan.nodes.isEmpty())
        return fail(QStringLiteral("job %1 has no node to check in %2 mode").arg(job.name, runModeName(mode)));
    QFile probe(QStringLiteral(":/rankscope/remote/probe.sh"));
    if (!probe.open(QIODevice::ReadOnly))
        return fail(QStringLiteral("the probe script is missing from this build (%1)").arg(probe.fileName()));
    const QByteArray script = probe.readAll();
    joinThreads();

    CheckContext context;
    context.deploy = job.deploy;
    context.masterAddress = plan.masterAddress;
    context.masterPort = plan.masterPort;
    context.nodeCount = static_cast<int>(plan.nodes.size());
    context.wantsCuda = job.trainer.device == QLatin1String("cuda") || job.trainer.backend == QLatin1String("nccl");
    context.socketIfnameSetting = envValue(job, QStringLiteral("NCCL_SOCKET_IFNAME"));
    context.localPlatform =
        QStringLiteral("%1 %2 %3")
            .arg(QSysInfo::currentCpuArchitecture(), QSysInfo::productType(), QSysInfo::productVersion());
    const QString torchDir = envValue(job, QStringLiteral("Torch_DIR"));

    m_result = ClusterCheckResult();
    m_result.masterAddress = plan.masterAddress;
    m_result.masterPort = plan.masterPort;
    m_contexts.clear();
    for (const PlanNode& planNode : plan.nodes) {
        NodeCheck node;
        node.index = planNode.groupRank;
        node.name = planNode.node.name;
        node.host = planNode.node.host;
        node.port = planNode.node.port;
        node.local = planNode.local;
        node.master = planNode.groupRank == 0;
        m_result.nodes.append(node);
        m_contexts.append(context);
        m_contexts.back().gpus = planNode.node.gpus;
    }
    m_pending = static_cast<int>(plan.nodes.size());
    for (const PlanNode& planNode : plan.nodes) {
        QStringList arguments{QStringLiteral("-s"), QStringLiteral("--"), QStringLiteral("--workdir"),
                              planNode.node.workDir};
        if (planNode.groupRank == 0)
            arguments << QStringLiteral("--listen-port") << QString::number(plan.masterPort);
        // The master's own ranks dial MASTER_ADDR too: an address only this machine resolves (an ssh alias)
        // fails there as well.
        arguments << QStringLiteral("--connect") << endpoint(plan.masterAddress, plan.masterPort);
        ShellCommand command(QStringLiteral("/bin/sh"), arguments);
        if (!torchDir.isEmpty())
            command.setEnvironment(QStringLiteral("Torch_DIR"), torchDir); // what a build on the node would use
        std::unique_ptr<Transport> transport = makeTransport(planNode.node, planNode.local, m_options);
        const NodeCheck node = m_result.nodes[planNode.groupRank];
        m_threads.emplace_back(
            [this, node, transport = std::move(transport), text = command.toString(), script]() mutable {
                pthread_setname_np(pthread_self(), QStringLiteral("rs-check-%1").arg(node.index).left(15).toLatin1());
                NodeCheck checked = probeNode(node, std::move(transport), text, script);
                // Delivered to this object's thread; the destructor joins this thread first, so `this` is alive.
                QMetaObject::invokeMethod(
                    this, [this, checked = std::move(checked)]() mutable { onNodeDone(std::move(checked)); },
                    Qt::QueuedConnection);
            });
    }
    return true;
}

void ClusterCheck::onNodeDone(NodeCheck node) {
    node.verdicts = judgeNode(node, m_contexts.value(node.index));
    m_result.nodes[node.index] = node;
    emit nodeChecked(node);
    if (--m_pending > 0)
        return;
    judgeCluster(m_result);
    emit finished(m_result);
}

} // namespace rankscope::remote
