// SPDX-License-Identifier: MIT
// What the kernel log of a rank's node says about its death (kernelLogVerdict), on written `dmesg --time-format
// iso` lines around a death at 11:17:10.5 UTC: which OOM kill was the rank's, by pid or by name and time, what else
// the log shows, GPU Xid errors, and what is said when the log could not be read.
#include "core/kernelverdict.h"

#include <QDateTime>
#include <QTest>
#include <QTimeZone>

using namespace rankscope;

namespace {

const QDateTime kDied(QDate(2026, 11, 22), QTime(11, 17, 10, 500), QTimeZone::utc());

// A kernel log line `before` seconds before the death.
QByteArray line(double before, const QByteArray& message) {
    return kDied.addMSecs(-qRound64(before * 1000))
               .toString(QStringLiteral("yyyy-MM-ddTHH:mm:ss,zzz000+00:00 "))
               .toUtf8() +
           message + '\n';
}

struct Kill {
    double before = 1.0;
    qint64 pid = 4242;
    QByteArray command = "rankscope-train";
    QByteArray constraint = "CONSTRAINT_NONE";
    QByteArray invoker; // "X invoked oom-killer" before the kill; empty: none
    QByteArray fileRssKiB = "0";
};

// An OOM kill as a 6.x kernel logs it: the invoker (when given), the constraint line, the kill.
QByteArray oomKill(const Kill& kill) {
    const QByteArray pid = QByteArray::number(kill.pid);
    QByteArray text;
    if (!kill.invoker.isEmpty())
        text += line(kill.before + 0.002, kill.invoker + " invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|"
                                                         "__GFP_COMP), order=0, oom_score_adj=0");
    text += line(kill.before + 0.001, "oom-kill:constraint=" + kill.constraint +
                                          ",nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice,"
                                          "task=" +
                                          kill.command + ",pid=" + pid + ",uid=0");
    text += line(kill.before, "Out of memory: Killed process " + pid + " (" + kill.command +
                                  ") total-vm:3215000kB, anon-rss:2101000kB, file-rss:" + kill.fileRssKiB +
                                  "kB, shmem-rss:0kB, UID:0 pgtables:192kB oom_score_adj:0");
    return text;
}

QByteArray xid(double before, int code, const QByteArray& pci, const QByteArray& pid) {
    return line(before, "NVRM: Xid (PCI:" + pci + "): " + QByteArray::number(code) + ", pid=" + pid +
                            ", name=python3, the driver's words");
}

// Rank 1 on gpu-b, pid 4242, killed by SIGKILL at kDied, in a run started 100 s before.
RankDeath death(qint64 pid = 4242, int signal = 9) {
    RankDeath d;
    d.rank = 1;
    d.host = QStringLiteral("gpu-b");
    d.pid = pid;
    d.signal = signal;
    d.diedAt = static_cast<double>(kDied.toMSecsSinceEpoch()) / 1000.0;
    d.runStarted = d.diedAt - 100.0;
    return d;
}

QString verdict(const RankDeath& d, const QByteArray& text) {
    KernelLogCapture capture;
    capture.host = d.host;
    capture.source = QStringLiteral("dmesg --time-format iso");
    capture.text = text;
    return kernelLogVerdict(d, capture);
}

const QString kNoKill =
    QStringLiteral("the kernel log of gpu-b (read with dmesg --time-format iso) shows no OOM kill of "
                   "rank 1, so the SIGKILL came from elsewhere (a user, a scheduler, a watchdog)");

} // namespace

class tst_KernelVerdict final : public QObject {
    Q_OBJECT

private slots:
    // The kill of the rank's pid, with its figures (file-rss only where there was some), whether the node or a
    // cgroup ran out, and the process whose allocation set it off where that was another.
    void theRanksOwnKill() {
        QCOMPARE(
            verdict(death(), oomKill({.invoker = "python3"})),
            QStringLiteral("the kernel's OOM killer killed rank 1 (pid 4242, rankscope-train) on gpu-b at 11:17:09 "
                           "UTC: anon-rss 2.0 GiB, total-vm 3.1 GiB; the node ran out of memory (the allocation "
                           "that triggered it was python3's)"));
        QCOMPARE(
            verdict(death(), oomKill({.invoker = "rankscope-train", .fileRssKiB = "2048"})),
            QStringLiteral("the kernel's OOM killer killed rank 1 (pid 4242, rankscope-train) on gpu-b at 11:17:09 "
                           "UTC: anon-rss 2.0 GiB, file-rss 2 MiB, total-vm 3.1 GiB; the node ran out of memory"));
        // A cpuset's or a memory policy's constraint is not the node running out.
        QCOMPARE(
            verdict(death(), oomKill({.constraint = "CONSTRAINT_CPUSET"})),
            QStringLiteral("the kernel's OOM killer killed rank 1 (pid 4242, rankscope-train) on gpu-b at 11:17:09 "
                           "UTC: anon-rss 2.0 GiB, total-vm 3.1 GiB"));
    }

    // A pid's kill counts from a minute before the run started (clocks differ) to 30 s after the death; before
    // that, or later, the pid was another process's. Of two kills of a reused pid, the latest is the rank's.
    void aKillByPidIsOfThisRun() {
        QCOMPARE(verdict(death(), oomKill({.before = 165.0})), kNoKill);
        QVERIFY(verdict(death(), oomKill({.before = 130.0}))
                    .startsWith(QLatin1String("the kernel's OOM killer killed "
                                              "rank 1 (pid 4242")));
        QCOMPARE(verdict(death(), oomKill({.before = -100.0})), kNoKill);
        const QString reused = verdict(death(), oomKill({.before = 90.0}) + oomKill({.before = 2.0}));
        QVERIFY2(reused.contains(QLatin1String("on gpu-b at 11:17:08 UTC")), qPrintable(reused));
    }

    // In another pid namespace the rank's pid is not the kernel's: the kill of its program's name nearest its death,
    // within two minutes before it (and a little after), is most likely the rank's.
    void aKillByNameIsTheNearest() {
        const QString nearest =
            verdict(death(77), oomKill({.before = 50.0, .pid = 9001}) + oomKill({.before = 3.0, .pid = 9002}) +
                                   oomKill({.before = -20.0, .pid = 9003}));
        QVERIFY2(
            nearest.startsWith(QLatin1String("the kernel's OOM killer killed pid 9002 (rankscope-train) on gpu-b at "
                                             "11:17:07 UTC, 3.0 s before rank 1's exit was recorded; the rank's "
                                             "pid was 77 (another pid namespace?), so by name and time it was "
                                             "most likely rank 1")),
            qPrintable(nearest));
        const QString atOnce = verdict(death(77), oomKill({.before = 0.01, .pid = 9001}));
        QVERIFY2(atOnce.contains(QLatin1String("at 11:17:10 UTC, as rank 1 died;")), qPrintable(atOnce));
        QCOMPARE(verdict(death(77), oomKill({.before = -100.0, .pid = 9001})), kNoKill);
    }

    // No kill of the rank: the kills of other processes near then are named, three at most.
    void otherKillsNearThen() {
        const QByteArray four =
            oomKill({.before = 10.0, .pid = 1, .command = "a"}) + oomKill({.before = 9.0, .pid = 2, .command = "b"}) +
            oomKill({.before = 8.0, .pid = 3, .command = "c"}) + oomKill({.before = 7.0, .pid = 4, .command = "d"});
        QCOMPARE(
            verdict(death(), four),
            QStringLiteral("the kernel log of gpu-b (read with dmesg --time-format iso) shows no OOM kill of rank 1 "
                           "(pid 4242), but the OOM killer killed pid 1 (a) at 11:17:00 UTC, pid 2 (b) at 11:17:01 "
                           "UTC, pid 3 (c) at 11:17:02 UTC near then"));
    }

    // Xid errors: the rank's own process's first, then the newest of the node's from five minutes before the death,
    // one line per code and GPU, three at most. One with no pid is not the rank's, even where the rank's pid is
    // unknown too.
    void xidsTheRanksFirst() {
        const QString lines = verdict(death(), xid(60, 79, "0000:3b:00", "4242") + xid(50, 48, "0000:3c:00", "1") +
                                                   xid(20, 31, "0000:3e:00", "3") + xid(10, 43, "0000:3f:00", "5") +
                                                   xid(5, 43, "0000:3f:00", "5"));
        const QStringList parts = lines.split(QStringLiteral("; GPU "));
        QCOMPARE(parts.size(), 4);
        QVERIFY2(
            parts[1].startsWith(QLatin1String("Xid 79 on gpu-b (PCI 0000:3b:00, rank 1's process) at 11:16:10 UTC")),
            qPrintable(lines));
        QVERIFY2(parts[2].startsWith(QLatin1String("Xid 43 on gpu-b (PCI 0000:3f:00, pid 5 python3) at 11:17:05 UTC")),
                 qPrintable(lines));
        QVERIFY2(parts[3].startsWith(QLatin1String("Xid 31 on gpu-b (PCI 0000:3e:00, pid 3 python3) at 11:16:50 UTC")),
                 qPrintable(lines));
        // Another process's Xid more than five minutes before the death is of another time.
        QCOMPARE(verdict(death(), xid(400, 13, "0000:3b:00", "5")), kNoKill);
        const QString unknown =
            verdict(death(-1), line(5, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."));
        QVERIFY2(unknown.contains(QLatin1String("GPU Xid 79 on gpu-b (PCI 0000:3b:00) at 11:17:05 UTC: the GPU has "
                                                "fallen off the bus")),
                 qPrintable(unknown));
    }

    // A log that could not be read: said for a SIGKILL, with why; nothing for another signal.
    void anUnreadableLog() {
        KernelLogCapture unread;
        unread.problem = QStringLiteral("dmesg: read kernel buffer failed: Operation not permitted");
        QCOMPARE(kernelLogVerdict(death(), unread),
                 QStringLiteral("SIGKILL without an error of its own is often the kernel's OOM killer, but the kernel "
                                "log of gpu-b could not be read: dmesg: read kernel buffer failed: Operation not "
                                "permitted"));
        QVERIFY(kernelLogVerdict(death(4242, 6), unread).isEmpty());
    }

    void sizes_data() {
        QTest::addColumn<qint64>("kib");
        QTest::addColumn<QString>("text");
        QTest::newRow("KiB") << qint64(1023) << QStringLiteral("1023 KiB");
        QTest::newRow("one MiB") << qint64(1024) << QStringLiteral("1 MiB");
        QTest::newRow("just under a GiB") << qint64(1024 * 1024 - 1) << QStringLiteral("1024 MiB");
        QTest::newRow("one GiB") << qint64(1024 * 1024) << QStringLiteral("1.0 GiB");
    }
    void sizes() {
        QFETCH(qint64, kib);
        QTEST(formatKiB(kib), "text");
    }
};

QTEST_APPLESS_MAIN(tst_KernelVerdict)
#include "tst_kernelverdict.moc"
