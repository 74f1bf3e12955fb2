// SPDX-License-Identifier: MIT
// The pre-flight check against real servers: a private sshd on loopback for what one node reports and for
// every connection failure, two namespace nodes (as root) for the master port seen across a network, and
// rankscope-cli check end to end.
#include "enginetestutil.h"
#include "fixtures/netnsfixture.h"
#include "fixtures/sshdfixture.h"
#include "remote/clustercheck.h"

#include <QProcess>
#include <QRandomGenerator>
#include <QScopeGuard>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace rankscope;
using namespace rankscope::remote;
using namespace rankscope::test;

namespace {

const QString kCli = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli");

// A loopback port nothing listens on: bound by the kernel's choice, then released.
int closedPort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    return ntohs(address.sin_port);
}

int randomPort() {
    return 20000 + QRandomGenerator::global()->bounded(20000);
}

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
                           {"mode", "submit"}, {"master_port", masterPort > 0 ? masterPort : randomPort()},
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
        QTest::newRow("refused") << "127.0.0.1" << closedPort() << "fixture"
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

    void nodesAreCheckedSideBySide() {
        const JobSpec job = jobFrom(jobJson({loopbackNode("good", m_sshd.host(), m_sshd.port()),
                                             loopbackNode("typo", "no-such-node.invalid", 22),
                                             loopbackNode("down", "127.0.0.1", closedPort())}));
        const ClusterCheckResult result = check(job, RunMode::Submit, options(m_sshd.knownHostsPath()));
        QCOMPARE(result.nodes.size(), 3);
        QCOMPARE(result.nodes[0].name, QStringLiteral("good"));
        QVERIFY2(result.nodes[0].reachable, describe(result.nodes[0]));
        QCOMPARE(transportErrorKindName(result.nodes[1].errorKind.value()), QStringLiteral("dns"));
        QCOMPARE(transportErrorKindName(result.nodes[2].errorKind.value()), QStringLiteral("refused"));
        QVERIFY(!result.ok());
    }

    // The verdicts from recorded facts: a healthy remote node, changed in one way per row.
    void verdictsFromReports_data() {
        QTest::addColumn<QString>("change");
        QTest::addColumn<QString>("item");
        QTest::addColumn<int>("level");
        QTest::addColumn<QString>("text");
        const int fail = static_cast<int>(VerdictLevel::Fail);
        const int warn = static_cast<int>(VerdictLevel::Warn);
        const int ok = static_cast<int>(VerdictLevel::Ok);
        QTest::newRow("healthy") << "none"
                                 << "rendezvous" << ok << "node-b reaches 10.0.0.1:29500 (refused";
        QTest::newRow("low disk") << "disk"
                                  << "disk" << fail << "disk: 0.4 GB free in /x, the trainer build needs about 2.0 GB";
        QTest::newRow("timeout") << "timeout"
                                 << "rendezvous" << fail << "node-b cannot reach 10.0.0.1:29500 (timeout";
        QTest::newRow("open") << "open"
                              << "rendezvous" << fail << "something already listens there";
        QTest::newRow("few gpus") << "gpus"
                                  << "gpus" << fail << "node-b has 1 GPU(s), the job asks for 2";
        QTest::newRow("no torch") << "torch"
                                  << "torch" << fail << "no LibTorch found on node-b";
        QTest::newRow("read-only") << "readonly"
                                   << "workdir" << fail << "cannot create or write its work directory";
        QTest::newRow("lo only") << "lo"
                                 << "socket-ifname" << warn << "loopback";
        QTest::newRow("ifname") << "none"
                                << "socket-ifname" << ok << "NCCL_SOCKET_IFNAME: suggest eth0";
    }

    void verdictsFromReports() {
        QFETCH(QString, change);
        QFETCH(QString, item);
        QFETCH(int, level);
        QFETCH(QString, text);
        NodeCheck node;
        node.name = QStringLiteral("node-b");
        node.host = QStringLiteral("10.0.0.2");
        node.reachable = true;
        ProbeReport& r = node.report;
        r = parseProbeOutput("@@rankscope-probe-begin v1\nos=Debian\narch=x86_64\nos_id=debian\nos_version=12\n"
                             "workdir=/x/rankscope\nworkdir_tested=/x\nworkdir_exists=no\nworkdir_writable=yes\n"
                             "disk_free_kb=50000000\nnvidia_smi=ok\ngpu=GPU 0: A100 (UUID: GPU-1)\n"
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
        if (change == QLatin1String("disk"))
            r.diskFreeKb = 400'000;
        else if (change == QLatin1String("timeout"))
            r.connectResult = QStringLiteral("timeout");
        else if (change == QLatin1String("open"))
            r.connectResult = QStringLiteral("open");
        else if (change == QLatin1String("gpus"))
            r.gpus.removeLast();
        else if (change == QLatin1String("torch"))
            r.torch.clear();
        else if (change == QLatin1String("readonly"))
            r.workdirWritable = false;
        else if (change == QLatin1String("lo"))
            r.interfaces.removeLast();
        node.verdicts = judgeNode(node, context);
        const CheckVerdict* verdict = findVerdict(node, item);
        QVERIFY2(verdict, describe(node));
        QCOMPARE(static_cast<int>(verdict->level), level);
        QVERIFY2(verdict->message.contains(text), qPrintable(verdict->message));
        QVERIFY(verdict->level == VerdictLevel::Ok || !verdict->fix.isEmpty());
        QCOMPARE(node.level() == VerdictLevel::Ok, change == QLatin1String("none"));
    }

    void masterPortIsReachableFromTheOtherNode() {
        if (const QString reason = NetnsFixture::skipReason(); !reason.isEmpty())
            QSKIP(qPrintable(reason));
        QString error;
        QVERIFY2(startNodes(&error), qPrintable(error));
        const int masterPort = randomPort();
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
        const int masterPort = randomPort();
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
