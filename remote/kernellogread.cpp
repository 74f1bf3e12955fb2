// SPDX-License-Identifier: MIT
#include "remote/kernellogread.h"

#include "remote/shellcommand.h"

#include <QStringList>

#include <cmath>

namespace rankscope::remote {

namespace {

// $1 since (Unix seconds), $2 timeout per attempt (s), $3 bytes kept, $4 the node's run directory. The output of
// an attempt goes to a temporary file first: only a source that answered may put anything on stdout.
constexpr char kScript[] = R"sh(since=$1; t=$2; n=$3; dir=$4
d=$(mktemp -d 2>/dev/null) || { echo "rankscope-attempt mktemp: cannot create a temporary directory" >&2; exit 3; }
trap 'rm -rf "$d"' EXIT
limit=; command -v timeout >/dev/null 2>&1 && limit="timeout -k 2 $t"
echo "rankscope-clock $(date +%s.%N 2>/dev/null) $(cut -d' ' -f1 /proc/uptime 2>/dev/null)" >&2
for f in "$dir"/rank*.pid; do
  [ -f "$f" ] && echo "rankscope-pid ${f##*/} $(cat "$f" 2>/dev/null)" >&2
done
try() {
  label=$1; shift
  command -v "$1" >/dev/null 2>&1 || { echo "rankscope-attempt $label: not installed" >&2; return 1; }
  $limit "$@" >"$d/out" 2>"$d/err"; s=$?
  if [ "$s" -eq 0 ] && { [ "$1" != journalctl ] || grep -qv '^-- ' "$d/out"; }; then
    echo "rankscope-source $label $(wc -c <"$d/out")" >&2
    tail -c "$n" "$d/out"
    return 0
  fi
  [ "$s" -eq 0 ] && why="no entries" || why="status $s"
  echo "rankscope-attempt $label: $why: $(head -c 400 "$d/err" | tr '\n' ' ')" >&2
  return 1
}
try "dmesg --time-format iso" dmesg --time-format iso ||
  try dmesg dmesg ||
  try "journalctl -k" journalctl -k -o short-iso --no-pager --since "@$since" ||
  exit 4
)sh";

bool refused(const QString& attempt) {
    return attempt.contains(QLatin1String("Operation not permitted")) ||
           attempt.contains(QLatin1String("Permission denied")) || attempt.contains(QLatin1String("permission"));
}

// One sentence: why no source answered, and what to do about it.
QString problemOf(const QString& host, const QStringList& attempts, const ExecResult& result) {
    QString dmesg;
    QString journal;
    // Of the two dmesg attempts, a refusal says the most; else the plain one's reason, since an old or busybox
    // dmesg fails the first only for want of --time-format.
    for (const QString& attempt : attempts) {
        if (attempt.startsWith(QLatin1String("journalctl")))
            journal = attempt;
        else if (attempt.startsWith(QLatin1String("dmesg")) && !refused(dmesg))
            dmesg = attempt;
    }
    if (attempts.isEmpty() || (dmesg.isEmpty() && journal.isEmpty()))
        return QStringLiteral("the kernel log of %1 could not be read (exit status %2): %3")
            .arg(host)
            .arg(result.exitStatus)
            .arg(QString::fromUtf8(result.err).simplified().left(400));
    QString sentence;
    if (refused(dmesg))
        sentence = QStringLiteral("dmesg not permitted on %1: set kernel.dmesg_restrict=0 or run as root").arg(host);
    else if (dmesg.contains(QLatin1String("not installed")))
        sentence = QStringLiteral("dmesg is not installed on %1").arg(host);
    else
        sentence = QStringLiteral("dmesg failed on %1 (%2)").arg(host, dmesg.section(QLatin1String(": "), 1).trimmed());
    QString journalWhy = journal.section(QLatin1String(": "), 1).trimmed();
    if (refused(journal) || journal.contains(QLatin1String("not seeing messages")))
        journalWhy = QStringLiteral("not permitted: add the user to the systemd-journal or adm group");
    return sentence +
           QStringLiteral("; journalctl -k: %1").arg(journalWhy.isEmpty() ? QStringLiteral("not tried") : journalWhy);
}

} // namespace

QString kernelLogCommand(double since, int timeoutSeconds, qint64 maxBytes, const QString& runDir) {
    const qint64 sinceSeconds = std::isnan(since) ? 0 : static_cast<qint64>(std::floor(since));
    return ShellCommand(QStringLiteral("/bin/sh"),
                        {QStringLiteral("-c"), QString::fromLatin1(kScript), QStringLiteral("rankscope-kernel-log"),
                         QString::number(sinceSeconds), QString::number(timeoutSeconds), QString::number(maxBytes),
                         runDir})
        .toString();
}

KernelLogCapture kernelLogCaptureFrom(const ExecResult& result, const QString& host) {
    KernelLogCapture capture;
    capture.host = host;
    QStringList attempts;
    for (const QByteArray& raw : result.err.split('\n')) {
        const QString line = QString::fromUtf8(raw).trimmed();
        if (line.startsWith(QLatin1String("rankscope-clock "))) {
            const QStringList words = line.split(QLatin1Char(' '), Qt::SkipEmptyParts);
            bool nowOk = false;
            bool uptimeOk = false;
            double now = words.value(1).toDouble(&nowOk);
            if (!nowOk) // a date without %N (busybox) prints "1763810230.%N"
                now = words.value(1).section(QLatin1Char('.'), 0, 0).toDouble(&nowOk);
            const double uptime = words.value(2).toDouble(&uptimeOk);
            if (nowOk) {
                capture.readAt = now;
                if (uptimeOk)
                    capture.bootTime = now - uptime;
            }
        } else if (line.startsWith(QLatin1String("rankscope-pid rank"))) {
            const QStringList words = line.split(QLatin1Char(' '), Qt::SkipEmptyParts);
            bool rankOk = false;
            bool pidOk = false;
            const int rank = words.value(1).mid(4).section(QLatin1Char('.'), 0, 0).toInt(&rankOk);
            const qint64 pid = words.value(2).toLongLong(&pidOk);
            if (rankOk && pidOk)
                capture.rankPids.insert(rank, pid);
        } else if (line.startsWith(QLatin1String("rankscope-source "))) {
            const QString rest = line.mid(17);
            const qsizetype space = rest.lastIndexOf(QLatin1Char(' '));
            capture.source = rest.left(space);
            capture.totalBytes = rest.mid(space + 1).toLongLong();
        } else if (line.startsWith(QLatin1String("rankscope-attempt "))) {
            attempts << line.mid(18);
        }
    }
    if (result.exitStatus == 0 && !capture.source.isEmpty())
        capture.text = result.out;
    else
        capture.problem = problemOf(host, attempts, result);
    return capture;
}

} // namespace rankscope::remote
