// SPDX-License-Identifier: MIT
// The kernel log parser on real excerpts of public logs (tests/data/kernel/, sources in its README.md) and on
// written messy lines: each case is also fed split at every byte (or at many places, for long inputs) and one
// byte at a time, and must give the same facts.
#include "core/kernellog.h"

#include <QDateTime>
#include <QFile>
#include <QTest>
#include <QTimeZone>

#include <cmath>

using namespace rankscope;

namespace {

constexpr double kBoot = 1700000000.0; // 2023-11-14T22:13:20Z

QByteArray recorded(const QString& name) {
    QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/kernel/") + name);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read tests/data/kernel/%s", qPrintable(name));
    return file.readAll();
}

QString timeText(double time) {
    return std::isnan(time)
               ? QStringLiteral("-")
               : QDateTime::fromMSecsSinceEpoch(qRound64(time * 1000), Qt::UTC).toString(Qt::ISODateWithMs);
}

QString orDash(const QString& text) {
    return text.isEmpty() ? QStringLiteral("-") : text;
}

// "pid|command|time|cgroup or node|constraint|memcg|invoked by|vm=|anon=|file=|shmem=|uid=|line="
QString describe(const OomKill& k) {
    return QStringLiteral("%1|%2|%3|%4|%5|%6|%7|vm=%8|anon=%9|file=%10|shmem=%11|uid=%12|line=%13")
        .arg(k.pid)
        .arg(orDash(k.command), timeText(k.time), k.cgroupLimit ? QStringLiteral("cgroup") : QStringLiteral("node"),
             orDash(k.constraint), orDash(k.memcg), orDash(k.invokedBy))
        .arg(k.totalVmKiB)
        .arg(k.anonRssKiB)
        .arg(k.fileRssKiB)
        .arg(k.shmemRssKiB)
        .arg(k.uid)
        .arg(k.line);
}

// "code|pci|pid|process|time|detail|line="
QString describe(const XidError& x) {
    return QStringLiteral("%1|%2|%3|%4|%5|%6|line=%7")
        .arg(x.code)
        .arg(orDash(x.pciAddress))
        .arg(x.pid)
        .arg(orDash(x.process), timeText(x.time), orDash(x.detail))
        .arg(x.line);
}

QStringList describeAll(const KernelLogParser& parser) {
    QStringList out;
    for (const OomKill& kill : parser.oomKills())
        out << describe(kill);
    for (const XidError& xid : parser.xids())
        out << describe(xid);
    return out;
}

QStringList parse(const QByteArray& input, double bootTime, const QVector<qsizetype>& cuts = {}) {
    KernelLogParser parser(bootTime);
    qsizetype at = 0;
    for (const qsizetype cut : cuts) {
        parser.feed(QByteArrayView(input).sliced(at, cut - at));
        at = cut;
    }
    parser.feed(QByteArrayView(input).sliced(at));
    parser.finish();
    return describeAll(parser);
}

} // namespace

class tst_KernelLog final : public QObject {
    Q_OBJECT

private slots:
    void facts_data() {
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<double>("bootTime");
        QTest::addColumn<QStringList>("expected"); // OOM kills first, then Xids, each in log order
        const double unknown = kUnknownTime;

        // Real excerpts.
        QTest::newRow("dmesg -T: global OOM, summary and kill merged, thousands commas, task table")
            << recorded("dmesg-ctime-global-oom.log") << unknown
            << QStringList{"7899|python|-|node|CONSTRAINT_NONE|/init.scope|-|vm=26184840|anon=15370088|file=0|shmem=0|"
                           "uid=0|line=5"};
        QTest::newRow("syslog file: kernel stamps after the host, commands in parentheses")
            << recorded("syslog-oom-comm-with-parentheses.log") << kBoot
            << QStringList{"15784|python3|2023-11-14T22:21:58.051Z|node|-|-|-|vm=11964|anon=4288|file=3028|shmem=0|"
                           "uid=-1|line=1",
                           "15925|(resolved)|2023-11-14T22:21:58.061Z|node|-|-|-|vm=168424|anon=4064|file=3584|"
                           "shmem=0|uid=-1|line=3",
                           "15783|python3|2023-11-14T22:21:58.071Z|node|-|-|-|vm=11964|anon=4288|file=3028|shmem=0|"
                           "uid=-1|line=5",
                           "15934|(resolved)|2023-11-14T22:21:58.079Z|node|-|-|-|vm=168424|anon=4064|file=3584|"
                           "shmem=0|uid=-1|line=7"};
        QTest::newRow("dmesg: a Kubernetes pod's memory cgroup")
            << recorded("dmesg-memcg-kubernetes.log") << unknown
            << QStringList{"59249|tritonserver|-|cgroup|CONSTRAINT_MEMCG|/kubepods/burstable/"
                           "podcb040dc7-7546-49e2-ae77-320dc45ed2ce|-|vm=38974820|anon=98544|file=319140|shmem=6144|"
                           "uid=0|line=12"};
        QTest::newRow("dmesg copied from a terminal that wrapped the lines")
            << recorded("dmesg-terminal-wrapped.log") << kBoot
            << QStringList{"25315|python3|2023-12-08T18:26:31.491Z|node|CONSTRAINT_NONE|/user.slice|-|vm=53312244|"
                           "anon=31451456|file=74816|shmem=12296|uid=0|line=1"};
        QTest::newRow("dmesg: a cgroup kill, then a trigger without a kill and its call trace")
            << recorded("dmesg-memcg-invoked-call-trace.log") << unknown
            << QStringList{"63214|uwsgi|-|cgroup|-|-|-|vm=3149468|anon=164992|file=52176|shmem=92|uid=0|line=1"};
        QTest::newRow("dmesg of a 4.x kernel: Killed process without Out of memory")
            << recorded("dmesg-killed-process-old-kernel.log") << unknown
            << QStringList{"935|python|-|node|-|-|-|vm=113656|anon=102104|file=0|shmem=0|uid=-1|line=1"};
        QTest::newRow("rsyslog ISO stamps: invoker, summary, a second victim, the kernel's own repeat")
            << recorded("rsyslog-iso-memcg-duplicate.log") << unknown
            << QStringList{"268654|MainThread|2026-09-02T09:08:50.903Z|cgroup|CONSTRAINT_MEMCG|/kubepods.slice/"
                           "kubepods-burstable.slice/kubepods-burstable-pod2c7713fd_2aed_4fa2_a60f_f006ab94b3df.slice|"
                           "MainThread|vm=2011236|anon=567484|file=20608|shmem=0|uid=10001|line=2",
                           "235173|tini|2026-09-02T09:08:50.903Z|cgroup|-|-|-|vm=2568|anon=0|file=1024|shmem=0|"
                           "uid=10001|line=4",
                           "268654|MainThread|2026-09-02T09:08:50.903Z|cgroup|-|-|-|vm=2011236|anon=567484|"
                           "file=20608|shmem=0|uid=10001|line=5"};
        QTest::newRow("dmesg: Xid 31 with pid and name, 62 and 45 with <unknown>")
            << recorded("dmesg-xid-31-62-45.log") << kBoot
            << QStringList{"31|0000:0a:00|13332|cuda_plot_k32_v|2023-11-15T02:12:08.199Z|Ch 00000010, intr 00000000. "
                           "MMU Fault: ENGINE CE2 HUBCLIENT_CE0 faulted @ 0x7f29_5b8c9000. Fault is of type "
                           "FAULT_PRIV_VIOLATION ACCESS_TYPE_VIRT_READ|line=2",
                           "62|0000:0a:00|-1|-|2023-11-15T02:12:50.688Z|2023b230 20238a3a 2023e8b6 2023eac4 2023ec3c "
                           "2023ea86 00000000 00000000|line=3",
                           "45|0000:0a:00|-1|-|2023-11-15T02:12:50.688Z|Ch 00000008|line=4",
                           "45|0000:0a:00|-1|-|2023-11-15T02:12:52.202Z|Ch 00000009|line=5",
                           "45|0000:0a:00|-1|-|2023-11-15T02:12:56.323Z|Ch 0000000a|line=7"};
        QTest::newRow("dmesg: Xids of an older driver, without pid and name")
            << recorded("dmesg-xid-old-format.log") << unknown
            << QStringList{"31|0000:01:00|-1|-|-|Ch 0000003a, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 "
                           "faulted @ 0x17_00592000. Fault is of type FAULT_PDE ACCESS_TYPE_READ|line=2",
                           "13|0000:01:00|-1|-|-|Graphics Exception: Class 0x0 Subchannel 0x0 Mismatch|line=4",
                           "13|0000:01:00|-1|-|-|Graphics Exception: ESR 0x4041b0=0x0|line=5",
                           "13|0000:01:00|-1|-|-|Graphics Exception: ESR 0x404000=0x80000002|line=6",
                           "13|0000:01:00|-1|-|-|Graphics Exception: ChID 0052, Class 00000000, Offset 00001b0c, Data "
                           "1000f010|line=7",
                           "32|0000:01:00|-1|-|-|Channel ID 00000052 intr 02000000|line=8"};
        QTest::newRow("dmesg -T: local times of an unknown zone stay unknown")
            << recorded("dmesg-ctime-xid-13-109.log") << kBoot
            << QStringList{"13|0000:cb:00|-1|-|-|Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal "
                           "Instruction Parameter|line=2",
                           "13|0000:cb:00|-1|-|-|Graphics SM Global Exception on (GPC 7, TPC 7, SM 0): Multiple Warp "
                           "Errors|line=3",
                           "13|0000:cb:00|-1|-|-|Graphics Exception: ESR 0x57c730=0xc04000b 0x57c734=0x24 "
                           "0x57c728=0x1f81fb60 0x57c72c=0x1174|line=4",
                           "109|0000:cb:00|1797828|pt_main_thread|-|Ch 00000008, errorString CTX SWITCH TIMEOUT, Info "
                           "0x58005|line=5"};
        QTest::newRow("journal lines quoted without their time")
            << recorded("journal-xid-45-after-nvlink.log") << unknown
            << QStringList{"45|0000:dc:00|1818990|python3|-|Ch 00000001 caused by previous Xid 149|line=1",
                           "45|0000:ed:00|1818992|python3|-|Ch 0000000c caused by previous Xid 145|line=2",
                           "45|0000:ba:00|1818989|python3|-|Ch 00000002 caused by previous Xid 145|line=3",
                           "45|0000:97:00|1818987|python3|-|Ch 00000003 caused by previous Xid 145|line=4"};
        QTest::newRow("fallen off the bus in three lines without an Xid, and as Xid 79")
            << recorded("dmesg-fallen-off-the-bus.log") << kBoot
            << QStringList{"79|0000:b3:00.0|-1|-|2023-11-14T22:44:03.308Z|fallen off the bus and is not responding to "
                           "commands.|line=3",
                           "79|0000:44:00|-1|-|-|GPU has fallen off the bus|line=6"};
        QTest::newRow("Xid lines without stamps: ECC, NVLink, a bracketed name, GSP")
            << recorded("xid-lines-without-stamps.log") << unknown
            << QStringList{"94|0000:9b:00|1234|python3|-|Contained ECC error|line=1",
                           "149|0019:01:00|-1|-|-|NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 "
                           "0x00000000 0x00000000 0x00000000)|line=2",
                           "79|0000:c6:00|1101234|nvc:[driver]|-|GPU has fallen off the bus.|line=3",
                           "119|0000:65:00|-1|-|-|Timeout waiting for RPC from GSP|line=4"};

        QTest::newRow("recorded here: dmesg --time-format iso, a trainer killed by its memory cgroup's limit")
            << recorded("dmesg-iso-cgroup-oom-trainer.log") << unknown
            << QStringList{"12275|rankscope-train|2026-11-22T11:44:53.756Z|cgroup|CONSTRAINT_MEMCG|/process_api/"
                           "d9720d0a7003d16a809384eb19955c80/rankscope-record|rankscope-train|vm=1522268|anon=521824|"
                           "file=107032|shmem=0|uid=0|line=79"};

        // Written lines: each format and the messes a log picks up.
        QTest::newRow("dmesg --time-format iso: a cgroup kill of a trainer")
            << QByteArray("2026-11-22T11:17:10,030305+00:00 oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
                          "cpuset=/,mems_allowed=0,oom_memcg=/a/rs-oom,task_memcg=/a/rs-oom,task=rankscope-train,"
                          "pid=4242,uid=0\n"
                          "2026-11-22T11:17:10,030333+00:00 Memory cgroup out of memory: Killed process 4242 "
                          "(rankscope-train) total-vm:3215000kB, anon-rss:2101000kB, file-rss:2468kB, shmem-rss:0kB, "
                          "UID:0 pgtables:192kB oom_score_adj:0\n")
            << unknown
            << QStringList{"4242|rankscope-train|2026-11-22T11:17:10.030Z|cgroup|CONSTRAINT_MEMCG|/a/rs-oom|-|"
                           "vm=3215000|anon=2101000|file=2468|shmem=0|uid=0|line=1"};
        QTest::newRow("journalctl -k -o short-iso: a zone without a colon, the host and kernel: dropped")
            << QByteArray("2024-01-15T10:23:45+0100 gpu-a kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, "
                          "name=python, GPU has fallen off the bus.\n")
            << unknown
            << QStringList{"79|0000:3b:00|1234|python|2024-01-15T09:23:45.000Z|GPU has fallen off the bus.|line=1"};
        QTest::newRow("short-iso-precise, a zone west of UTC")
            << QByteArray("2024-01-15T10:23:45.250000-05:30 gpu-a kernel: Out of memory: Killed process 77 (python3) "
                          "total-vm:10kB, anon-rss:5kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:4kB\n")
            << unknown
            << QStringList{
                   "77|python3|2024-01-15T15:53:45.250Z|node|-|-|-|vm=10|anon=5|file=0|shmem=0|uid=1000|line=1"};
        QTest::newRow("/dev/kmsg records count microseconds from boot")
            << QByteArray("6,1234,5678901234,-;Out of memory: Killed process 77 (python3) total-vm:10kB, anon-rss:5kB, "
                          "file-rss:0kB, shmem-rss:0kB\n")
            << kBoot
            << QStringList{"77|python3|2023-11-14T23:47:58.901Z|node|-|-|-|vm=10|anon=5|file=0|shmem=0|uid=-1|line=1"};
        QTest::newRow("dmesg -x, dmesg -r, CRLF and colour")
            << QByteArray(
                   "kern  :err   : [   12.500000] NVRM: Xid (PCI:0000:07:00): 48, pid=99, name=python3, An "
                   "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
                   "partition 0, subpartition 0.\n"
                   "<3>[   13.000000] NVRM: Xid (PCI:0000:07:00): 63, pid='<unknown>', name=<unknown>, Row "
                   "Remapper: New row marked for remapping, reset gpu to activate.\r\n"
                   "\x1b[32m[   14.000000]\x1b[0m NVRM: Xid (PCI:0000:07:00): 92, High single-bit ECC error rate\n")
            << kBoot
            << QStringList{"48|0000:07:00|99|python3|2023-11-14T22:13:32.500Z|An uncorrectable double bit error (DBE) "
                           "has been detected on GPU in the framebuffer at partition 0, subpartition 0.|line=1",
                           "63|0000:07:00|-1|-|2023-11-14T22:13:33.000Z|Row Remapper: New row marked for remapping, "
                           "reset gpu to activate.|line=2",
                           "92|0000:07:00|-1|-|2023-11-14T22:13:34.000Z|High single-bit ECC error rate|line=3"};
        QTest::newRow("an old kernel names the cgroup only on its Kill process line")
            << QByteArray("[   20.000000] Memory cgroup out of memory: Kill process 555 (python) score 1000 or "
                          "sacrifice child\n"
                          "[   20.000100] Killed process 555 (python) total-vm:100kB, anon-rss:50kB, file-rss:0kB, "
                          "shmem-rss:0kB\n")
            << unknown << QStringList{"555|python|-|cgroup|-|-|-|vm=100|anon=50|file=0|shmem=0|uid=-1|line=2"};
        QTest::newRow("a command with a space, an invoker that is not the victim")
            << QByteArray("[   24.000000] rocksdb:high invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, "
                          "oom_score_adj=0\n"
                          "[   24.000100] Out of memory: Killed process 8080 (Web Content) total-vm:1kB, anon-rss:1kB, "
                          "file-rss:0kB, shmem-rss:0kB\n")
            << unknown
            << QStringList{"8080|Web Content|-|node|-|-|rocksdb:high|vm=1|anon=1|file=0|shmem=0|uid=-1|line=2"};
        QTest::newRow("lines that only look like facts")
            << QByteArray("[   21.000000] bash: line 1: 9 Killed python train.py\n"
                          "[   22.000000] Killed process abc (x)\n"
                          "[   23.000000] NVRM: Xid (PCI:0000:07:00): abc\n"
                          "Kill process\n"
                          "oom-kill:constraint=CONSTRAINT_NONE\n"
                          "[   24.000000] oom_reaper: reaped process 935 (python), now anon-rss:0kB\n"
                          "NVRM: Xid (")
            << kBoot << QStringList{};
        QTest::newRow("a cgroup's summary whose Killed line the log lost")
            << QByteArray("[   30.000000] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
                          "oom_memcg=/kubepods/pod1,task_memcg=/kubepods/pod1/c1,task=python3,pid=4242,uid=1000\n")
            << unknown
            << QStringList{"4242|python3|-|cgroup|CONSTRAINT_MEMCG|/kubepods/pod1|-|vm=-1|anon=-1|file=-1|shmem=-1|"
                           "uid=1000|line=1"};
        QTest::newRow("a summary, then another process's Killed line")
            << QByteArray("[   31.000000] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
                          "global_oom,task_memcg=/user.slice,task=a,pid=100,uid=0\n"
                          "[   31.000100] Out of memory: Killed process 200 (b) total-vm:10kB, anon-rss:5kB, "
                          "file-rss:0kB, shmem-rss:0kB\n")
            << unknown
            << QStringList{"100|a|-|node|CONSTRAINT_NONE|/user.slice|-|vm=-1|anon=-1|file=-1|shmem=-1|uid=0|line=1",
                           "200|b|-|node|-|-|-|vm=10|anon=5|file=0|shmem=0|uid=-1|line=2"};
        QTest::newRow("an Xid's pid that is not all digits is no pid")
            << QByteArray("[ 2.0] NVRM: Xid (PCI:0000:07:00): 31, pid=12ab, name=python, MMU Fault\n") << kBoot
            << QStringList{"31|0000:07:00|-1|python|2023-11-14T22:13:22.000Z|MMU Fault|line=1"};
        QTest::newRow("an ISO stamp without its zone is a time of no known zone")
            << QByteArray("2026-11-22T11:17:10 node-a kernel: Out of memory: Killed process 77 (python) total-vm:1kB, "
                          "anon-rss:1kB, file-rss:0kB, shmem-rss:0kB\n")
            << unknown << QStringList{"77|python|-|node|-|-|-|vm=1|anon=1|file=0|shmem=0|uid=-1|line=1"};
        QTest::newRow("a line longer than the parser keeps is cut, its start still read")
            << QByteArray("[   25.000000] Out of memory: Killed process 9090 (x) total-vm:") + QByteArray(70000, '1') +
                   QByteArray("kB\n[   26.000000] Out of memory: Killed process 9091 (y)\n")
            << unknown
            << QStringList{"9090|x|-|node|-|-|-|vm=-1|anon=-1|file=-1|shmem=-1|uid=-1|line=1",
                           "9091|y|-|node|-|-|-|vm=-1|anon=-1|file=-1|shmem=-1|uid=-1|line=2"};
        QTest::newRow("the last line without its newline")
            << QByteArray("[ 1.5] NVRM: Xid (PCI:0000:07:00): 74, pid=5, name=python, NVLink: fatal error detected on "
                          "link 6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)")
            << kBoot
            << QStringList{"74|0000:07:00|5|python|2023-11-14T22:13:21.500Z|NVLink: fatal error detected on link "
                           "6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)|line=1"};
    }

    void facts() {
        QFETCH(QByteArray, input);
        QFETCH(double, bootTime);
        QFETCH(QStringList, expected);
        const QStringList whole = parse(input, bootTime);
        QCOMPARE(whole, expected);

        // Split in two at every byte (at 97 places for long inputs), then one byte at a time.
        const qsizetype step = input.size() <= 3000 ? 1 : input.size() / 97;
        for (qsizetype cut = 0; cut <= input.size(); cut += step) {
            const QStringList split = parse(input, bootTime, {cut});
            if (split != whole)
                QFAIL(qPrintable(QStringLiteral("split at %1:\n%2").arg(cut).arg(split.join(QLatin1Char('\n')))));
        }
        if (input.size() <= 3000) {
            QVector<qsizetype> everyByte;
            for (qsizetype at = 1; at < input.size(); ++at)
                everyByte.append(at);
            QCOMPARE(parse(input, bootTime, everyByte), whole);
        }
    }

    void countsLines() {
        KernelLogParser parser;
        parser.feed("a\nb\n[ 1.0] c");
        parser.finish();
        QCOMPARE(parser.lineCount(), 3);
    }

    void xidMeanings_data() {
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("fragment");
        QTest::newRow("13") << 13 << "graphics engine exception";
        QTest::newRow("31") << 31 << "page fault";
        QTest::newRow("43") << 43 << "stopped processing";
        QTest::newRow("45") << 45 << "preemptive cleanup";
        QTest::newRow("48") << 48 << "double-bit ECC";
        QTest::newRow("63") << 63 << "row remapping recorded";
        QTest::newRow("64") << 64 << "row remapping failed";
        QTest::newRow("74") << 74 << "NVLink";
        QTest::newRow("79") << 79 << "fallen off the bus";
        QTest::newRow("92") << 92 << "single-bit ECC";
        QTest::newRow("94") << 94 << "contained ECC";
        QTest::newRow("95") << 95 << "uncontained ECC";
        QTest::newRow("119") << 119 << "GSP";
        QTest::newRow("not described") << 62 << "";
    }

    void xidMeanings() {
        QFETCH(int, code);
        QFETCH(QString, fragment);
        const QString meaning = xidMeaning(code);
        if (fragment.isEmpty())
            QVERIFY2(meaning.isEmpty(), qPrintable(meaning));
        else
            QVERIFY2(meaning.contains(fragment), qPrintable(meaning));
    }

    void captureRoundTrip() {
        KernelLogCapture capture;
        capture.node = 1;
        capture.host = QStringLiteral("gpu-b");
        capture.source = QStringLiteral("dmesg --time-format iso");
        capture.readAt = 1763810230.5;
        capture.bootTime = 1763775171.25;
        capture.text = recorded("rsyslog-iso-memcg-duplicate.log");
        capture.totalBytes = 5000000;
        capture.rankPids = {{2, 4242}, {3, 4243}};
        const auto back = KernelLogCapture::fromJson(capture.toJson());
        QVERIFY(back);
        QCOMPARE(back->node, 1);
        QCOMPARE(back->host, capture.host);
        QCOMPARE(back->source, capture.source);
        QVERIFY(back->problem.isEmpty() && back->wasRead());
        QCOMPARE(back->readAt, capture.readAt);
        QCOMPARE(back->bootTime, capture.bootTime);
        QCOMPARE(back->text, capture.text);
        QCOMPARE(back->totalBytes, capture.totalBytes);
        QCOMPARE(back->rankPids, capture.rankPids);

        KernelLogCapture refused;
        refused.node = 0;
        refused.problem = QStringLiteral("dmesg not permitted on gpu-a");
        const auto refusedBack = KernelLogCapture::fromJson(refused.toJson());
        QVERIFY(refusedBack);
        QVERIFY(!refusedBack->wasRead());
        QVERIFY(std::isnan(refusedBack->readAt));
        QVERIFY(refusedBack->text.isEmpty());
        QVERIFY(!KernelLogCapture::fromJson(QJsonObject{{"host", "x"}}));
    }
};

QTEST_GUILESS_MAIN(tst_KernelLog)
#include "tst_kernellog.moc"
