// SPDX-License-Identifier: MIT
// The root cause of a rank killed by the kernel's OOM killer, end to end with real parts: a real trainer rank
// under a real memory cgroup limit takes memory (--alloc-at-step) until the kernel kills it; the engine reads the
// node's kernel log on the node worker's thread, keeps it in the run store, and the root cause names the kill with
// the rank's pid. Once on the local transport through the engine's API, once over SSH to a private sshd on
// loopback through `rankscope-cli run` and `diagnose`. Also the read itself on this machine, and a refusal
// (dmesg as an unprivileged user under kernel.dmesg_restrict) reported as a fact.
//
// The memory cgroup is this test's own, made under the one this process is in (cgroup v2 where its memory
// controller is delegated, else the v1 memory hierarchy); the test process moves into it, so that the supervisor,
// the ranks and sshd, all started afterwards, are in it too, and moves back at the end. Where no memory cgroup can
// be made (not root, no memory controller), the OOM kill is written to the kernel log through /dev/kmsg (root)
// and the rank is killed with SIGKILL instead, and the test says so; without either it is skipped with the reason.
#include "core/stacks.h"
#include "enginetestutil.h"
#include "fixtures/sshdfixture.h"
#include "remote/kernellogread.h"
#include "remote/localtransport.h"
#include "remote/nodeworker.h"
#include "remote/shellcommand.h"

#include <QDir>
#include <QDirIterator>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <cmath>
#include <csignal>
#include <unistd.h>

using namespace rankscope;
using namespace rankscope::test;

namespace {

const QString kTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");
const QString kCli = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli");
constexpr qint64 kLimitBytes = qint64(1536) << 20; // the test, sshd, the supervisor and two ranks fit in it
constexpr int kAllocMiB = 3072;                    // rank 1's extra memory: it cannot fit

bool writeText(const QString& path, const QByteArray& text, QString* error) {
    QFile file(path);
    if (file.open(QIODevice::WriteOnly) && file.write(text) == text.size() && file.flush())
        return true;
    *error = QStringLiteral("%1: %2").arg(path, file.errorString());
    return false;
}

// A memory cgroup of this test's own with a limit, which this process is moved into.
class MemoryCgroup final {
public:
    MemoryCgroup() = default;
    MemoryCgroup(const MemoryCgroup&) = delete;
    MemoryCgroup& operator=(const MemoryCgroup&) = delete;
    ~MemoryCgroup() { leave(); }

    bool enter(qint64 limitBytes, QString* why) {
        QFile self(QStringLiteral("/proc/self/cgroup"));
        if (!self.open(QIODevice::ReadOnly)) {
            *why = QStringLiteral("no /proc/self/cgroup");
            return false;
        }
        QString v1Path;
        QString v2Path;
        for (const QByteArray& line : self.readAll().split('\n')) {
            const QList<QByteArray> fields = line.split(':');
            if (fields.size() < 3)
                continue;
            if (fields[0] == "0" && fields[1].isEmpty())
                v2Path = QString::fromUtf8(fields[2]);
            else if (fields[1].split(',').contains("memory"))
                v1Path = QString::fromUtf8(fields[2]);
        }
        const QString name = QStringLiteral("/rankscope-kernellog-%1").arg(::getpid());
        if (!v1Path.isEmpty() && QFileInfo::exists(QStringLiteral("/sys/fs/cgroup/memory/cgroup.procs"))) {
            m_parent = QStringLiteral("/sys/fs/cgroup/memory") + (v1Path == QLatin1String("/") ? QString() : v1Path);
            m_limitFile = QStringLiteral("memory.limit_in_bytes");
        } else if (!v2Path.isEmpty()) {
            m_parent = QStringLiteral("/sys/fs/cgroup") + (v2Path == QLatin1String("/") ? QString() : v2Path);
            const QByteArray delegated = readAll(m_parent + QStringLiteral("/cgroup.subtree_control"));
            if (!delegated.split(' ').contains("memory") && !delegated.contains("memory")) {
                *why = QStringLiteral("cgroup v2 at %1 does not delegate the memory controller to its children "
                                      "(cgroup.subtree_control: '%2')")
                           .arg(m_parent, QString::fromUtf8(delegated).trimmed());
                return false;
            }
            m_limitFile = QStringLiteral("memory.max");
        } else {
            *why = QStringLiteral("no memory controller in /proc/self/cgroup");
            return false;
        }
        m_dir = m_parent + name;
        if (!QDir().mkdir(m_dir)) {
            *why = QStringLiteral("cannot create %1 (not root, or a read-only cgroup file system)").arg(m_dir);
            m_dir.clear();
            return false;
        }
        if (!writeText(m_dir + QLatin1Char('/') + m_limitFile, QByteArray::number(limitBytes), why))
            return false;
        // Without swap accounting a v1 group could swap instead; where the file is there, the same limit.
        if (QFileInfo::exists(m_dir + QStringLiteral("/memory.memsw.limit_in_bytes")))
            writeText(m_dir + QStringLiteral("/memory.memsw.limit_in_bytes"), QByteArray::number(limitBytes), why);
        if (QFileInfo::exists(m_dir + QStringLiteral("/memory.swap.max")))
            writeText(m_dir + QStringLiteral("/memory.swap.max"), "0", why);
        if (!writeText(m_dir + QStringLiteral("/cgroup.procs"), QByteArray::number(::getpid()), why))
            return false;
        m_entered = true;
        return true;
    }

    void leave() {
        if (m_entered) {
            QString ignored;
            writeText(m_parent + QStringLiteral("/cgroup.procs"), QByteArray::number(::getpid()), &ignored);
            m_entered = false;
        }
        if (!m_dir.isEmpty() && !QDir().rmdir(m_dir))
            qWarning("cannot remove %s: a process of the test is still in it", qPrintable(m_dir));
        m_dir.clear();
    }

    [[nodiscard]] QString path() const { return m_dir; }

    // A cgroup inside this one with a lower limit, for a shell to move into (`echo $$ > DIR/cgroup.procs`); empty,
    // with the reason, where it cannot be made. The caller removes it.
    QString makeChild(const QString& name, qint64 limitBytes, QString* why) const {
        const QString dir = m_dir + QLatin1Char('/') + name;
        if (!QDir().mkdir(dir)) {
            *why = QStringLiteral("cannot create %1").arg(dir);
            return {};
        }
        if (!writeText(dir + QLatin1Char('/') + m_limitFile, QByteArray::number(limitBytes), why)) {
            QDir().rmdir(dir);
            return {};
        }
        return dir;
    }

private:
    QString m_parent;
    QString m_dir;
    QString m_limitFile;
    bool m_entered = false;
};

// Every process a run of this test left (its supervisor, pulse and ranks write their pids into the run
// directories under `root`), ended by its id.
void killRunProcesses(const QString& root) {
    QDirIterator it(root, {QStringLiteral("*.pid")}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const qint64 pid = readAll(it.next()).trimmed().toLongLong();
        if (pid > 1) {
            ::kill(static_cast<pid_t>(-pid), SIGKILL); // a rank's process group
            ::kill(static_cast<pid_t>(pid), SIGKILL);
        }
    }
}

QJsonArray allocFault() {
    return {"--threads",       "1",
            "--timeout-s",     "30",
            "--alloc-at-step", "5",
            "--alloc-rank",    "1",
            "--alloc-mb",      QString::number(kAllocMiB)};
}

QJsonObject trainer(const QJsonArray& extra) {
    return QJsonObject{{"dataset", "synthetic"}, {"model", "mlp"},  {"max_steps", 1000},  {"batch_size", 16},
                       {"backend", "gloo"},      {"device", "cpu"}, {"extra_args", extra}};
}

QVector<Diagnosis> rootCauses(const QSignalSpy& spy) {
    QVector<Diagnosis> found;
    for (const auto& call : spy)
        for (const Diagnosis& d : call.front().value<QVector<Diagnosis>>())
            if (d.kind == DiagnosisKind::RootCause)
                found.append(d);
    return found;
}

qint64 startPid(const QSignalSpy& events, int rank) {
    for (const auto& call : events)
        for (const TrainerEvent& e : call.front().value<QVector<TrainerEvent>>())
            if (e.rank == rank && e.type == TrainerEventType::Start)
                return e.integer("pid", -1);
    return -1;
}

// The pid in a stored rank's start event.
qint64 storedStartPid(const RunStore& store, const QString& run, int rank) {
    for (const QByteArray& line : readAll(store.streamPath(run, rank, RankStream::Events)).split('\n')) {
        if (!line.startsWith("@rankscope "))
            continue;
        const QJsonObject event = QJsonDocument::fromJson(line.mid(11)).object();
        if (event.value("type").toString() == QLatin1String("start"))
            return event.value("pid").toInteger(-1);
    }
    return -1;
}

} // namespace

class tst_KernelLogE2E final : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    MemoryCgroup m_cgroup;
    QString m_noCgroup; // why there is no memory cgroup here (then the /dev/kmsg stand-in is used)
    SshdFixture m_sshd; // started inside the cgroup, so that its sessions are too
    bool m_kmsg = false;

    remote::EngineOptions options() const {
        remote::EngineOptions o;
        o.localTrainer = kTrainer;
        o.sshConfigPath = QStringLiteral("none");
        o.knownHostsPath = m_sshd.knownHostsPath();
        return o;
    }

    // Without a memory cgroup: once rank 1 has started, its OOM kill is written to the kernel log as the kernel
    // writes one, and the rank is killed.
    void standInForTheOomKiller(qint64 pid) const {
        const QByteArray line = "<3>Memory cgroup out of memory: Killed process " + QByteArray::number(pid) +
                                " (rankscope-train) total-vm:3215000kB, anon-rss:2101000kB, file-rss:2468kB, "
                                "shmem-rss:0kB, UID:0 pgtables:192kB oom_score_adj:0\n";
        QString error;
        QVERIFY2(writeText(QStringLiteral("/dev/kmsg"), line, &error), qPrintable(error));
        QCOMPARE(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
    }

private slots:
    void initTestCase() {
        qRegisterMetaType<RunRecord>();
        QVERIFY(QFileInfo(kTrainer).isExecutable());
        QVERIFY(QFileInfo(kCli).isExecutable());
        if (!m_cgroup.enter(kLimitBytes, &m_noCgroup)) {
            m_kmsg = ::geteuid() == 0 && QFileInfo(QStringLiteral("/dev/kmsg")).isWritable();
            qWarning("no memory cgroup here (%s): %s", qPrintable(m_noCgroup),
                     m_kmsg ? "the OOM kill is written through /dev/kmsg and the rank killed with SIGKILL instead"
                            : "the OOM tests are skipped");
        } else {
            qInfo("memory cgroup %s, limit %lld MiB", qPrintable(m_cgroup.path()), kLimitBytes >> 20);
        }
        QString error;
        QVERIFY2(m_sshd.start(&error), qPrintable(error));
    }

    void cleanupTestCase() {
        killRunProcesses(m_dir.path());
        m_sshd.stop();
        m_cgroup.leave();
    }

    // The read on this machine, as a node worker runs it: the source, the node's clock, the ranks' pids.
    void readsThisMachinesKernelLog() {
        QDir().mkpath(m_dir.filePath(QStringLiteral("node")));
        QString error;
        QVERIFY(writeText(m_dir.filePath(QStringLiteral("node/rank3.pid")), "4242\n", &error));
        remote::LocalTransport transport;
        transport.connect();
        const remote::ExecResult result =
            transport.exec(remote::kernelLogCommand(0, 10, 4096, m_dir.filePath(QStringLiteral("node"))), {},
                           std::chrono::seconds(60));
        const KernelLogCapture capture = remote::kernelLogCaptureFrom(result, QStringLiteral("localhost"));
        if (!capture.wasRead())
            QSKIP(qPrintable(QStringLiteral("this machine's kernel log cannot be read here: ") + capture.problem));
        QCOMPARE(capture.source, QStringLiteral("dmesg --time-format iso"));
        QVERIFY(capture.text.size() <= 4096);
        QVERIFY2(capture.totalBytes >= capture.text.size(), qPrintable(QString::number(capture.totalBytes)));
        QCOMPARE(capture.rankPids, (QHash<int, qint64>{{3, 4242}}));
        const double now = static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
        QVERIFY2(std::abs(capture.readAt - now) < 600, qPrintable(QString::number(capture.readAt, 'f', 3)));
        QVERIFY(capture.bootTime < capture.readAt);
        // Every line but a first one cut by the size bound carries an ISO stamp.
        const QList<QByteArray> lines = capture.text.trimmed().split('\n');
        QVERIFY(lines.size() >= 2);
        QVERIFY2(lines.last().size() > 26 && lines.last()[4] == '-' && lines.last()[10] == 'T',
                 lines.last().constData());
    }

    // What the read's script said on stderr (its clock, the ranks' pids, each attempt, the source that answered),
    // in the forms the nodes give it, and the one sentence that says why nothing was read.
    void captureFromWhatTheNodeSaid_data() {
        QTest::addColumn<QByteArray>("err");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("problem"); // empty: read, with the source "dmesg" and out as its text
        QTest::addColumn<double>("readAt");
        QTest::addColumn<double>("bootTime");
        QTest::addColumn<QString>("pids"); // "rank:pid,…"
        const double unknown = kUnknownTime;
        QTest::newRow("read") << QByteArray("rankscope-clock 1763810230.250 5000.5\nrankscope-pid rank3.pid 4242\n"
                                            "rankscope-pid rank2.pid \nrankscope-source dmesg 12\n")
                              << 0 << "" << 1763810230.25 << 1763805229.75 << "3:4242";
        QTest::newRow("a date without %N (busybox)")
            << QByteArray("rankscope-clock 1763810230.%N 5000.5\nrankscope-source dmesg 12\n") << 0 << ""
            << 1763810230.0 << 1763805229.5 << "";
        QTest::newRow("no uptime") << QByteArray("rankscope-clock 100.5\nrankscope-source dmesg 12\n") << 0 << ""
                                   << 100.5 << unknown << "";
        QTest::newRow("no clock") << QByteArray("rankscope-clock soon\nrankscope-source dmesg 12\n") << 0 << ""
                                  << unknown << unknown << "";
        QTest::newRow("a source, then a failure")
            << QByteArray("rankscope-source dmesg 12\ntail: write error\n") << 4
            << "the kernel log of gpu-b could not be read (exit status 4): rankscope-source dmesg 12 tail: write error"
            << unknown << unknown << "";
        QTest::newRow("no temporary directory")
            << QByteArray("rankscope-attempt mktemp: cannot create a temporary directory\n") << 3
            << "the kernel log of gpu-b could not be read (exit status 3): rankscope-attempt mktemp: cannot create a "
               "temporary directory"
            << unknown << unknown << "";
        QTest::newRow("no source, status 0")
            << QByteArray() << 0 << "the kernel log of gpu-b could not be read (exit status 0): " << unknown << unknown
            << "";
        QTest::newRow("refused, then journalctl not permitted")
            << QByteArray("rankscope-attempt dmesg --time-format iso: status 1: dmesg: read kernel buffer failed: "
                          "Permission denied \n"
                          "rankscope-attempt dmesg: status 1: dmesg: read kernel buffer failed: Permission denied \n"
                          "rankscope-attempt journalctl -k: status 1: No journal files were opened due to insufficient "
                          "permissions. \n")
            << 4
            << "dmesg not permitted on gpu-b: set kernel.dmesg_restrict=0 or run as root; journalctl -k: not "
               "permitted: add the user to the systemd-journal or adm group"
            << unknown << unknown << "";
        QTest::newRow("an old dmesg, then refused")
            << QByteArray("rankscope-attempt dmesg --time-format iso: status 1: dmesg: unrecognized option "
                          "'--time-format' \n"
                          "rankscope-attempt dmesg: status 1: dmesg: klogctl: Operation not permitted \n"
                          "rankscope-attempt journalctl -k: no entries: Hint: You are currently not seeing messages "
                          "from other users and the system. \n")
            << 4
            << "dmesg not permitted on gpu-b: set kernel.dmesg_restrict=0 or run as root; journalctl -k: not "
               "permitted: add the user to the systemd-journal or adm group"
            << unknown << unknown << "";
        QTest::newRow("refused, then another failure")
            << QByteArray("rankscope-attempt dmesg --time-format iso: status 1: dmesg: Operation not permitted \n"
                          "rankscope-attempt dmesg: status 124:  \n"
                          "rankscope-attempt journalctl -k: not installed\n")
            << 4
            << "dmesg not permitted on gpu-b: set kernel.dmesg_restrict=0 or run as root; journalctl -k: not installed"
            << unknown << unknown << "";
        QTest::newRow("dmesg fails, journalctl not tried")
            << QByteArray("rankscope-attempt dmesg --time-format iso: status 2: dmesg: bad \n"
                          "rankscope-attempt dmesg: status 2: dmesg: worse \n")
            << 4 << "dmesg failed on gpu-b (status 2: dmesg: worse); journalctl -k: not tried" << unknown << unknown
            << "";
    }

    void captureFromWhatTheNodeSaid() {
        QFETCH(QByteArray, err);
        QFETCH(int, status);
        QFETCH(QString, problem);
        QFETCH(double, readAt);
        QFETCH(double, bootTime);
        QFETCH(QString, pids);
        remote::ExecResult result;
        result.exitStatus = status;
        result.out = "2026-12-06T10:00:00,000000+00:00 Out of memory: Killed process 4242\n";
        result.err = err;
        const KernelLogCapture capture = remote::kernelLogCaptureFrom(result, QStringLiteral("gpu-b"));
        QCOMPARE(capture.host, QStringLiteral("gpu-b"));
        QCOMPARE(capture.problem, problem);
        QCOMPARE(capture.text, problem.isEmpty() ? result.out : QByteArray());
        if (problem.isEmpty()) {
            QCOMPARE(capture.source, QStringLiteral("dmesg"));
            QCOMPARE(capture.totalBytes, 12);
        }
        QCOMPARE(capture.readAt, readAt);
        QCOMPARE(capture.bootTime, bootTime);
        QHash<int, qint64> expected;
        for (const QString& pair : pids.split(QLatin1Char(','), Qt::SkipEmptyParts))
            expected.insert(pair.section(QLatin1Char(':'), 0, 0).toInt(),
                            pair.section(QLatin1Char(':'), 1).toLongLong());
        QCOMPARE(capture.rankPids, expected);
    }

    // The read's command: its arguments after the script, a run start not known yet read as 0 (everything).
    void theCommandTakesItsArguments() {
        const QString known = remote::kernelLogCommand(1763810230.9, 10, 4096, QStringLiteral("/w/run"));
        QVERIFY2(known.contains(QLatin1String("'rankscope-kernel-log' '1763810230' '10' '4096' '/w/run'")),
                 qPrintable(known.right(80)));
        const QString unknown = remote::kernelLogCommand(std::nan(""), 10, 4096, QStringLiteral("/w/run"));
        QVERIFY2(unknown.contains(QLatin1String("'rankscope-kernel-log' '0' '10' '4096' '/w/run'")),
                 qPrintable(unknown.right(80)));
    }

    // dmesg refused to a user under kernel.dmesg_restrict is a fact with what to do, not an error.
    void aRefusalIsReportedWithWhatToDo() {
        if (::geteuid() != 0)
            QSKIP("needs root to run the read as another user");
        if (readAll(QStringLiteral("/proc/sys/kernel/dmesg_restrict")).trimmed() != "1")
            QSKIP("kernel.dmesg_restrict is 0 here: dmesg is not refused to anyone");
        const QString command = remote::kernelLogCommand(0, 10, 4096, m_dir.filePath(QStringLiteral("nowhere")));
        const CommandResult run =
            runCommand(QStringLiteral("setpriv"),
                       {QStringLiteral("--reuid=65534"), QStringLiteral("--regid=65534"),
                        QStringLiteral("--clear-groups"), QStringLiteral("/bin/sh"), QStringLiteral("-c"), command},
                       60000);
        QVERIFY2(run.finished, qPrintable(run.describe()));
        remote::ExecResult result;
        result.exitStatus = run.exitCode;
        result.out = run.output;
        result.err = run.errorOutput;
        const KernelLogCapture capture = remote::kernelLogCaptureFrom(result, QStringLiteral("gpu-b"));
        QVERIFY2(!capture.wasRead(), run.errorOutput.constData());
        qInfo("%s", qPrintable(capture.problem));
        QVERIFY2(capture.problem.startsWith(
                     QLatin1String("dmesg not permitted on gpu-b: set kernel.dmesg_restrict=0 or run as root; "
                                   "journalctl -k: ")),
                 qPrintable(capture.problem));
        QVERIFY(capture.text.isEmpty());
    }

    // A node without dmesg and journalctl (a minimal container) says so instead of failing.
    void aNodeWithoutTheToolsSaysSo() {
        // A PATH with the shell's tools the command uses, and neither dmesg nor journalctl.
        const QString bin = m_dir.filePath(QStringLiteral("minimal-bin"));
        QVERIFY(QDir().mkpath(bin));
        for (const char* tool : {"mktemp", "rm", "date", "cut", "cat", "timeout", "head", "tail", "tr", "wc", "grep"}) {
            const QString target = QStandardPaths::findExecutable(QString::fromLatin1(tool));
            QVERIFY2(!target.isEmpty(), tool);
            QFile::link(target, bin + QLatin1Char('/') + QString::fromLatin1(tool));
        }
        remote::LocalTransport transport;
        transport.connect();
        const QString command =
            QStringLiteral("PATH=%1 %2")
                .arg(bin, remote::kernelLogCommand(0, 10, 4096, m_dir.filePath(QStringLiteral("nowhere"))));
        const KernelLogCapture capture = remote::kernelLogCaptureFrom(
            transport.exec(command, {}, std::chrono::seconds(60)), QStringLiteral("node-c"));
        QCOMPARE(capture.problem, QStringLiteral("dmesg is not installed on node-c; journalctl -k: not installed"));
        QVERIFY(capture.text.isEmpty());
        QVERIFY(capture.readAt > 0); // the clock was still read
    }

    // The engine on the local transport: the root cause names the OOM kill of rank 1 with its pid.
    void oomKilledRankIsTheRootCause() {
        if (!m_noCgroup.isEmpty() && !m_kmsg)
            QSKIP(qPrintable(QStringLiteral("no memory cgroup and no /dev/kmsg here: ") + m_noCgroup));
        RunStore store(m_dir.filePath(QStringLiteral("store-local")));
        remote::RunEngine engine(&store, options());
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        const QJsonArray extra = m_kmsg ? QJsonArray{"--threads", "1", "--timeout-s", "30"} : allocFault();
        const QJsonObject job{{"version", 1},
                              {"name", "oom"},
                              {"mode", "debug"},
                              {"master_port", freePort()},
                              {"trainer", trainer(extra)},
                              {"debug", QJsonObject{{"node", "local"}, {"procs", 2}, {"max_steps", 1000}}}};
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Debug, &error), qPrintable(error));
        if (m_kmsg) {
            QTRY_VERIFY_WITH_TIMEOUT(startPid(events, 1) > 0, 120000);
            standInForTheOomKiller(startPid(events, 1));
        }
        QVERIFY(finished.wait(240000));
        const RunRecord record = finished.front().front().value<RunRecord>();
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.firstFailedRank, 1);
        QCOMPARE(record.exits.value(1).status, 128 + SIGKILL);
        const qint64 pid = startPid(events, 1);
        QVERIFY(pid > 0);

        const QVector<Diagnosis> causes = rootCauses(diagnoses);
        QCOMPARE(causes.size(), 1);
        qInfo("%s", qPrintable(causes.front().toString()));
        QCOMPARE(causes.front().ranks.front(), 1);
        const QString expected =
            QStringLiteral("the kernel's OOM killer killed rank 1 (pid %1, rankscope-train) on localhost at ").arg(pid);
        QVERIFY2(causes.front().message.contains(expected), qPrintable(causes.front().message));
        QVERIFY2(causes.front().message.contains(QLatin1String("anon-rss ")), qPrintable(causes.front().message));
        QVERIFY2(causes.front().message.contains(QLatin1String("memory cgroup")), qPrintable(causes.front().message));
        QVERIFY2(!causes.front().message.contains(QLatin1String("look for")), qPrintable(causes.front().message));

        // What was read is kept with the run, and a stored run is diagnosed the same way.
        const QVector<KernelLogCapture> stored = store.kernelLogs(record.id);
        QCOMPARE(stored.size(), 1);
        QCOMPARE(stored.front().node, 0);
        QCOMPARE(stored.front().host, QStringLiteral("localhost"));
        QCOMPARE(stored.front().source, QStringLiteral("dmesg --time-format iso"));
        QVERIFY(stored.front().text.contains("Killed process " + QByteArray::number(pid) + " (rankscope-train)"));
        QCOMPARE(stored.front().rankPids.value(1), pid);
        remote::RunEngine offline(&store, options());
        QSignalSpy replayed(&offline, &remote::RunEngine::diagnoses);
        QVERIFY2(offline.open(record.id, &error), qPrintable(error));
        QCOMPARE(rootCauses(replayed).value(0).message, causes.front().message);
    }

    // A capture starts no debugger where the memory left does not fit one: a hang is often a rank short of memory,
    // and a debugger's allocation would make the OOM killer end ranks. In a memory cgroup of 600 MiB (inside the
    // test's), the rank is "not captured" and told why, naming the cgroup; with the test's room, the same command
    // takes its stacks.
    void aCaptureStartsNoDebuggerThatCouldOomARank() {
        if (!m_noCgroup.isEmpty())
            QSKIP(qPrintable(QStringLiteral("needs a memory cgroup: ") + m_noCgroup));
        QProcess sleeper;
        sleeper.start(QStringLiteral("sleep"), {QStringLiteral("120")});
        QVERIFY(sleeper.waitForStarted());
        const QString pidFile = m_dir.filePath(QStringLiteral("sleeper.pid"));
        QString error;
        QVERIFY(writeText(pidFile, QByteArray::number(sleeper.processId()), &error));
        const QString small = m_cgroup.makeChild(QStringLiteral("capture-room"), qint64(600) << 20, &error);
        QVERIFY2(!small.isEmpty(), qPrintable(error));
        remote::LocalTransport transport;
        transport.connect();
        const QString command = remote::stackCapturesCommand(m_dir.path(), {pidFile}, 60);
        const auto capture = [&](const QString& prefix) {
            const remote::ExecResult result = transport.exec(prefix + command, {}, std::chrono::seconds(120));
            const auto captures = splitStackCaptures(result.out, 1);
            return captures.value(0).value_or(StackCaptureOutput{});
        };
        const StackCaptureOutput refused =
            capture(QStringLiteral("echo $$ >%1/cgroup.procs && ").arg(remote::shellQuote(small)));
        QDir().rmdir(small); // empty again: its shell has ended
        QCOMPARE(refused.exitStatus, 3);
        QVERIFY(refused.out.isEmpty());
        const QString why = stackCaptureError(refused.out, refused.err, refused.exitStatus);
        QVERIFY2(why.startsWith(QLatin1String("not captured: ")) &&
                     why.contains(QStringLiteral("MiB free for a debugger (memory cgroup ")) &&
                     why.contains(QLatin1String("/capture-room)")),
                 qPrintable(why));
        const StackCaptureOutput taken = capture({});
        QCOMPARE(taken.exitStatus, 0);
        QVERIFY2(!parseStacks(taken.out).threads.isEmpty(), taken.err.constData());
        sleeper.kill();
        sleeper.waitForFinished();
    }

    // Over SSH: `rankscope-cli run` prints the root cause as it happens, the kernel log is read on the node
    // through the SSH session, and `rankscope-cli diagnose` prints it again from the run store.
    void overSshTheCliPrintsTheOomKill() {
        if (!m_noCgroup.isEmpty())
            QSKIP(
                qPrintable(QStringLiteral("needs a memory cgroup for a real OOM kill through the CLI: ") + m_noCgroup));
        const QString home = m_dir.filePath(QStringLiteral("home"));
        const QJsonObject node = m_sshd.nodeJson(QStringLiteral("loop"), m_dir.filePath(QStringLiteral("work")), 2);
        const QJsonObject job{{"version", 1},
                              {"name", "oom-ssh"},
                              {"mode", "submit"},
                              {"deploy", "binary"},
                              {"master_port", freePort()},
                              {"nodes", QJsonArray{node}},
                              {"trainer", trainer(allocFault())}};
        const QString jobPath = m_dir.filePath(QStringLiteral("oom-ssh.json"));
        QString error;
        QVERIFY(writeText(jobPath, QJsonDocument(job).toJson(), &error));
        const auto cli = [&](const QStringList& arguments) {
            QProcess process;
            QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
            environment.insert(QStringLiteral("RANKSCOPE_HOME"), home);
            process.setProcessEnvironment(environment);
            process.start(kCli, arguments);
            if (!process.waitForFinished(240000)) {
                process.kill();
                process.waitForFinished();
            }
            return qMakePair(process.exitCode(),
                             QString::fromUtf8(process.readAllStandardOutput() + process.readAllStandardError()));
        };
        const auto [status, out] =
            cli({QStringLiteral("run"), jobPath, QStringLiteral("--known-hosts"), m_sshd.knownHostsPath(),
                 QStringLiteral("--ssh-config"), QStringLiteral("none")});
        QVERIFY2(status == 1, qPrintable(out));
        RunStore store(home);
        const QString run = store.resolveId(QStringLiteral("latest"));
        QVERIFY(!run.isEmpty());
        const qint64 pid = storedStartPid(store, run, 1);
        QVERIFY(pid > 0);
        const QString said =
            QStringLiteral("root-cause: rank 1 on %1 failed first: killed by SIGKILL; the kernel's OOM "
                           "killer killed rank 1 (pid %2, rankscope-train) on %1 at ")
                .arg(m_sshd.host())
                .arg(pid);
        QVERIFY2(out.contains(QStringLiteral("diagnosis: ") + said), qPrintable(out));
        qInfo("%s",
              qPrintable(out.section(QStringLiteral("diagnosis: root-cause: "), 1).section(QLatin1Char('\n'), 0, 0)));

        const QVector<KernelLogCapture> stored = store.kernelLogs(run);
        QCOMPARE(stored.size(), 1);
        QCOMPARE(stored.front().host, m_sshd.host());
        QVERIFY(stored.front().text.contains("Killed process " + QByteArray::number(pid) + " (rankscope-train)"));

        const auto [diagnoseStatus, diagnosed] = cli({QStringLiteral("diagnose"), run});
        QCOMPARE(diagnoseStatus, 0);
        QVERIFY2(diagnosed.contains(said), qPrintable(diagnosed));
    }
};

QTEST_GUILESS_MAIN(tst_KernelLogE2E)
#include "tst_kernellog_e2e.moc"
