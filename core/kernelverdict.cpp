// SPDX-License-Identifier: MIT
#include "core/kernelverdict.h"

#include <QDateTime>
#include <QSet>
#include <QStringList>
#include <QTimeZone>

#include <cmath>

namespace rankscope {

namespace {

constexpr double kNameMatchBefore = 120.0; // a kill by name counts this long before the death was recorded
constexpr double kAfter = 30.0;            // clocks of node and supervisor differ a little
constexpr double kXidBefore = 300.0;
constexpr int kMaxXids = 3;
constexpr int kTaskCommLength = 15; // the kernel keeps a task's name in 16 bytes with the NUL

bool known(double time) {
    return !std::isnan(time);
}

QString clockText(double time) {
    return QDateTime::fromMSecsSinceEpoch(qRound64(time * 1000), QTimeZone::utc()).toString(QStringLiteral("HH:mm:ss"));
}

QString atText(double time) {
    return known(time) ? QStringLiteral(" at %1 UTC").arg(clockText(time)) : QString();
}

bool withinRun(double time, const RankDeath& death) {
    return !known(time) || ((!known(death.runStarted) || time >= death.runStarted - 60.0) &&
                            (!known(death.diedAt) || time <= death.diedAt + kAfter));
}

bool nearDeath(double time, const RankDeath& death, double before) {
    return known(time) && known(death.diedAt) && time >= death.diedAt - before && time <= death.diedAt + kAfter &&
           withinRun(time, death);
}

// "anon-rss 2.0 GiB, total-vm 3.1 GiB; the limit of memory cgroup /a/b was reached (not the node's memory)"
QString killDetails(const OomKill& kill) {
    QStringList figures;
    if (kill.anonRssKiB >= 0)
        figures << QStringLiteral("anon-rss %1").arg(formatKiB(kill.anonRssKiB));
    if (kill.fileRssKiB > 0)
        figures << QStringLiteral("file-rss %1").arg(formatKiB(kill.fileRssKiB));
    if (kill.shmemRssKiB > 0)
        figures << QStringLiteral("shmem-rss %1").arg(formatKiB(kill.shmemRssKiB));
    if (kill.totalVmKiB >= 0)
        figures << QStringLiteral("total-vm %1").arg(formatKiB(kill.totalVmKiB));
    QString text = figures.join(QStringLiteral(", "));
    QString why;
    if (kill.cgroupLimit)
        why = kill.memcg.isEmpty()
                  ? QStringLiteral("a memory cgroup's limit was reached, not the node's memory")
                  : QStringLiteral("the limit of memory cgroup %1 was reached, not the node's memory").arg(kill.memcg);
    else if (kill.constraint == QLatin1String("CONSTRAINT_NONE"))
        why = QStringLiteral("the node ran out of memory");
    if (!why.isEmpty())
        text += (text.isEmpty() ? QString() : QStringLiteral("; ")) + why;
    if (!kill.invokedBy.isEmpty() && kill.invokedBy != kill.command)
        text += QStringLiteral(" (the allocation that triggered it was %1's)").arg(kill.invokedBy);
    return text.isEmpty() ? QString() : QStringLiteral(": ") + text;
}

const OomKill* killByPid(const QList<OomKill>& kills, const RankDeath& death) {
    const OomKill* found = nullptr;
    for (const OomKill& kill : kills)
        if (kill.pid == death.pid && withinRun(kill.time, death))
            found = &kill; // the latest: pids are reused
    return found;
}

const OomKill* killByName(const QList<OomKill>& kills, const RankDeath& death) {
    const QString name = death.program.left(kTaskCommLength);
    const OomKill* found = nullptr;
    for (const OomKill& kill : kills)
        if (kill.command == name && nearDeath(kill.time, death, kNameMatchBefore) &&
            (!found || std::abs(kill.time - death.diedAt) < std::abs(found->time - death.diedAt)))
            found = &kill;
    return found;
}

QString xidText(const XidError& xid, const RankDeath& death) {
    QString who;
    if (xid.pid >= 0 && xid.pid == death.pid)
        who = QStringLiteral(", rank %1's process").arg(death.rank);
    else if (xid.pid >= 0)
        who = QStringLiteral(", pid %1%2")
                  .arg(xid.pid)
                  .arg(xid.process.isEmpty() ? QString() : QStringLiteral(" ") + xid.process);
    const QString meaning = xidMeaning(xid.code);
    return QStringLiteral("GPU Xid %1 on %2 (PCI %3%4)%5: %6")
        .arg(xid.code)
        .arg(death.host, xid.pciAddress, who, atText(xid.time),
             meaning.isEmpty() ? QStringLiteral("\"%1\" (see NVIDIA's Xid catalog)").arg(xid.detail.left(160))
                               : meaning);
}

QStringList xidsNear(const QList<XidError>& xids, const RankDeath& death) {
    // The rank's own first, then the newest; one line per code and GPU.
    QList<const XidError*> chosen;
    QSet<QString> seen;
    const auto take = [&](bool own) {
        for (auto it = xids.crbegin(); it != xids.crend() && chosen.size() < kMaxXids; ++it) {
            const bool mine = it->pid >= 0 && it->pid == death.pid && withinRun(it->time, death);
            if (own != mine || (!mine && !nearDeath(it->time, death, kXidBefore)))
                continue;
            const QString key = QString::number(it->code) + it->pciAddress;
            if (!seen.contains(key)) {
                seen.insert(key);
                chosen.append(&*it);
            }
        }
    };
    take(true);
    take(false);
    QStringList lines;
    for (const XidError* xid : chosen)
        lines << xidText(*xid, death);
    return lines;
}

QString unreadable(const RankDeath& death, const KernelLogCapture& capture) {
    const QString why = QStringLiteral("the kernel log of %1 could not be read: %2").arg(death.host, capture.problem);
    return death.signal == 9 ? QStringLiteral("SIGKILL without an error of its own is often the kernel's OOM "
                                              "killer, but ") +
                                   why
                             : QString();
}

} // namespace

QString formatKiB(qint64 kib) {
    if (kib >= 1024 * 1024)
        return QStringLiteral("%1 GiB").arg(static_cast<double>(kib) / (1024.0 * 1024.0), 0, 'f', 1);
    if (kib >= 1024)
        return QStringLiteral("%1 MiB").arg(qRound64(static_cast<double>(kib) / 1024.0));
    return QStringLiteral("%1 KiB").arg(kib);
}

QString kernelLogVerdict(const RankDeath& death, const KernelLogCapture& capture) {
    if (!capture.wasRead())
        return unreadable(death, capture);
    KernelLogParser parser(capture.bootTime);
    parser.feed(capture.text);
    parser.finish();
    QStringList said;
    const OomKill* kill = death.pid >= 0 ? killByPid(parser.oomKills(), death) : nullptr;
    if (kill) {
        // One arg() call: a command or cgroup name with a '%' in it must not be substituted again.
        said << QStringLiteral("the kernel's OOM killer killed rank %1 (pid %2, %3) on %4%5%6")
                    .arg(QString::number(death.rank), QString::number(kill->pid), kill->command, death.host,
                         atText(kill->time), killDetails(*kill));
    } else if ((kill = killByName(parser.oomKills(), death))) {
        const double before = death.diedAt - kill->time;
        said << QStringLiteral("the kernel's OOM killer killed pid %1 (%2) on %3%4, %5; %6, so by name and time it "
                               "was most likely rank %7%8")
                    .arg(QString::number(kill->pid), kill->command, death.host, atText(kill->time),
                         before >= 0.05 ? QStringLiteral("%1 s before rank %2's exit was recorded")
                                              .arg(before, 0, 'f', 1)
                                              .arg(death.rank)
                                        : QStringLiteral("as rank %1 died").arg(death.rank),
                         death.pid < 0
                             ? QStringLiteral("the rank's pid is not known")
                             : QStringLiteral("the rank's pid was %1 (another pid namespace?)").arg(death.pid),
                         QString::number(death.rank), killDetails(*kill));
    } else if (death.signal == 9) {
        QStringList others;
        for (const OomKill& other : parser.oomKills())
            if (nearDeath(other.time, death, kNameMatchBefore) && others.size() < 3)
                others << QStringLiteral("pid %1 (%2)%3").arg(other.pid).arg(other.command, atText(other.time));
        said << (others.isEmpty()
                     ? QStringLiteral("the kernel log of %1 (read with %2) shows no OOM kill of rank %3, so the "
                                      "SIGKILL came from elsewhere (a user, a scheduler, a watchdog)")
                           .arg(death.host, capture.source)
                           .arg(death.rank)
                     : QStringLiteral("the kernel log of %1 (read with %2) shows no OOM kill of rank %3 (pid %4), but "
                                      "the OOM killer killed %5 near then")
                           .arg(death.host, capture.source)
                           .arg(death.rank)
                           .arg(death.pid < 0 ? QStringLiteral("unknown") : QString::number(death.pid),
                                others.join(QStringLiteral(", "))));
    }
    said += xidsNear(parser.xids(), death);
    return said.join(QStringLiteral("; "));
}

} // namespace rankscope
