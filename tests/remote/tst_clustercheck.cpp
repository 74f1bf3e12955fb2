// SPDX-License-Identifier: MIT
// The pre-flight check against real servers: a private sshd on loopback for what one node reports and for
// every connection failure, two namespace nodes (as root) for the master port seen across a network, and
// rankscope-cli check end to end.
#include "enginetestutil.h"
#include "fixtures/netnsfixture.h"
#include "fixtures/sshdfixture.h"
#include "remote/clustercheck.h"

#include <QProcess>
#include <QScopeGuard>
#include <QStandardPaths>
#include <QTemporaryDir>

using namespace rankscope;
using namespace rankscope::remote;
using namespace rankscope::test;

namespace {

const QString kCli = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli");

const CheckVerdict* findVerdict(const NodeCheck& node, const QString& item) {
    for (const CheckVerdict& verdict : node.verdicts)
        if (verdict.item == item)
            return &verdict;
    return nullptr;
}

QByteArray describe(const NodeCheck& node) {
    QString text = QStringLiteral("%1 (%2): %3").arg(node.name, node.host, node.errorMessage);
    for (const CheckVerdict& verdict : node.verdicts)
        text += QStringLiteral("\n  %1 %2 %3").arg(verdictLevelName(verdict.level), verdict.item, verdict.message);
    return text.toUtf8();
}

ClusterCheckResult check(const JobSpec& job, RunMode mode, const ConnectionOptions& options) {
    ClusterCheck checker(options);
    QSignalSpy finished(&checker, &ClusterCheck::finished);
    QString error;
    if (!checker.start(job, mode, &error)) {
        qWarning("check did not start: %s", qPrintable(error));
        return {};
    }
    if (finished.isEmpty() && !finished.wait(90000))
        qWarning("check did not finish within 90 s");
    return checker.result();
}

struct CliResult {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

CliResult runCli(const QStringList& arguments) {
    QProcess cli;
    cli.start(kCli, arguments);
    CliResult result;
    if (!cli.waitForFinished(90000)) {
        cli.kill();
        cli.waitForFinished();
    }
    result.exitCode = cli.exitStatus() == QProcess::NormalExit ? cli.exitCode() : -1;
    result.out = cli.readAllStandardOutput();
    result.err = cli.readAllStandardError();
    return result;
}

} // namespace

class tst_ClusterCheck final : public QObject {
    Q_OBJECT

private:
    QJsonObject loopbackNode(const QString& name, const QString& host, int port) const {
        QJsonObject json = m_sshd.nodeJson(name, m_dir.filePath(QStringLiteral("work dir/") + name));
        json.insert("host", host);
        json.insert("port", port);
        return json;
    }
    QJsonObject jobJson(const QJsonArray& nodes, int masterPort = 0) const {
        return QJsonObject{{"version", 1},     {"name", "check"},
                           {"mode", "submit"}, {"master_port", masterPort > 0 ? masterPort : freePort()},
                           {"nodes", nodes},   {"trainer", QJsonObject{{"backend", "gloo"}, {"device", "cpu"}}}};
    }
    ConnectionOptions options(const QString& knownHosts) const {
        ConnectionOptions o;
        o.knownHostsPath = knownHosts;
        o.sshConfigPath = QStringLiteral("none");
        o.connectTimeout = std::chrono::seconds(5);
        return o;
    }
    QString writeJob(const QString& fileName, const QJsonObject& json) const {
        const QString path = m_dir.filePath(fileName);
        QFile file(path);
        if (file.open(QIODevice::WriteOnly))
            file.write(QJsonDocument(json).toJson());
        return path;
    }
    // The two namespace nodes, built on first use and kept for the tests after.
    bool startNodes(QString* error) {
        if (m_nodes)
            return true;
        m_nodes = std::make_unique<NetnsFixture>();
        if (m_nodes->start(2, error))
            return true;
        m_nodes.reset();
        return false;
    }
    QJsonObject netnsJob(int masterPort) const {
        QJsonArray nodes;
        for (int i = 0; i < 2; ++i)
            nodes.append(m_nodes->nodeJson(i, QStringLiteral("node-%1").arg(QChar('a' + i)),
                                           m_dir.filePath(QStringLiteral("shared home/rankscope"))));
        return jobJson(nodes, masterPort);
    }

    SshdFixture m_sshd;
    QTemporaryDir m_dir;
    std::unique_ptr<NetnsFixture> m_nodes;

private slots:
    void initTestCase() {
        QString error;
        QVERIFY2(m_sshd.start(&error), qPrintable(error));
    }

    void cleanupTestCase() { m_nodes.reset(); }

    void reachableNodeReportsItsFacts() {
        const JobSpec job = jobFrom(jobJson({loopbackNode("loop", m_sshd.host(), m_sshd.port())}));
        const ClusterCheckResult result = check(job, RunMode::Submit, options(m_sshd.knownHostsPath()));
        QCOMPARE(result.nodes.size(), 1);
        const NodeCheck& node = result.nodes.front();
        QVERIFY2(node.reachable, describe(node));
        QVERIFY(node.master);
        QVERIFY(node.report.complete);
        QProcess uname;
        uname.start(QStringLiteral("uname"), {QStringLiteral("-m")});
        QVERIFY(uname.waitForFinished());
        QCOMPARE(node.report.arch, QString::fromUtf8(uname.readAllStandardOutput().trimmed()));
        QVERIFY(node.report.diskFreeKb > 0);
        QVERIFY(node.report.workdir.endsWith(QLatin1String("work dir/loop")));
        QVERIFY2(std::any_of(node.report.torch.cbegin(), node.report.torch.cend(),
                             [](const TorchInstall& torch) { return torch.hasConfig; }),
                 describe(node));
        QCOMPARE(node.report.listenPort, job.masterPort);
        QVERIFY(node.fingerprint.startsWith(QLatin1String("SHA256:")));
        QVERIFY(findVerdict(node, QStringLiteral("master-port")));
        QCOMPARE(findVerdict(node, QStringLiteral("master-port"))->level, VerdictLevel::Ok);
        QCOMPARE(node.report.connectResult, QStringLiteral("refused"));
        QVERIFY2(node.level() == VerdictLevel::Ok, describe(node));
        QVERIFY(result.ok());
    }

    void localDebugNodeNeedsNoSsh() {
        QJsonObject json = jobJson({});
        json.remove(QStringLiteral("nodes"));
        json.insert(QStringLiteral("mode"), QStringLiteral("debug"));
        // Empty options: no known_hosts at all, so an SSH attempt would fail.
        const ClusterCheckResult result = check(jobFrom(json), RunMode::Debug, options(m_dir.filePath("none")));
        QCOMPARE(result.nodes.size(), 1);
        const NodeCheck& node = result.nodes.front();
        QVERIFY(node.local);
        QCOMPARE(node.name, QStringLiteral("local"));
        QVERIFY2(node.reachable, describe(node));
        QVERIFY(node.fingerprint.isEmpty());
        QCOMPARE(result.masterAddress, QStringLiteral("127.0.0.1"));
        QVERIFY2(node.level() != VerdictLevel::Fail, describe(node));
    }

    void connectFailureNamesTheCause_data() {
        QTest::addColumn<QString>("host");
        QTest::addColumn<int>("port");
        QTest::addColumn<QString>("knownHosts"); // "fixture", "empty" or "changed"
        QTest::addColumn<QString>("kind");
        QTest::newRow("unknown host key") << m_sshd.host() << m_sshd.port() << "empty"
                                          << "host-key-unknown";
        QTest::newRow("changed host key") << m_sshd.host() << m_sshd.port() << "changed"
                                          << "host-key-changed";
        QTest::newRow("dns") << "no-such-node.invalid" << 22 << "fixture"
                             << "dns";
        QTest::newRow("refused") << "127.0.0.1" << freePort() << "fixture"
                                 << "refused";
    }

    void connectFailureNamesTheCause() {
        QFETCH(QString, host);
        QFETCH(int, port);
        QFETCH(QString, knownHosts);
        QFETCH(QString, kind);
        QString knownHostsPath = m_sshd.knownHostsPath();
        if (knownHosts != QLatin1String("fixture")) {
            knownHostsPath = m_dir.filePath(QStringLiteral("known_hosts_") + knownHosts);
            QFile::remove(knownHostsPath);
            if (knownHosts == QLatin1String("changed"))
                QVERIFY(m_sshd.writeKnownHosts(knownHostsPath, false));
        }
        const JobSpec job = jobFrom(jobJson({loopbackNode("target", host, port)}));
        const ClusterCheckResult result = check(job, RunMode::Submit, options(knownHostsPath));
        QCOMPARE(result.nodes.size(), 1);
        const NodeCheck& node = result.nodes.front();
        QVERIFY(!node.reachable);
        QVERIFY(node.errorKind.has_value());
        QCOMPARE(transportErrorKindName(*node.errorKind), kind);
        QCOMPARE(node.level(), VerdictLevel::Fail);
        QVERIFY(!result.ok());
        const CheckVerdict* connect = findVerdict(node, QStringLiteral("connect"));
        QVERIFY(connect);
        QVERIFY2(connect->message.contains(host), qPrintable(connect->message));
        QVERIFY(!connect->fix.isEmpty());
        if (kind.startsWith(QLatin1String("host-key"))) {
            QVERIFY2(node.fingerprint.startsWith(QLatin1String("SHA256:")), describe(node));
            QVERIFY2(node.errorMessage.contains(node.fingerprint), describe(node));
        }
        if (kind == QLatin1String("host-key-unknown"))
            QVERIFY2(connect->fix.contains(node.fingerprint), qPrintable(connect->fix));
    }

    // The job's side of the GPU verdict, as the check takes it from the plan: the node's "gpus". This machine has
    // no GPU.
    void theNodesGpusInTheJobReachTheVerdict() {
        QJsonObject node = loopbackNode("loop", m_sshd.host(), m_sshd.port());
        node.insert("gpus", 2);
        const ClusterCheckResult result =
            check(jobFrom(jobJson({node})), RunMode::Submit, options(m_sshd.knownHostsPath()));
        QCOMPARE(result.nodes.size(), 1);
        const CheckVerdict* gpus = findVerdict(result.nodes[0], QStringLiteral("gpus"));
        QVERIFY2(gpus, describe(result.nodes[0]));
        QCOMPARE(gpus->level, VerdictLevel::Fail);
        // nvidia-smi missing or found without GPUs, two messages; both name the job's 2.
        QVERIFY2(gpus->message.contains(QLatin1String("2 GPU(s)")) ||
                     gpus->message.contains(QLatin1String("asks for 2")),
                 qPrintable(gpus->message));
    }

    void nodesAreCheckedSideBySide() {
        const JobSpec job = jobFrom(jobJson({loopbackNode("good", m_sshd.host(), m_sshd.port()),
                                             loopbackNode("typo", "no-such-node.invalid", 22),
                                             loopbackNode("down", "127.0.0.1", freePort())}));
        const ClusterCheckResult result = check(job, RunMode::Submit, options(m_sshd.knownHostsPath()));
        QCOMPARE(result.nodes.size(), 3);
        QCOMPARE(result.nodes[0].name, QStringLiteral("good"));
        QVERIFY2(result.nodes[0].reachable, describe(result.nodes[0]));
        QCOMPARE(transportErrorKindName(result.nodes[1].errorKind.value()), QStringLiteral("dns"));
        QCOMPARE(transportErrorKindName(result.nodes[2].errorKind.value()), QStringLiteral("refused"));
        QVERIFY(!result.ok());
    }

    void oneCheckAtATime() {
        const JobSpec job = jobFrom(jobJson({loopbackNode("loop", m_sshd.host(), m_sshd.port())}));
        ClusterCheck checker(options(m_sshd.knownHostsPath()));
        QSignalSpy finished(&checker, &ClusterCheck::finished);
        QString error;
        QVERIFY2(checker.start(job, RunMode::Submit, &error), qPrintable(error));
        QVERIFY(!checker.start(job, RunMode::Submit, &error));
        QCOMPARE(error, QStringLiteral("a check is already running"));
        QVERIFY(finished.wait(90000));
        QCOMPARE(checker.result().nodes.size(), 1);
        QVERIFY2(checker.start(job, RunMode::Submit, &error), qPrintable(error)); // and again once it is done
        QVERIFY(finished.wait(90000));
    }

    // The verdicts from recorded facts: a healthy remote node that builds the trainer, changed in the ways a row
    // names (comma-separated). level -1: the node gets no verdict on that item. A text ending in '$' must end the
    // message; any other is looked for in it.
    void verdictsFromReports_data() {
        QTest::addColumn<QString>("changes");
        QTest::addColumn<QString>("item");
        QTest::addColumn<int>("level");
        QTest::addColumn<QString>("text");
        const int fail = static_cast<int>(VerdictLevel::Fail);
        const int warn = static_cast<int>(VerdictLevel::Warn);
        const int ok = static_cast<int>(VerdictLevel::Ok);
        const int none = -1;
        const auto row = [](const char* name, const char* changes, const char* item, int level, const char* text) {
            QTest::newRow(name) << QString::fromUtf8(changes) << QString::fromUtf8(item) << level
                                << QString::fromUtf8(text);
        };
        row("healthy", "", "rendezvous", ok, "node-b reaches 10.0.0.1:29500 (refused");
        row("ipv6 master", "ipv6", "rendezvous", ok, "node-b reaches [fd00::1]:29500 (refused");
        row("system", "", "system", ok, "Debian, x86_64, kernel 6.1$");
        row("workdir to create", "", "workdir", ok, "work directory /x/rankscope will be created in /x$");
        row("workdir there", "exists", "workdir", ok, "work directory /x/rankscope is writable$");
        row("read-only", "readonly", "workdir", fail, "cannot create or write its work directory");
        // 50,000,000 KiB: 51.2 GB (10^9 bytes), in the directory whose free space was taken.
        row("disk", "", "disk", ok, "disk: 51.2 GB free in /x$");
        row("disk unknown", "disk-unknown", "disk", warn, "cannot tell the free disk space in /x on node-b");
        row("disk tiny", "disk-tiny", "disk", fail, "disk: 0.1 GB free in /x: too little for a run's files");
        row("low disk", "disk", "disk", fail, "disk: 0.4 GB free in /x, the trainer build needs about 2.0 GB");
        row("low disk, binary", "disk,binary", "disk", ok, "disk: 0.4 GB free in /x$");
        row("low disk, local", "disk,auto,local", "disk", ok, "disk: 0.4 GB free in /x$");
        row("low disk, auto, this platform", "disk,auto,same-platform", "disk", warn, "the trainer build needs");
        row("low disk, auto, another platform", "disk,auto", "disk", fail, "the trainer build needs");
        row("gpus", "", "gpus", ok, "2 GPU(s) on node-b, the job uses 2: GPU 0: A100$");
        row("few gpus", "gpus", "gpus", fail, "node-b has 1 GPU(s), the job asks for 2");
        row("no nvidia-smi", "smi-missing", "gpus", fail, "the job gives node-b 2 GPU(s), but nvidia-smi is not");
        row("no nvidia-smi, cpu job", "smi-missing,cpu", "gpus", ok, "no GPU on node-b; the job trains on CPU$");
        row("nvidia-smi fails", "smi-error", "gpus", fail, "nvidia-smi -L fails on node-b: NVIDIA-SMI has failed");
        row("nvidia-smi fails, cpu job", "smi-error,cpu", "gpus", warn, "nvidia-smi -L fails on node-b");
        row("nvidia-smi fails, cuda", "smi-error,cpu,cuda", "gpus", fail, "nvidia-smi -L fails on node-b");
        row("cuda without gpu", "cpu,cuda", "gpus", fail, "the trainer uses CUDA or NCCL, but node-b has no GPU");
        row("torch", "", "torch", ok, "LibTorch 2.1.0 at /usr/lib/x86_64-linux-gnu/cmake/Torch (system)$");
        row("torch version unknown", "torch-unversioned", "torch", ok, "LibTorch (version unknown) at");
        row("no torch", "torch", "torch", fail, "no LibTorch found on node-b");
        row("no torch, binary", "torch,binary", "torch", fail, "no LibTorch found on node-b");
        row("no torch, local", "torch,auto,local", "torch", warn, "no LibTorch found on node-b");
        row("torch without cmake files", "torch-pip", "torch", fail,
            "torch 2.2.0 from python3 on node-b has no CMake files (/p/share/cmake/Torch)");
        row("build tools", "", "build-tools", ok, "cmake 3.25.1, g++ 12$");
        row("no cmake", "cmake", "build-tools", fail, "node-b may have to build the trainer but has no cmake$");
        row("cmake fails", "cmake-error", "build-tools", fail,
            "node-b may have to build the trainer but has no cmake$");
        row("no compiler", "cxx-missing", "build-tools", fail, "the trainer but has no C++ compiler$");
        row("neither", "cmake,cxx", "build-tools", fail, "the trainer but has no cmake and no C++ compiler$");
        row("neither, auto, this platform", "cmake,cxx,auto,same-platform", "build-tools", warn, "has no cmake");
        row("binary: no build", "cmake,binary", "build-tools", none, "");
        row("master port free", "master", "master-port", ok, "master port 29500 is free on node-b");
        row("master port taken", "master,taken", "master-port", fail, "master port 29500 already in use on node-b");
        row("master port unknown", "master,port-unknown", "master-port", warn, "cannot tell whether master port");
        row("not the master", "", "master-port", none, "");
        row("rendezvous not asked", "not-asked", "rendezvous", none, "");
        row("timeout", "timeout", "rendezvous", fail, "node-b cannot reach 10.0.0.1:29500 (timeout: timed out)");
        row("unreachable", "unreachable", "rendezvous", fail, "cannot reach 10.0.0.1:29500 (unreachable: unreachable)");
        row("open", "open", "rendezvous", fail, "something already listens there");
        row("unresolved", "unresolved", "rendezvous", fail, "node-b cannot resolve the master address 10.0.0.1");
        row("untested", "untested", "rendezvous", warn, "node-b could not test 10.0.0.1:29500: no timeout");
        row("ifname", "", "socket-ifname", ok, "NCCL_SOCKET_IFNAME: suggest eth0");
        row("one node", "one-node", "socket-ifname", ok, "one node: its ranks meet on it");
        row("master on lo", "lo", "socket-ifname", warn, "suggest lo on node-b, but lo is the loopback");
        row("no interface", "no-interface", "socket-ifname", warn, "no interface to suggest on node-b: no interface");
        row("probe warning", "warning", "probe", warn, "node-b: --workdir is a file$");
        row("probe cut off", "cut-off", "probe", fail, "the probe gave no complete report on node-b: its output was");
        row("probe cut off, judged", "cut-off", "disk", ok, "disk: 51.2 GB free in /x$");
        row("probe failed", "probe-error", "probe", fail, "no complete report on node-b: exit status 127");
        row("probe failed, not judged", "probe-error", "disk", none, "");
    }

    void verdictsFromReports() {
        QFETCH(QString, changes);
        QFETCH(QString, item);
        QFETCH(int, level);
        QFETCH(QString, text);
        const QStringList change = changes.split(QLatin1Char(','), Qt::SkipEmptyParts);
        NodeCheck node;
        node.name = QStringLiteral("node-b");
        node.host = QStringLiteral("10.0.0.2");
        node.reachable = true;
        ProbeReport& r = node.report;
        r = parseProbeOutput(
            "@@rankscope-probe-begin v1\nos=Debian\narch=x86_64\nkernel=6.1\nos_id=debian\n"
            "os_version=12\nworkdir=/x/rankscope\nworkdir_tested=/x\nworkdir_exists=no\n"
            "workdir_writable=yes\ndisk_free_kb=50000000\nnvidia_smi=ok\ngpu=GPU 0: A100 (UUID: GPU-1)\n"
            "gpu=GPU 1: A100 (UUID: GPU-2)\ncmake=3.25.1\ncxx=g++ 12\n"
            "torch=system|2.1.0|yes|/usr/lib/x86_64-linux-gnu/cmake/Torch\n"
            "iface=lo 127.0.0.1/8 up\niface=eth0 10.0.0.2/24 up\n"
            "connect=10.0.0.1:29500 refused\nconnect_detail=Connection refused\n"
            "@@rankscope-probe-end\n");
        QVERIFY(r.complete);
        CheckContext context;
        context.deploy = DeployStrategy::Build;
        context.masterAddress = QStringLiteral("10.0.0.1");
        context.masterPort = 29500;
        context.nodeCount = 2;
        context.gpus = 2;
        context.localPlatform = QStringLiteral("aarch64 debian 12");
        const QHash<QString, std::function<void()>> apply{
            {"ipv6", [&] { context.masterAddress = QStringLiteral("fd00::1"); }},
            {"exists", [&] { r.workdirExists = true; }},
            {"readonly", [&] { r.workdirWritable = false; }},
            {"disk", [&] { r.diskFreeKb = 400'000; }},
            {"disk-unknown", [&] { r.diskFreeKb = -1; }},
            {"disk-tiny", [&] { r.diskFreeKb = 100'000; }},
            {"binary", [&] { context.deploy = DeployStrategy::Binary; }},
            {"auto", [&] { context.deploy = DeployStrategy::Auto; }},
            {"local", [&] { node.local = true; }},
            {"same-platform", [&] { context.localPlatform = QStringLiteral("x86_64 debian 12"); }},
            {"gpus", [&] { r.gpus.removeLast(); }},
            {"smi-missing", [&] { r.nvidiaSmi = QStringLiteral("missing"), r.gpus.clear(); }},
            {"smi-error",
             [&] {
                 r.nvidiaSmi = QStringLiteral("error");
                 r.nvidiaSmiDetail = QStringLiteral("NVIDIA-SMI has failed (exit 9)");
                 r.gpus.clear();
             }},
            {"cpu", [&] { context.gpus = 0, r.gpus.clear(); }},
            {"cuda", [&] { context.wantsCuda = true; }},
            {"torch", [&] { r.torch.clear(); }},
            {"torch-unversioned", [&] { r.torch.front().version.clear(); }},
            {"torch-pip",
             [&] {
                 r.torch = {TorchInstall{"/p/share/cmake/Torch", "python3", "2.2.0", false}};
             }},
            {"cmake", [&] { r.cmake = QStringLiteral("missing"); }},
            {"cmake-error", [&] { r.cmake = QStringLiteral("error"); }},
            {"cxx", [&] { r.cxx = QStringLiteral("error"); }},
            {"cxx-missing", [&] { r.cxx = QStringLiteral("missing"); }},
            {"master", [&] { node.master = true, r.listenPortInUse = QStringLiteral("no"); }},
            {"taken", [&] { r.listenPortInUse = QStringLiteral("yes"); }},
            {"port-unknown", [&] { r.listenPortInUse = QStringLiteral("unknown"); }},
            {"not-asked", [&] { r.connectHost.clear(); }},
            {"timeout", [&] { r.connectResult = QStringLiteral("timeout"), r.connectDetail = "timed out"; }},
            {"unreachable", [&] { r.connectResult = QStringLiteral("unreachable"), r.connectDetail.clear(); }},
            {"open", [&] { r.connectResult = QStringLiteral("open"); }},
            {"unresolved", [&] { r.connectResult = QStringLiteral("unresolved"); }},
            {"untested", [&] { r.connectResult = QStringLiteral("unknown"), r.connectDetail = "no timeout"; }},
            {"one-node", [&] { context.nodeCount = 1; }},
            {"lo", [&] { context.masterAddress = QStringLiteral("127.0.0.1"); }},
            {"no-interface", [&] { r.interfaces.clear(); }},
            {"warning", [&] { r.warnings = QStringList{QStringLiteral("--workdir is a file")}; }},
            {"cut-off", [&] { r.complete = false; }},
            {"probe-error",
             [&] {
                 r = ProbeReport();
                 node.errorKind = TransportErrorKind::Protocol;
                 node.errorMessage = QStringLiteral("exit status 127, sh: not found");
             }},
        };
        for (const QString& name : change) {
            QVERIFY2(apply.contains(name), qPrintable(name));
            apply[name]();
        }
        node.verdicts = judgeNode(node, context);
        const CheckVerdict* verdict = findVerdict(node, item);
        if (level < 0) {
            QVERIFY2(!verdict, describe(node));
            return;
        }
        QVERIFY2(verdict, describe(node));
        QCOMPARE(static_cast<int>(verdict->level), level);
        const bool whole = text.endsWith(QLatin1Char('$'));
        QVERIFY2(whole ? verdict->message.endsWith(text.chopped(1)) : verdict->message.contains(text),
                 qPrintable(verdict->message));
        // Every warning and failure says what to do, but the probe's own warnings, which are their own text.
        QVERIFY(verdict->level == VerdictLevel::Ok || !verdict->fix.isEmpty() || item == QLatin1String("probe"));
        if (change.isEmpty())
            QVERIFY2(node.level() == VerdictLevel::Ok, describe(node));
    }

    // Why a node was not reached, in its verdict: the host and port as the job has them, and what to do.
    void connectVerdictsSayWhatToDo_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("fingerprint");
        QTest::addColumn<QString>("fix");
        const auto row = [](const char* name, TransportErrorKind kind, const char* fingerprint, const char* fix) {
            QTest::newRow(name) << static_cast<int>(kind) << QString::fromUtf8(fingerprint) << QString::fromUtf8(fix);
        };
        row("dns", TransportErrorKind::Dns, "", "check the host name of gpu-7 in the job file");
        row("refused", TransportErrorKind::Refused, "", "nothing listens on the SSH port of gpu7.lab");
        row("unreachable", TransportErrorKind::Unreachable, "", "check that gpu7.lab is up");
        row("unknown key", TransportErrorKind::HostKeyUnknown, "SHA256:abc", "compare SHA256:abc with the key on");
        row("unknown key, no fingerprint", TransportErrorKind::HostKeyUnknown, "", "compare the fingerprint with");
        row("changed key", TransportErrorKind::HostKeyChanged, "SHA256:abc", "ssh-keygen -R gpu7.lab");
        row("auth", TransportErrorKind::Auth, "", "check \"user\" and \"identity_file\" of gpu-7");
        row("other", TransportErrorKind::Protocol, "", "log in by hand (ssh gpu7.lab)");
    }

    void connectVerdictsSayWhatToDo() {
        QFETCH(int, kind);
        QFETCH(QString, fingerprint);
        QFETCH(QString, fix);
        NodeCheck node;
        node.name = QStringLiteral("gpu-7");
        node.host = QStringLiteral("gpu7.lab");
        node.port = 2222;
        node.errorKind = static_cast<TransportErrorKind>(kind);
        node.errorMessage = QStringLiteral("it went wrong");
        node.fingerprint = fingerprint;
        node.verdicts = judgeNode(node, CheckContext());
        QCOMPARE(node.verdicts.size(), 1);
        const CheckVerdict& verdict = node.verdicts.front();
        QCOMPARE(verdict.item, QStringLiteral("connect"));
        QCOMPARE(verdict.level, VerdictLevel::Fail);
        QCOMPARE(verdict.message, QStringLiteral("gpu-7 (gpu7.lab:2222): it went wrong"));
        QVERIFY2(verdict.fix.contains(fix), qPrintable(verdict.fix));

        node.port = 0; // ssh config's or 22: the host alone
        QCOMPARE(judgeNode(node, CheckContext()).front().message, QStringLiteral("gpu-7 (gpu7.lab): it went wrong"));
        node.errorKind.reset(); // not reached, and no reason known: nothing to say
        QVERIFY(judgeNode(node, CheckContext()).isEmpty());
    }

    // A node's level is its worst verdict, its cause the first failure (else the first warning), and a run may
    // start with warnings.
    void nodeLevelIsItsWorstVerdict() {
        NodeCheck node;
        QCOMPARE(node.level(), VerdictLevel::Ok);
        QVERIFY(node.cause().isEmpty());
        node.verdicts = {{VerdictLevel::Ok, "system", "Debian", {}},
                         {VerdictLevel::Warn, "disk", "cannot tell", {}},
                         {VerdictLevel::Fail, "torch", "no LibTorch", "install it"},
                         {VerdictLevel::Warn, "gpus", "nvidia-smi fails", {}},
                         {VerdictLevel::Ok, "rendezvous", "reaches", {}}};
        QCOMPARE(node.level(), VerdictLevel::Fail);
        QCOMPARE(node.cause(), QStringLiteral("no LibTorch"));
        ClusterCheckResult result;
        result.nodes = {node};
        QVERIFY(!result.ok());
        result.nodes.front().verdicts.remove(2);
        QCOMPARE(result.nodes.front().level(), VerdictLevel::Warn);
        QCOMPARE(result.nodes.front().cause(), QStringLiteral("cannot tell"));
        QVERIFY(result.ok());
    }

    // What only the nodes together tell: a rendezvous refused because the master's own port is taken is the
    // master's failure (the others only warn), and LibTorch versions that differ.
    void clusterVerdictsCompareTheNodes() {
        const auto node = [](const char* name, bool master, const char* connect, const char* torch) {
            NodeCheck n;
            n.name = QString::fromUtf8(name);
            n.master = master;
            n.reachable = true;
            n.report.listenPortInUse = master ? QStringLiteral("yes") : QString();
            n.report.connectResult = QString::fromUtf8(connect);
            if (torch)
                n.report.torch = {TorchInstall{"/t", "system", QString::fromUtf8(torch), true}};
            n.verdicts = {{VerdictLevel::Fail, "rendezvous", QStringLiteral("%1 reaches it").arg(n.name), "stop it"}};
            return n;
        };
        ClusterCheckResult result;
        result.nodes = {node("node-a", true, "open", "2.1.0"), node("node-b", false, "open", "2.2.0"),
                        node("node-c", false, "timeout", "2.1.0"), node("node-d", false, "open", nullptr)};
        judgeCluster(result);
        const auto levels = [](const NodeCheck& n) {
            QStringList out;
            for (const CheckVerdict& v : n.verdicts)
                out << QStringLiteral("%1 %2: %3").arg(verdictLevelName(v.level), v.item, v.message);
            return out;
        };
        const QString differ = QStringLiteral("warn torch: LibTorch differs across nodes: node-a 2.1.0, "
                                              "node-b 2.2.0, node-c 2.1.0");
        // Its master-port verdict is the failure (not given here); a timeout is not explained by the taken port.
        QCOMPARE(levels(result.nodes[0]),
                 QStringList({"warn rendezvous: node-a reaches it (the master port is taken on node-a)", differ}));
        QCOMPARE(levels(result.nodes[1]),
                 QStringList({"warn rendezvous: node-b reaches it (the master port is taken on node-a)", differ}));
        QCOMPARE(levels(result.nodes[2]), QStringList({"fail rendezvous: node-c reaches it", differ}));
        // No LibTorch of its own: nothing to compare it by.
        QCOMPARE(levels(result.nodes[3]),
                 QStringList({"warn rendezvous: node-d reaches it (the master port is taken on node-a)"}));

        // A master that was not reached says nothing of its port; one version, or one unknown, is no difference.
        result.nodes = {node("node-a", true, "open", "2.1.0"), node("node-b", false, "open", "2.1.0"),
                        node("node-c", false, "open", "")};
        result.nodes[0].reachable = false;
        judgeCluster(result);
        QCOMPARE(levels(result.nodes[1]), QStringList({"fail rendezvous: node-b reaches it"}));
        QCOMPARE(levels(result.nodes[2]), QStringList({"fail rendezvous: node-c reaches it"}));
    }

    // The JSON of `check --json`: an error's kind ("probe" for a report cut off), its fingerprint, no report for
    // a node not reached.
    void nodeCheckAsJson() {
        NodeCheck node;
        node.name = QStringLiteral("gpu-7");
        node.host = QStringLiteral("gpu7.lab");
        node.reachable = true;
        node.errorMessage = QStringLiteral("exit status 1");
        QJsonObject json = nodeCheckToJson(node);
        QCOMPARE(json.value("error").toObject().value("kind").toString(), QStringLiteral("probe"));
        QCOMPARE(json.value("error").toObject().value("message").toString(), QStringLiteral("exit status 1"));
        QVERIFY(!json.value("error").toObject().contains("fingerprint"));
        QVERIFY(json.value("report").isObject());

        node.reachable = false;
        node.errorKind = TransportErrorKind::HostKeyChanged;
        node.fingerprint = QStringLiteral("SHA256:abc");
        json = nodeCheckToJson(node);
        QCOMPARE(json.value("error").toObject().value("kind").toString(), QStringLiteral("host-key-changed"));
        QCOMPARE(json.value("error").toObject().value("fingerprint").toString(), QStringLiteral("SHA256:abc"));
        QVERIFY(json.value("report").isNull());

        node = NodeCheck();
        node.reachable = true;
        QVERIFY(nodeCheckToJson(node).value("error").isNull());
    }

    void masterPortIsReachableFromTheOtherNode() {
        if (const QString reason = NetnsFixture::skipReason(); !reason.isEmpty())
            QSKIP(qPrintable(reason));
        QString error;
        QVERIFY2(startNodes(&error), qPrintable(error));
        const int masterPort = freePort();
        const ClusterCheckResult result =
            check(jobFrom(netnsJob(masterPort)), RunMode::Submit, options(m_nodes->knownHostsPath()));
        QCOMPARE(result.nodes.size(), 2);
        QCOMPARE(result.masterAddress, m_nodes->nodeAddress(0));
        const NodeCheck& master = result.nodes[0];
        const NodeCheck& other = result.nodes[1];
        QVERIFY2(master.reachable && other.reachable, describe(master) + describe(other));
        QCOMPARE(master.report.listenPortInUse, QStringLiteral("no"));
        QCOMPARE(master.report.connectResult, QStringLiteral("refused")); // its own ranks dial the address too
        QCOMPARE(other.report.connectHost, m_nodes->nodeAddress(0));
        QCOMPARE(other.report.connectPort, masterPort);
        // Refused is the good answer: the path works and the port is free.
        QCOMPARE(other.report.connectResult, QStringLiteral("refused"));
        QCOMPARE(findVerdict(other, QStringLiteral("rendezvous"))->level, VerdictLevel::Ok);
        const CheckVerdict* ifname = findVerdict(other, QStringLiteral("socket-ifname"));
        QVERIFY(ifname);
        QVERIFY2(ifname->message.contains(QLatin1String("suggest")), qPrintable(ifname->message));
        QVERIFY2(result.ok(), describe(master) + describe(other));
    }

    void masterPortInUseIsReported() {
        if (const QString reason = NetnsFixture::skipReason(); !reason.isEmpty())
            QSKIP(qPrintable(reason));
        QString error;
        QVERIFY2(startNodes(&error), qPrintable(error));
        const int masterPort = freePort();
        // Something else already listens on node 0's master port.
        QProcess listener;
        const QString ip = QStandardPaths::findExecutable(QStringLiteral("ip"), {"/usr/sbin", "/sbin", "/usr/bin"});
        listener.start(ip.isEmpty() ? QStringLiteral("ip") : ip,
                       {"netns", "exec", m_nodes->namespaceName(0), "/usr/bin/python3", "-c",
                        QStringLiteral("import socket, time\n"
                                       "s = socket.socket()\n"
                                       "s.bind(('0.0.0.0', %1))\n"
                                       "s.listen()\n"
                                       "print('listening', flush=True)\n"
                                       "time.sleep(120)\n")
                            .arg(masterPort)});
        const auto stopListener = qScopeGuard([&listener] {
            listener.kill();
            listener.waitForFinished();
        });
        QVERIFY2(listener.waitForReadyRead(10000), listener.readAllStandardError().constData());
        QVERIFY(listener.readAllStandardOutput().contains("listening"));

        const ClusterCheckResult result =
            check(jobFrom(netnsJob(masterPort)), RunMode::Submit, options(m_nodes->knownHostsPath()));
        QCOMPARE(result.nodes.size(), 2);
        const NodeCheck& master = result.nodes[0];
        const NodeCheck& other = result.nodes[1];
        QCOMPARE(master.report.listenPortInUse, QStringLiteral("yes"));
        const CheckVerdict* taken = findVerdict(master, QStringLiteral("master-port"));
        QVERIFY(taken);
        QCOMPARE(taken->level, VerdictLevel::Fail);
        QVERIFY2(taken->message.contains(QStringLiteral("master port %1 already in use on node-a").arg(masterPort)),
                 qPrintable(taken->message));
        QCOMPARE(other.report.connectResult, QStringLiteral("open"));
        QVERIFY(findVerdict(other, QStringLiteral("rendezvous"))->level != VerdictLevel::Ok);
        QVERIFY(!result.ok());
    }

    void cliReportsAsJsonWithItsExitStatus() {
        QVERIFY(QFileInfo(kCli).isExecutable());
        const QStringList connection = {QStringLiteral("--known-hosts"), m_sshd.knownHostsPath(),
                                        QStringLiteral("--ssh-config"), QStringLiteral("none")};
        const QString good =
            writeJob(QStringLiteral("good.json"), jobJson({loopbackNode("loop", m_sshd.host(), m_sshd.port())}));
        CliResult cli = runCli(QStringList{"check", good, "--json"} + connection);
        QVERIFY2(cli.exitCode == 0, cli.out + cli.err);
        QJsonParseError parseError;
        QJsonObject json = QJsonDocument::fromJson(cli.out, &parseError).object();
        QVERIFY2(parseError.error == QJsonParseError::NoError, cli.out.constData());
        QCOMPARE(json.value("ok").toBool(), true);
        QJsonObject node = json.value("nodes").toArray().at(0).toObject();
        QCOMPARE(node.value("name").toString(), QStringLiteral("loop"));
        QCOMPARE(node.value("host").toString(), m_sshd.host());
        QCOMPARE(node.value("reachable").toBool(), true);
        QVERIFY(node.value("error").isNull());
        QVERIFY(node.value("report").toObject().value("disk_free_kb").toInteger() > 0);
        QVERIFY(!node.value("verdicts").toArray().isEmpty());
        for (const QJsonValue verdict : node.value("verdicts").toArray())
            QVERIFY(verdict.toObject().contains("fix") && verdict.toObject().contains("item"));

        const QString bad =
            writeJob(QStringLiteral("bad.json"), jobJson({loopbackNode("loop", m_sshd.host(), m_sshd.port()),
                                                          loopbackNode("typo", "no-such-node.invalid", 22)}));
        cli = runCli(QStringList{"check", bad, "--json"} + connection);
        QVERIFY2(cli.exitCode == 1, cli.out + cli.err);
        json = QJsonDocument::fromJson(cli.out).object();
        QCOMPARE(json.value("ok").toBool(), false);
        node = json.value("nodes").toArray().at(1).toObject();
        QCOMPARE(node.value("reachable").toBool(), false);
        QCOMPARE(node.value("error").toObject().value("kind").toString(), QStringLiteral("dns"));
        QVERIFY(node.value("report").isNull());
        QCOMPARE(node.value("verdicts").toArray().at(0).toObject().value("level").toString(), QStringLiteral("fail"));

        // The table names the cause on the node's status line.
        cli = runCli(QStringList{"check", bad} + connection);
        QCOMPARE(cli.exitCode, 1);
        QVERIFY2(cli.out.contains("== typo (no-such-node.invalid:22): FAIL: dns: "), cli.out.constData());

        cli = runCli(QStringList{"check", good, "--mode", "sideways"} + connection);
        QCOMPARE(cli.exitCode, 2);
        const QString invalid = writeJob(QStringLiteral("invalid.json"),
                                         QJsonObject{{"version", 1}, {"nodes", QJsonArray{QJsonObject{{"port", 0}}}}});
        cli = runCli(QStringList{"check", invalid} + connection);
        QCOMPARE(cli.exitCode, 3);
        QVERIFY2(cli.err.contains("nodes[0]"), cli.err.constData());
    }
};

QTEST_GUILESS_MAIN(tst_ClusterCheck)
#include "tst_clustercheck.moc"
