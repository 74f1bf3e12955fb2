// SPDX-License-Identifier: MIT
// The probe's parser on recorded outputs, the NCCL_SOCKET_IFNAME advice, and the real probe.sh run on this
// machine the way the SSH side runs it: `/bin/sh -s -- ARGS` with the script on stdin.
#include "core/preflight.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

using rankscope::NetInterface;
using rankscope::ProbeReport;

namespace {

// A GPU node as the probe reports it, one line per key.
const QByteArray kRecorded =
    "@@rankscope-probe-begin v1\n"
    "os=Ubuntu 22.04.4 LTS\n"
    "os_id=ubuntu\n"
    "os_version=22.04\n"
    "arch=x86_64\n"
    "kernel=5.15.0-105-generic\n"
    "hostname=gpu-node-07\n"
    "user=alice\n"
    "home=/home/alice\n"
    "workdir=/scratch/alice/rankscope\n"
    "workdir_exists=no\n"
    "workdir_tested=/scratch/alice\n"
    "workdir_writable=yes\n"
    "disk_free_kb=1876543210\n"
    "cmake=3.22.1\n"
    "cxx=c++ (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\n"
    "iface=lo 127.0.0.1/8 up\n"
    "iface=eno1 10.1.2.7/24 up\n"
    "iface=docker0 172.17.0.1/16 down\n"
    "iface=ib0 fd00:0:0:50:0:0:0:7/64 up\n"
    "listen_port=29500\n"
    "listen_port_in_use=no\n"
    "nvidia_smi=ok\n"
    "gpu=GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5f3c0c1e)\n"
    "gpu=GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-8d2a7b44)\n"
    "torch=Torch_DIR|2.5.1|yes|/opt/libtorch/share/cmake/Torch\n"
    "torch=/usr/bin/python3|1.13.0a0|no|/usr/lib/python3/dist-packages/torch/share/cmake/Torch\n"
    "connect=10.1.2.1:29500 refused\n"
    "connect_detail=Connection refused\n"
    "warning=ignored argument: --verbose\n"
    "future_key=42\n"
    "@@rankscope-probe-end\n";

QByteArray jsonText(const ProbeReport& report) {
    return QJsonDocument(rankscope::probeReportToJson(report)).toJson(QJsonDocument::Compact);
}

ProbeReport parseLines(const QStringList& lines) {
    QByteArray output = "@@rankscope-probe-begin v1\n";
    for (const QString& line : lines)
        output += line.toUtf8() + '\n';
    return rankscope::parseProbeOutput(output + "@@rankscope-probe-end\n");
}

// ---- Running the real script.

struct ProbeRun {
    bool finished = false;
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
    ProbeReport report;
};

enum class Stdin { Closed, LeftOpen };

// program gets the script on stdin, as it would through SSH. An SSH channel may never send end-of-file:
// Stdin::LeftOpen checks that the probe neither waits for it nor lets a command read it.
ProbeRun runProbe(const QString& program, const QStringList& arguments,
                  const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment(),
                  Stdin stdinMode = Stdin::Closed) {
    QFile script(QStringLiteral(RANKSCOPE_PROBE_SCRIPT));
    ProbeRun run;
    if (!script.open(QIODevice::ReadOnly))
        return run;
    QProcess process;
    process.setProcessEnvironment(environment);
    process.start(program, arguments);
    process.write(script.readAll());
    if (stdinMode == Stdin::Closed)
        process.closeWriteChannel();
    run.finished = process.waitForFinished(30000) && process.exitStatus() == QProcess::NormalExit;
    if (!run.finished)
        process.kill();
    run.exitCode = process.exitCode();
    run.out = process.readAllStandardOutput();
    run.err = process.readAllStandardError();
    run.report = rankscope::parseProbeOutput(run.out);
    return run;
}

ProbeRun runShProbe(const QStringList& probeArguments,
                    const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment(),
                    Stdin stdinMode = Stdin::Closed) {
    return runProbe(QStringLiteral("/bin/sh"), QStringList{QStringLiteral("-s"), QStringLiteral("--")} + probeArguments,
                    environment, stdinMode);
}

#define VERIFY_RUN(run)                                                                                                \
    do {                                                                                                               \
        QVERIFY2((run).finished, (run).err.constData());                                                               \
        QCOMPARE((run).exitCode, 0);                                                                                   \
        QVERIFY2((run).report.complete, (run).out.constData());                                                        \
    } while (false)

// A run's interfaces, one "name address/prefix up" line each.
QStringList interfaceKeys(const ProbeRun& run) {
    QStringList keys;
    for (const NetInterface& i : run.report.interfaces)
        keys << QStringLiteral("%1 %2/%3 %4").arg(i.name, i.address).arg(i.prefixLength).arg(i.up);
    return keys;
}

// Interfaces come and go while a probe runs (containers, or a namespace test beside this one), so a probe's
// interfaces are checked against ip(8)'s view just before and just after it: each one it saw, by a name either
// of those saw, must be as one of them saw it (an interface neither saw came and went between them); what both
// saw must be in it (`stable`: every such entry, or only those it selects). Empty when so, else what was wrong.
QString interfacesBetween(const ProbeRun& probe, const ProbeRun& before, const ProbeRun& after,
                          const std::function<bool(const QString&)>& stable = {}) {
    const QStringList seen = interfaceKeys(probe);
    const QStringList either = interfaceKeys(before) + interfaceKeys(after);
    if (!seen.contains(QStringLiteral("lo 127.0.0.1/8 1")))
        return QStringLiteral("no loopback in:\n") + QString::fromUtf8(probe.out);
    for (const QString& entry : seen) {
        const QString name = entry.section(QLatin1Char(' '), 0, 0) + QLatin1Char(' ');
        const bool named =
            std::any_of(either.cbegin(), either.cend(), [&](const QString& e) { return e.startsWith(name); });
        if (named && !either.contains(entry))
            return entry + QStringLiteral(" seen by neither:\n") + either.join(QLatin1Char('\n'));
    }
    const QStringList last = interfaceKeys(after);
    for (const QString& entry : interfaceKeys(before))
        if (last.contains(entry) && (!stable || stable(entry)) && !seen.contains(entry))
            return entry + QStringLiteral(" missing from:\n") + seen.join(QLatin1Char('\n'));
    return {};
}

bool writeFile(const QString& path, const QByteArray& text, bool executable = false) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size())
        return false;
    file.close();
    return !executable || file.setPermissions(file.permissions() | QFileDevice::ExeOwner);
}

// A bin directory put first on PATH.
QProcessEnvironment withPathFirst(const QString& directory) {
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("PATH"),
                       directory + QLatin1Char(':') + environment.value(QStringLiteral("PATH")));
    return environment;
}

QString canonical(const QString& path) {
    return QFileInfo(path).canonicalFilePath();
}

const rankscope::TorchInstall* torchFrom(const ProbeReport& report, const QString& source) {
    for (const auto& install : report.torch) {
        if (install.source == source)
            return &install;
    }
    return nullptr;
}

// A TCP socket on 127.0.0.1 with a free port: bound only, connecting to it is refused; listening, it is open.
class LoopbackSocket final {
public:
    // listening: with room for `backlog` connections not yet accepted (0 holds one)
    explicit LoopbackSocket(bool listening, int backlog = 4) : m_fd(::socket(AF_INET, SOCK_STREAM, 0)) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        if (m_fd < 0 || ::bind(m_fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
            (listening && ::listen(m_fd, backlog) != 0) ||
            ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
            return;
        m_port = ntohs(address.sin_port);
    }
    ~LoopbackSocket() {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    LoopbackSocket(const LoopbackSocket&) = delete;
    LoopbackSocket& operator=(const LoopbackSocket&) = delete;

    [[nodiscard]] int port() const { return m_port; }
    [[nodiscard]] int fd() const { return m_fd; }

private:
    int m_fd = -1;
    int m_port = 0;
};

// A listener on 127.0.0.1 whose accept queue is full: the kernel drops every SYN sent to it (counted in
// /proc/net/netstat's ListenOverflows), so a connect to it gets no answer, as through a firewall that drops.
// answer() accepts the queued connection: from then on the next SYN is answered.
class SilentListener final {
public:
    SilentListener() : m_filler(::socket(AF_INET, SOCK_STREAM, 0)) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port = htons(static_cast<quint16>(m_socket.port()));
        if (m_socket.port() > 0 && m_filler >= 0 &&
            ::connect(m_filler, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0)
            m_port = m_socket.port();
    }
    ~SilentListener() {
        for (const int fd : {m_accepted, m_filler})
            if (fd >= 0)
                ::close(fd);
    }
    SilentListener(const SilentListener&) = delete;
    SilentListener& operator=(const SilentListener&) = delete;

    [[nodiscard]] int port() const { return m_port; } // 0 where it could not be made
    void answer() { m_accepted = ::accept(m_socket.fd(), nullptr, nullptr); }

    // SYNs dropped by full accept queues in this network namespace so far; -1 where the kernel does not say.
    static qint64 listenOverflows() {
        QFile file(QStringLiteral("/proc/net/netstat"));
        if (!file.open(QIODevice::ReadOnly))
            return -1;
        const QList<QByteArray> lines = file.readAll().split('\n');
        for (qsizetype i = 0; i + 1 < lines.size(); ++i) {
            const QList<QByteArray> names = lines[i].simplified().split(' ');
            const QList<QByteArray> values = lines[i + 1].simplified().split(' ');
            if (names.value(0) != "TcpExt:" || values.value(0) != "TcpExt:")
                continue;
            const qsizetype at = names.indexOf("ListenOverflows");
            return at > 0 && at < values.size() ? values[at].toLongLong() : -1;
        }
        return -1;
    }

private:
    const LoopbackSocket m_socket{true, 0}; // its one place taken by the filler's connection
    int m_filler = -1;
    int m_accepted = -1;
    int m_port = 0;
};

} // namespace

class tst_Preflight final : public QObject {
    Q_OBJECT

private slots:
    void everyKey();
    void framing_data();
    void framing();
    void truncated_data();
    void truncated();
    void noBeginMarker();
    void unsupportedVersion();
    void interfaceLine_data();
    void interfaceLine();
    void connectLine_data();
    void connectLine();
    void torchLineKeepsPipesInDirectory();
    void json();
    void advice_data();
    void advice();

    void probeOnThisMachine();
    void probeThroughNoisyLoginShell();
    void probeConnectAndListen_data();
    void probeConnectAndListen();
    void probeConnectGetsNoAnswer();
    void probeConnectWaitsForALateAnswer();
    void probeWorkdir_data();
    void probeWorkdir();
    void probeFakeGpusAndTorch();
    void probeFailingNvidiaSmi();
    void probeWithoutIpCommand();
};

void tst_Preflight::everyKey() {
    const ProbeReport r = rankscope::parseProbeOutput(kRecorded);
    QVERIFY(r.complete);
    QCOMPARE(r.os, "Ubuntu 22.04.4 LTS");
    QCOMPARE(r.osId, "ubuntu");
    QCOMPARE(r.osVersion, "22.04");
    QCOMPARE(r.arch, "x86_64");
    QCOMPARE(r.kernel, "5.15.0-105-generic");
    QCOMPARE(r.hostname, "gpu-node-07");
    QCOMPARE(r.user, "alice");
    QCOMPARE(r.home, "/home/alice");
    QCOMPARE(r.workdir, "/scratch/alice/rankscope");
    QCOMPARE(r.workdirTested, "/scratch/alice");
    QCOMPARE(r.workdirExists, false);
    QCOMPARE(r.workdirWritable, true);
    QCOMPARE(r.diskFreeKb, 1876543210);
    QCOMPARE(r.cmake, "3.22.1");
    QCOMPARE(r.cxx, "c++ (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0");
    QCOMPARE(r.interfaces.size(), 4);
    QCOMPARE(r.interfaces[1].name, "eno1");
    QCOMPARE(r.interfaces[1].address, "10.1.2.7");
    QCOMPARE(r.interfaces[1].prefixLength, 24);
    QCOMPARE(r.interfaces[1].up, true);
    QCOMPARE(r.interfaces[2].up, false);
    QCOMPARE(r.interfaces[3].address, "fd00:0:0:50::7"); // the /proc fallback's long form, shortened
    QCOMPARE(r.listenPort, 29500);
    QCOMPARE(r.listenPortInUse, "no");
    QCOMPARE(r.nvidiaSmi, "ok");
    QCOMPARE(r.gpus, QStringList({"GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5f3c0c1e)",
                                  "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-8d2a7b44)"}));
    QCOMPARE(r.torch.size(), 2);
    QCOMPARE(r.torch[0].source, "Torch_DIR");
    QCOMPARE(r.torch[0].version, "2.5.1");
    QCOMPARE(r.torch[0].hasConfig, true);
    QCOMPARE(r.torch[0].cmakeDir, "/opt/libtorch/share/cmake/Torch");
    QCOMPARE(r.torch[1].source, "/usr/bin/python3");
    QCOMPARE(r.torch[1].hasConfig, false);
    QCOMPARE(r.connectHost, "10.1.2.1");
    QCOMPARE(r.connectPort, 29500);
    QCOMPARE(r.connectResult, "refused");
    QCOMPARE(r.connectDetail, "Connection refused");
    QCOMPARE(r.warnings, QStringList{"ignored argument: --verbose"});
    QCOMPARE(r.unknownKeys, QStringList{"future_key"});
}

void tst_Preflight::framing_data() {
    QTest::addColumn<QByteArray>("output");
    QByteArray crlf = kRecorded;
    crlf.replace("\n", "\r\n");
    QTest::newRow("clean") << kRecorded;
    QTest::newRow("banners before and after")
        << "Welcome to gpu-node-07\nLast login: Mon Nov 25 09:12:01 2024\n" + kRecorded + "logout\n";
    QTest::newRow("crlf from a pty") << "motd\r\n" + crlf + "bye\r\n";
    QTest::newRow("noise without a newline")
        << "pyenv: cannot rehash: ~/.pyenv/shims isn't writable" + kRecorded + "(base) ";
    QTest::newRow("stray line inside") << QByteArray(kRecorded).replace("cmake=", "[1]+ Done  sleep 1\ncmake=");
    QTest::newRow("no newline after end marker") << kRecorded.chopped(1);
}

// The same report whatever the login shell adds around it.
void tst_Preflight::framing() {
    QFETCH(QByteArray, output);
    QCOMPARE(jsonText(rankscope::parseProbeOutput(output)), jsonText(rankscope::parseProbeOutput(kRecorded)));
}

void tst_Preflight::truncated_data() {
    QTest::addColumn<QByteArray>("cutAfter");
    QTest::addColumn<qint64>("diskFreeKb");
    QTest::addColumn<int>("gpuCount");
    QTest::newRow("mid-value") << QByteArray("disk_free_kb=18765") << qint64(-1) << 0;
    QTest::newRow("after a line") << QByteArray("(UUID: GPU-5f3c0c1e)\n") << qint64(1876543210) << 1;
    QTest::newRow("before end marker") << QByteArray("future_key=42\n") << qint64(1876543210) << 2;
}

// A probe killed half-way: what came is kept, a cut last line is not, and the report says it is incomplete.
void tst_Preflight::truncated() {
    QFETCH(QByteArray, cutAfter);
    QFETCH(qint64, diskFreeKb);
    QFETCH(int, gpuCount);
    const QByteArray output = "banner\n" + kRecorded.left(kRecorded.indexOf(cutAfter) + cutAfter.size());
    const ProbeReport report = rankscope::parseProbeOutput(output);
    QVERIFY(!report.complete);
    QCOMPARE(report.os, "Ubuntu 22.04.4 LTS");
    QCOMPARE(report.diskFreeKb, diskFreeKb);
    QCOMPARE(report.gpus.size(), gpuCount);
}

void tst_Preflight::noBeginMarker() {
    const ProbeReport report = rankscope::parseProbeOutput("bash: /bin/sh: No such file or directory\nos=fake\n");
    QVERIFY(!report.complete);
    QVERIFY(report.os.isEmpty());
    QVERIFY(report.warnings.isEmpty());
}

void tst_Preflight::unsupportedVersion() {
    QByteArray output = kRecorded;
    output.replace("begin v1", "begin v2");
    const ProbeReport report = rankscope::parseProbeOutput(output);
    QVERIFY(!report.complete);
    QVERIFY(report.os.isEmpty());
    QCOMPARE(report.warnings.size(), 1);
    QVERIFY2(report.warnings[0].contains("\"v2\""), qPrintable(report.warnings[0]));
}

void tst_Preflight::interfaceLine_data() {
    QTest::addColumn<QString>("line");
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("address");
    QTest::addColumn<int>("prefixLength");
    QTest::addColumn<bool>("up");
    QTest::newRow("ipv4") << "eth0 192.0.2.2/24 up"
                          << "eth0"
                          << "192.0.2.2" << 24 << true;
    QTest::newRow("down") << "eth1 10.0.0.1/8 down"
                          << "eth1"
                          << "10.0.0.1" << 8 << false;
    QTest::newRow("state unknown") << "eth2 10.0.0.2/8 unknown"
                                   << "eth2"
                                   << "10.0.0.2" << 8 << false;
    QTest::newRow("ipv6 short") << "eth0 fd00::2/64 up"
                                << "eth0"
                                << "fd00::2" << 64 << true;
    QTest::newRow("ipv6 long") << "eth0 FD00:0000:0:0:0:0:0:0002/64 up"
                               << "eth0"
                               << "fd00::2" << 64 << true;
    QTest::newRow("ipv6 one zero group") << "ib0 2001:db8:0:1:1:1:1:1/64 up"
                                         << "ib0"
                                         << "2001:db8:0:1:1:1:1:1" << 64 << true;
    QTest::newRow("point-to-point") << "tun0 10.8.0.1 up"
                                    << "tun0"
                                    << "10.8.0.1" << 32 << true;
}

void tst_Preflight::interfaceLine() {
    QFETCH(QString, line);
    const ProbeReport report = parseLines({"iface=" + line});
    QCOMPARE(report.interfaces.size(), 1);
    QTEST(report.interfaces[0].name, "name");
    QTEST(report.interfaces[0].address, "address");
    QTEST(report.interfaces[0].prefixLength, "prefixLength");
    QTEST(report.interfaces[0].up, "up");
    QVERIFY(report.warnings.isEmpty());
}

void tst_Preflight::connectLine_data() {
    QTest::addColumn<QString>("line");
    QTest::addColumn<QString>("host");
    QTest::addColumn<int>("port");
    QTest::addColumn<QString>("result");
    QTest::addColumn<bool>("readable");
    QTest::newRow("ipv4") << "10.0.0.1:29500 open"
                          << "10.0.0.1" << 29500 << "open" << true;
    QTest::newRow("host name") << "node-a:29500 timeout"
                               << "node-a" << 29500 << "timeout" << true;
    QTest::newRow("ipv6") << "[fd00::1]:29500 refused"
                          << "fd00::1" << 29500 << "refused" << true;
    QTest::newRow("no result") << "node-a:29500"
                               << "" << 0 << "" << false;
    QTest::newRow("no port") << "node-a unknown"
                             << "" << 0 << "" << false;
}

void tst_Preflight::connectLine() {
    QFETCH(QString, line);
    QFETCH(bool, readable);
    const ProbeReport report = parseLines({"connect=" + line});
    if (!readable) {
        QCOMPARE(report.warnings.size(), 1);
        return;
    }
    QTEST(report.connectHost, "host");
    QTEST(report.connectPort, "port");
    QTEST(report.connectResult, "result");
}

void tst_Preflight::torchLineKeepsPipesInDirectory() {
    const ProbeReport report = parseLines({"torch=python3|2.5.1|yes|/odd|dir/Torch", "torch=system||no"});
    QCOMPARE(report.torch.size(), 1);
    QCOMPARE(report.torch[0].cmakeDir, "/odd|dir/Torch");
    QCOMPARE(report.torch[0].version, "2.5.1");
    QCOMPARE(report.warnings.size(), 1); // the second line has no directory field
}

void tst_Preflight::json() {
    const QJsonObject object = rankscope::probeReportToJson(rankscope::parseProbeOutput(kRecorded));
    QCOMPARE(object["complete"].toBool(), true);
    QCOMPARE(object["os_id"].toString(), "ubuntu");
    QCOMPARE(object["disk_free_kb"].toInteger(), 1876543210);
    QCOMPARE(object["interfaces"].toArray().size(), 4);
    QCOMPARE(object["interfaces"][3]["prefix_length"].toInt(), 64);
    QCOMPARE(object["torch"][1]["has_config"].toBool(), false);
    QCOMPARE(object["connect_port"].toInt(), 29500);
    QCOMPARE(object["unknown_keys"].toArray().size(), 1);
    QVERIFY(rankscope::probeReportToJson(ProbeReport{})["disk_free_kb"].isNull());
}

void tst_Preflight::advice_data() {
    QTest::addColumn<QStringList>("interfaces"); // iface lines
    QTest::addColumn<QString>("rendezvous");
    QTest::addColumn<QString>("setting"); // NCCL_SOCKET_IFNAME
    QTest::addColumn<QString>("suggestion");
    QTest::addColumn<QStringList>("warnings"); // a fragment of each warning, in order

    const QStringList node = {"lo 127.0.0.1/8 up",      "docker0 172.17.0.1/16 up", "eth0 10.0.0.5/24 up",
                              "ib0 192.168.10.5/24 up", "eth0 fd00::5/64 up",       "ib0 fd01::5/64 up"};
    const QStringList none;
    QTest::newRow("same subnet") << node << "192.168.10.1"
                                 << ""
                                 << "ib0" << none;
    QTest::newRow("same subnet, first nic") << node << "10.0.0.9"
                                            << ""
                                            << "eth0" << none;
    QTest::newRow("host name: first physical") << node << "node-a"
                                               << ""
                                               << "eth0" << none;
    QTest::newRow("no subnet: first physical") << node << "203.0.113.7"
                                               << ""
                                               << "eth0" << none;
    QTest::newRow("longest prefix") << QStringList{"eth0 10.0.0.5/8 up", "ib0 10.1.0.5/16 up"} << "10.1.2.3"
                                    << ""
                                    << "ib0" << none;
    QTest::newRow("up before down") << QStringList{"eth0 10.0.0.5/24 down", "eth1 10.0.0.6/24 up"} << "10.0.0.1"
                                    << ""
                                    << "eth1" << none;
    QTest::newRow("down match") << QStringList{"lo 127.0.0.1/8 up", "eth0 10.0.0.5/24 down"} << "10.0.0.1"
                                << ""
                                << "eth0" << QStringList{"eth0 is down"};
    QTest::newRow("lo-only node") << QStringList{"lo 127.0.0.1/8 up"} << "10.0.0.1"
                                  << ""
                                  << "" << QStringList{"no interface fits"};
    QTest::newRow("loopback rendezvous") << node << "127.0.0.1"
                                         << ""
                                         << "lo" << QStringList{"loopback"};
    QTest::newRow("docker0") << node << "172.17.0.2"
                             << ""
                             << "docker0" << QStringList{"docker0 is a container"};
    QTest::newRow("virbr") << QStringList{"eth0 10.0.0.5/24 up", "virbr0 192.168.122.1/24 up"} << "192.168.122.9"
                           << ""
                           << "virbr0" << QStringList{"virbr0 is a container"};
    QTest::newRow("veth") << QStringList{"veth3f2a 10.200.0.1/24 up"} << "10.200.0.2"
                          << ""
                          << "veth3f2a" << QStringList{"veth3f2a is a container"};
    QTest::newRow("subnet not on a byte boundary")
        << QStringList{"ib0 10.0.32.5/20 up", "eth0 10.0.16.5/20 up"} << "10.0.31.200"
        << ""
        << "eth0" << none;
    QTest::newRow("an IPv6 subnet never holds an IPv4 address") // a00:1:: starts with the bytes of 10.0.0.1
        << QStringList{"eth1 192.168.1.5/24 up", "ib0 a00:1::5/32 up", "eth0 10.0.0.5/24 up"} << "10.0.0.1"
        << ""
        << "eth0" << none;
    QTest::newRow("calico") << QStringList{"cali1234 10.244.1.1/32 up"} << "10.244.1.1"
                            << ""
                            << "cali1234" << QStringList{"cali1234 is a container"};
    QTest::newRow("host name: first physical that is up")
        << QStringList{"lo 127.0.0.1/8 up", "eth0 10.0.0.5/24 down", "eth1 10.1.0.5/24 up"} << "node-a"
        << ""
        << "eth1" << none;
    QTest::newRow("ipv6") << node << "fd01::1"
                          << ""
                          << "ib0" << none;
    QTest::newRow("ipv6 bracketed") << node << "[fd00::9]"
                                    << ""
                                    << "eth0" << none;
    QTest::newRow("ipv4-mapped ipv6") << node << "::ffff:192.168.10.1"
                                      << ""
                                      << "ib0" << none;
    QTest::newRow("setting lo") << node << "10.0.0.1"
                                << "lo"
                                << "eth0" << QStringList{"NCCL_SOCKET_IFNAME=lo selects lo"};
    QTest::newRow("setting docker0") << node << "10.0.0.1"
                                     << "=docker0"
                                     << "eth0" << QStringList{"NCCL_SOCKET_IFNAME==docker0 selects docker0"};
    QTest::newRow("setting excludes") << node << "10.0.0.1"
                                      << "^docker,lo"
                                      << "eth0" << none;
    QTest::newRow("setting prefix") << node << "10.0.0.1"
                                    << "eth"
                                    << "eth0" << none;
    QTest::newRow("setting leaves out") << node << "10.0.0.1"
                                        << "=ib0"
                                        << "eth0" << QStringList{"leaves out eth0"};
    QTest::newRow("setting of exact names") << node << "10.0.0.1"
                                            << "=eth"
                                            << "eth0" << QStringList{"selects none of this node's interfaces"};
    QTest::newRow("setting, nothing to suggest")
        << QStringList{"lo 127.0.0.1/8 up", "eth0 10.0.0.5/24 down"} << "203.0.113.7"
        << "eth"
        << "" << QStringList{"no interface fits"};
    QTest::newRow("setting matches nothing") << node << "10.0.0.1"
                                             << "ens"
                                             << "eth0" << QStringList{"selects none of this node's interfaces"};
}

void tst_Preflight::advice() {
    QFETCH(QStringList, interfaces);
    QFETCH(QString, rendezvous);
    QFETCH(QString, setting);
    QFETCH(QStringList, warnings);
    QStringList lines;
    for (const QString& line : interfaces)
        lines << "iface=" + line;
    const auto advice = rankscope::adviseSocketIfname(parseLines(lines).interfaces, rendezvous, setting);
    QTEST(advice.suggestion, "suggestion");
    QCOMPARE(advice.warnings.size(), warnings.size());
    for (qsizetype i = 0; i < warnings.size(); ++i)
        QVERIFY2(advice.warnings[i].contains(warnings[i]), qPrintable(advice.warnings[i]));
}

void tst_Preflight::probeOnThisMachine() {
    QTemporaryDir workdir;
    QVERIFY(workdir.isValid());
    const ProbeRun run = runShProbe({"--workdir", workdir.path()});
    VERIFY_RUN(run);
    QVERIFY2(run.err.isEmpty(), run.err.constData());
    const ProbeReport& r = run.report;
    QVERIFY2(r.warnings.isEmpty(), qPrintable(r.warnings.join('\n')));
    QVERIFY2(r.unknownKeys.isEmpty(), qPrintable(r.unknownKeys.join(' ')));

    utsname names{};
    QCOMPARE(::uname(&names), 0);
    QCOMPARE(r.arch, QString::fromUtf8(names.machine));
    QCOMPARE(r.kernel, QString::fromUtf8(names.release));
    QCOMPARE(r.workdir, canonical(workdir.path()));
    QVERIFY(r.workdirExists);
    QVERIFY(r.workdirWritable);
    QVERIFY2(r.diskFreeKb > 0, qPrintable(QString::number(r.diskFreeKb)));
    QVERIFY(!r.os.isEmpty() && r.os != "unknown");
    QVERIFY(!r.user.isEmpty() && r.user != "unknown");

    const bool hasLo = std::any_of(r.interfaces.begin(), r.interfaces.end(), [](const NetInterface& i) {
        return i.name == "lo" && i.address == "127.0.0.1" && i.prefixLength == 8 && i.up;
    });
    QVERIFY2(hasLo, run.out.constData());
    QVERIFY2(!r.cmake.isEmpty() && r.cmake != "missing" && r.cmake != "error", qPrintable(r.cmake));
    QVERIFY(r.cmake.at(0).isDigit());
    if (QStandardPaths::findExecutable("nvidia-smi").isEmpty())
        QCOMPARE(r.nvidiaSmi, "missing");
    else
        QVERIFY(r.nvidiaSmi == "ok" || r.nvidiaSmi == "error");

    // Every LibTorch CMake package the system holds is reported, and so is Debian's python torch.
    QStringList reported;
    for (const auto& install : r.torch)
        reported << install.cmakeDir;
    QStringList systemDirs =
        QDir("/usr/share/cmake").exists("Torch") ? QStringList{"/usr/share/cmake/Torch"} : QStringList{};
    for (const QString& lib : QDir("/usr/lib").entryList({"*-linux-*"}, QDir::Dirs)) {
        if (QFileInfo::exists("/usr/lib/" + lib + "/cmake/Torch"))
            systemDirs << "/usr/lib/" + lib + "/cmake/Torch";
    }
    for (const QString& dir : systemDirs)
        QVERIFY2(reported.contains(canonical(dir)), qPrintable(dir));
    const bool usrPythonHasTorch =
        QProcess::execute("/usr/bin/python3",
                          {"-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"}) ==
        0;
    if (usrPythonHasTorch) {
        const auto* install = torchFrom(r, "/usr/bin/python3");
        QVERIFY2(install || reported.size() > systemDirs.size(), run.out.constData());
        if (install)
            QVERIFY(!install->version.isEmpty());
    }
}

// The SSH side runs the probe through the login shell, which may print before and after it.
void tst_Preflight::probeThroughNoisyLoginShell() {
    if (QStandardPaths::findExecutable("bash").isEmpty())
        QSKIP("needs bash");
    QTemporaryDir workdir;
    const QString loginShell = "echo 'Welcome to node-a'; printf 'conda: base activated'; /bin/sh -s -- \"$@\"; "
                               "echo 'Connection to node-a closed.'";
    const ProbeRun plain = runShProbe({"--workdir", workdir.path()});
    VERIFY_RUN(plain);
    const ProbeRun noisy = runProbe("bash", {"-c", loginShell, "bash", "--workdir", workdir.path()});
    VERIFY_RUN(noisy);
    QVERIFY(noisy.out.startsWith("Welcome to node-a\nconda: base activated@@rankscope-probe-begin v1\n"));
    QVERIFY(noisy.out.endsWith("@@rankscope-probe-end\nConnection to node-a closed.\n"));
    QCOMPARE(noisy.report.workdir, plain.report.workdir);
    QCOMPARE(noisy.report.arch, plain.report.arch);
    // Where /bin/sh is bash (RHEL), the same script runs under bash.
    const ProbeRun underBash = runProbe("bash", {"-s", "--", "--workdir", workdir.path()});
    VERIFY_RUN(underBash);
    QVERIFY2(underBash.err.isEmpty(), underBash.err.constData());
    QCOMPARE(underBash.report.workdir, plain.report.workdir);
    QCOMPARE(underBash.report.cmake, plain.report.cmake);
    const ProbeRun after = runShProbe({"--workdir", workdir.path()});
    VERIFY_RUN(after);
    QString wrong = interfacesBetween(noisy, plain, after);
    QVERIFY2(wrong.isEmpty(), qPrintable(wrong));
    wrong = interfacesBetween(underBash, plain, after);
    QVERIFY2(wrong.isEmpty(), qPrintable(wrong));
}

void tst_Preflight::probeConnectAndListen_data() {
    QTest::addColumn<bool>("listening");
    QTest::addColumn<QString>("connect");
    QTest::addColumn<QString>("inUse");
    QTest::newRow("listening") << true << "open"
                               << "yes";
    QTest::newRow("bound, not listening") << false << "refused"
                                          << "no";
}

void tst_Preflight::probeConnectAndListen() {
    if (QStandardPaths::findExecutable("bash").isEmpty() || QStandardPaths::findExecutable("timeout").isEmpty())
        QSKIP("the connect check needs bash and timeout");
    QFETCH(bool, listening);
    const LoopbackSocket socket(listening);
    QVERIFY(socket.port() > 0);
    const QString port = QString::number(socket.port());
    const ProbeRun run = runShProbe({"--connect", "127.0.0.1:" + port, "--listen-port", port});
    VERIFY_RUN(run);
    QCOMPARE(run.report.connectHost, "127.0.0.1");
    QCOMPARE(run.report.connectPort, socket.port());
    QTEST(run.report.connectResult, "connect");
    QCOMPARE(run.report.listenPort, socket.port());
    QTEST(run.report.listenPortInUse, "inUse");
    QVERIFY(run.report.workdir.isEmpty()); // not asked
}

// A master port that never answers (a firewall that drops) reads as a timeout, with the time waited.
void tst_Preflight::probeConnectGetsNoAnswer() {
    if (QStandardPaths::findExecutable("bash").isEmpty() || QStandardPaths::findExecutable("timeout").isEmpty())
        QSKIP("the connect check needs bash and timeout");
    const SilentListener listener;
    QVERIFY(listener.port() > 0);
    QElapsedTimer clock;
    clock.start();
    const ProbeRun run = runShProbe({"--connect", "127.0.0.1:" + QString::number(listener.port())});
    VERIFY_RUN(run);
    QCOMPARE(run.report.connectResult, "timeout");
    QCOMPARE(run.report.connectDetail, "no answer within 6 s");
    QVERIFY2(clock.elapsed() >= 6000, qPrintable(QString::number(clock.elapsed())));
}

// A port that answers late is reachable, not a timeout: here the SYN sent 3 s after the first (SYNs that get no
// answer are sent again after 1 s and 3 s, or every second at first on kernels with tcp_syn_linear_timeouts), as
// for a SYN lost twice or a node too busy to start the check's bash at once. The probe's limit was 3 s once, and a
// loaded CI machine read its own master port as unreachable.
void tst_Preflight::probeConnectWaitsForALateAnswer() {
    if (QStandardPaths::findExecutable("bash").isEmpty() || QStandardPaths::findExecutable("timeout").isEmpty())
        QSKIP("the connect check needs bash and timeout");
    const qint64 overflowsBefore = SilentListener::listenOverflows();
    if (overflowsBefore < 0)
        QSKIP("no ListenOverflows in /proc/net/netstat: the test cannot see when the first SYN was dropped");
    SilentListener listener;
    QVERIFY(listener.port() > 0);
    // The listener answers 2.5 s after it dropped the first SYN: the one sent at 3 s is the first it answers.
    std::atomic<qint64> firstDropAt = -1;
    std::atomic<qint64> answeredAt = -1;
    QElapsedTimer clock;
    clock.start();
    std::thread answerer([&] {
        while (SilentListener::listenOverflows() == overflowsBefore && clock.elapsed() < 20000)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        firstDropAt = clock.elapsed();
        std::this_thread::sleep_for(std::chrono::milliseconds(2500));
        listener.answer();
        answeredAt = clock.elapsed();
    });
    const ProbeRun run = runShProbe({"--connect", "127.0.0.1:" + QString::number(listener.port())});
    const qint64 finishedAt = clock.elapsed();
    answerer.join();
    VERIFY_RUN(run);
    const QString times = QStringLiteral("first SYN dropped at %1 ms, answered from %2 ms, probe done at %3 ms")
                              .arg(firstDropAt.load())
                              .arg(answeredAt.load())
                              .arg(finishedAt);
    QVERIFY2(finishedAt > answeredAt, qPrintable(times));
    QVERIFY2(run.report.connectResult == QLatin1String("open"), qPrintable(run.report.connectResult + ": " + times));
}

void tst_Preflight::probeWorkdir_data() {
    QTest::addColumn<QString>("argument"); // @HOME@ stands for the home directory
    QTest::addColumn<QString>("workdir");  // relative to the canonical home; "" is the home itself
    QTest::addColumn<QString>("tested");
    QTest::addColumn<bool>("exists");
    QTest::addColumn<bool>("writable");
    QTest::newRow("tilde") << "~"
                           << ""
                           << "" << true << true;
    QTest::newRow("under tilde") << "~/runs/a"
                                 << "runs/a"
                                 << "" << false << true;
    QTest::newRow("relative") << "runs/../x/./y//"
                              << "x/y"
                              << "" << false << true;
    QTest::newRow("existing") << "~/exists"
                              << "exists"
                              << "exists" << true << true;
    QTest::newRow("absolute") << "@HOME@/exists/new"
                              << "exists/new"
                              << "exists" << false << true;
    QTest::newRow("through a symlink") << "~/link/new"
                                       << "exists/new"
                                       << "exists" << false << true;
    QTest::newRow("under a file") << "~/afile/sub"
                                  << "afile/sub"
                                  << "afile" << false << false;
}

// "~" and relative paths are taken from $HOME; nothing is created.
void tst_Preflight::probeWorkdir() {
    QFETCH(QString, argument);
    QFETCH(QString, workdir);
    QFETCH(QString, tested);
    QTemporaryDir home;
    QVERIFY(home.isValid());
    QDir homeDir(home.path());
    QVERIFY(homeDir.mkdir("exists"));
    QVERIFY(writeFile(homeDir.filePath("afile"), "x"));
    QVERIFY(QFile::link(homeDir.filePath("exists"), homeDir.filePath("link")));
    const QStringList before = homeDir.entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::System);

    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("HOME", home.path());
    const ProbeRun run = runShProbe({"--workdir", argument.replace("@HOME@", home.path())}, environment);
    VERIFY_RUN(run);
    const QString canonicalHome = canonical(home.path());
    const auto underHome = [&canonicalHome](const QString& relative) {
        return relative.isEmpty() ? canonicalHome : canonicalHome + '/' + relative;
    };
    QCOMPARE(run.report.workdir, underHome(workdir));
    QCOMPARE(run.report.workdirTested, underHome(tested));
    QTEST(run.report.workdirExists, "exists");
    QTEST(run.report.workdirWritable, "writable");
    QCOMPARE(run.report.warnings.size(), tested == "afile" ? 1 : 0);
    QCOMPARE(homeDir.entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::System), before);
    QVERIFY(QDir(homeDir.filePath("exists")).isEmpty());
}

// Fake tools first on PATH, stdin left open as an SSH channel may leave it. The fake cmake reads stdin to
// the end: were the channel its stdin, it would wait for the end-of-file that never comes, until the
// probe's 10 s limit stopped it and cmake read "error".
void tst_Preflight::probeFakeGpusAndTorch() {
    QTemporaryDir root;
    QVERIFY(root.isValid());
    QDir dir(root.path());
    QVERIFY(dir.mkpath("bin") && dir.mkpath("libtorch/Torch") && dir.mkpath("site/torch/share/cmake/Torch"));
    QVERIFY(writeFile(dir.filePath("bin/nvidia-smi"),
                      "#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)'\n"
                      "echo '  MIG 3g.40gb     Device  0: (UUID: MIG-2)'\n",
                      true));
    QVERIFY(writeFile(dir.filePath("bin/cmake"), "#!/bin/sh\ncat >/dev/null\necho 'cmake version 3.99.0'\n", true));
    const QString pythonTorch = canonical(dir.filePath("site/torch/share/cmake/Torch"));
    QVERIFY(
        writeFile(dir.filePath("bin/python3"), "#!/bin/sh\necho '" + pythonTorch.toUtf8() + "|2.5.1+cu124'\n", true));
    QVERIFY(writeFile(pythonTorch + "/TorchConfig.cmake", ""));
    QVERIFY(writeFile(dir.filePath("libtorch/Torch/TorchConfig.cmake"), ""));
    QVERIFY(writeFile(dir.filePath("libtorch/Torch/TorchConfigVersion.cmake"), "set(PACKAGE_VERSION \"2.4.0\")\n"));

    QProcessEnvironment environment = withPathFirst(dir.filePath("bin"));
    environment.insert("Torch_DIR", dir.filePath("libtorch/Torch"));
    const ProbeRun run = runShProbe({}, environment, Stdin::LeftOpen);
    VERIFY_RUN(run);
    QCOMPARE(run.report.cmake, "3.99.0");
    QCOMPARE(run.report.nvidiaSmi, "ok");
    QCOMPARE(run.report.gpus,
             QStringList({"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)", "MIG 3g.40gb     Device  0: (UUID: MIG-2)"}));
    QVERIFY(!run.report.torch.isEmpty());
    QCOMPARE(run.report.torch[0].source, "Torch_DIR");
    QCOMPARE(run.report.torch[0].version, "2.4.0");
    QCOMPARE(run.report.torch[0].cmakeDir, canonical(dir.filePath("libtorch/Torch")));
    QVERIFY(run.report.torch[0].hasConfig);
    const auto* python = torchFrom(run.report, "python3");
    QVERIFY2(python, run.out.constData());
    QCOMPARE(python->version, "2.5.1+cu124");
    QCOMPARE(python->cmakeDir, pythonTorch);
    QVERIFY(python->hasConfig);
}

void tst_Preflight::probeFailingNvidiaSmi() {
    QTemporaryDir bin;
    QVERIFY(writeFile(bin.filePath("nvidia-smi"),
                      "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                      "driver.\"\necho 'Make sure that the latest NVIDIA driver is installed and running.'\nexit 9\n",
                      true));
    const ProbeRun run = runShProbe({}, withPathFirst(bin.path()));
    VERIFY_RUN(run);
    QCOMPARE(run.report.nvidiaSmi, "error");
    QVERIFY(run.report.gpus.isEmpty());
    QCOMPARE(run.report.nvidiaSmiDetail,
             "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. (exit status 9)");
}

// Without a working ip(8) the interfaces come from /proc: what it finds must match what ip finds.
void tst_Preflight::probeWithoutIpCommand() {
    if (QStandardPaths::findExecutable("ip").isEmpty())
        QSKIP("needs ip to compare with");
    QTemporaryDir bin;
    QVERIFY(writeFile(bin.filePath("ip"), "#!/bin/sh\nexit 1\n", true));
    // Compared with ip's view just before and just after (interfacesBetween says why).
    const ProbeRun before = runShProbe({});
    const ProbeRun fallback = runShProbe({}, withPathFirst(bin.path()));
    const ProbeRun after = runShProbe({});
    VERIFY_RUN(before);
    VERIFY_RUN(fallback);
    VERIFY_RUN(after);
    // Global IPv6 addresses come straight from /proc/net/if_inet6: none may be missing.
    const QString wrong =
        interfacesBetween(fallback, before, after, [](const QString& entry) { return entry.contains(':'); });
    QVERIFY2(wrong.isEmpty(), qPrintable(wrong));
}

QTEST_GUILESS_MAIN(tst_Preflight)
#include "tst_preflight.moc"
