// SPDX-License-Identifier: MIT
#include "inspectcommand.h"

#include "cli.h"

#include "core/loginspect.h"
#include "core/ranklist.h"
#include "core/repeats.h"

#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTextStream>

#include <algorithm>
#include <cstdio>

namespace rankscope::cli {

namespace {

// The text report says what an entry has and leaves out what the log did not say, as the JSON does: no dashes.
QString ifKnown(qint64 value, const QString& format) {
    return value < 0 ? QString() : format.arg(value);
}
QString ifKnown(int value, const QString& format) {
    return ifKnown(qint64{value}, format);
}
QString ifKnown(const QString& value, const QString& format) {
    return value.isEmpty() ? QString() : format.arg(value);
}
QString ifKnown(double value, const QString& format) {
    return GpuSample::has(value) ? format.arg(value) : QString();
}
// "a/b unit" when both are known, "a unit used" or "b unit total" (`alone`) when one is.
QString pairIfKnown(double used, double total, const QString& unit, const QString& aloneUsed,
                    const QString& aloneTotal) {
    if (GpuSample::has(used) && GpuSample::has(total))
        return QStringLiteral("%1/%2 %3").arg(used).arg(total).arg(unit);
    if (GpuSample::has(used))
        return QStringLiteral("%1 %2 %3").arg(used).arg(unit, aloneUsed);
    if (GpuSample::has(total))
        return QStringLiteral("%1 %2 %3").arg(total).arg(unit, aloneTotal);
    return {};
}
QString joinKnown(QStringList parts, const QString& separator) {
    parts.removeAll(QString());
    return parts.join(separator);
}
QString moreTimes(qsizetype count) {
    return count == 1 ? QStringLiteral("once more") : QStringLiteral("%1 more times").arg(count);
}
// "rank 3", or "local rank 3" where only torchrun's "[default3]:" named it (no rank of the run on more nodes than
// one); empty when neither is known.
QString rankWords(int rank, int localRank) {
    return rank >= 0 ? QStringLiteral("rank %1").arg(rank) : ifKnown(localRank, QStringLiteral("local rank %1"));
}
// The ranks of an entry's repeats: "rank(s) 0-3", "local rank(s) 1,3", or both joined by "and"; empty: none known.
template <typename Entry> QString repeatRanks(const std::vector<const Entry*>& repeats) {
    QVector<int> ranks;
    QVector<int> localRanks;
    for (const Entry* entry : repeats) {
        if (entry->rank >= 0)
            ranks.append(entry->rank);
        else if (entry->localRank >= 0)
            localRanks.append(entry->localRank);
    }
    return joinKnown(
        {ranks.isEmpty() ? QString() : QStringLiteral("rank(s) %1").arg(formatRankList(ranks)),
         localRanks.isEmpty() ? QString() : QStringLiteral("local rank(s) %1").arg(formatRankList(localRanks))},
        QStringLiteral(" and "));
}

void appendNccl(QString& out, const NcclFacts& nccl) {
    out += QStringLiteral("NCCL\n");
    if (nccl.isEmpty()) {
        out += QStringLiteral("  nothing found\n");
        return;
    }
    if (!nccl.versions.isEmpty())
        out += QStringLiteral("  versions:   %1\n").arg(nccl.versions.join(QStringLiteral(", ")));
    if (!nccl.hosts.isEmpty())
        out += QStringLiteral("  hosts:      %1\n").arg(nccl.hosts.join(QStringLiteral(", ")));
    if (nccl.nranks > 0)
        out += QStringLiteral("  ranks:      %1 seen of %2\n").arg(nccl.ranks.size()).arg(nccl.nranks);
    if (!nccl.network.isEmpty())
        out += QStringLiteral("  network:    %1%2\n")
                   .arg(nccl.network, nccl.ibNoDevice ? QStringLiteral(" (NET/IB: no device found)") : QString());
    else if (nccl.ibNoDevice)
        out += QStringLiteral("  network:    NET/IB: no device found\n");
    if (!nccl.interfaces.isEmpty())
        out += QStringLiteral("  interfaces: %1\n").arg(nccl.interfaces.join(QStringLiteral(", ")));
    if (!nccl.transports.isEmpty()) {
        QStringList parts;
        for (auto it = nccl.transports.cbegin(); it != nccl.transports.cend(); ++it)
            parts << QStringLiteral("%1 %2").arg(it.key()).arg(it.value());
        out += QStringLiteral("  transports: %1\n").arg(parts.join(QStringLiteral(", ")));
    }
    if (nccl.channels > 0)
        out += QStringLiteral("  channels:   %1\n").arg(nccl.channels);
    for (const NcclCommunicator& comm : nccl.communicators) {
        int complete = 0;
        for (const NcclCommRank& rank : comm.ranks)
            complete += rank.init == QLatin1String("COMPLETE") ? 1 : 0;
        out += QStringLiteral("  communicator%1: %2%3 seen, %4 init complete\n")
                   .arg(ifKnown(comm.commId, QStringLiteral(" %1")),
                        comm.nranks > 0 ? QStringLiteral("%1 ranks, ").arg(comm.nranks) : QString())
                   .arg(comm.ranks.size())
                   .arg(complete);
    }
    // A warning every process printed is shown once, with the processes that repeated it.
    const auto warnings = groupRepeats<NcclWarning>(nccl.warnings, [](const NcclWarning& warning) {
        return warning.source + QLatin1Char('\n') + warning.text + QLatin1Char('\n') +
               warning.chain.join(QLatin1Char('\n'));
    });
    for (const Repeats<NcclWarning>& repeats : warnings) {
        const NcclWarning& warning = *repeats.first;
        // "WARN host:pid rank R source: text", each part only when the log gave it.
        const QString origin =
            joinKnown({warning.host.isEmpty() ? ifKnown(warning.pid, QStringLiteral("pid %1"))
                                              : warning.host + ifKnown(warning.pid, QStringLiteral(":%1")),
                       rankWords(warning.rank, warning.localRank), warning.source},
                      QStringLiteral(" "));
        out += QStringLiteral("  WARN %1%2\n")
                   .arg(origin.isEmpty() ? QString() : origin + QStringLiteral(": "), warning.text);
        if (!warning.chain.isEmpty())
            out += QStringLiteral("       then %1\n").arg(warning.chain.join(QStringLiteral(", ")));
        if (repeats.again.empty())
            continue;
        QStringList hosts;
        for (const NcclWarning* again : repeats.again) {
            if (!again->host.isEmpty() && !hosts.contains(again->host))
                hosts.append(again->host);
        }
        QStringList where;
        if (const QString ranks = repeatRanks(repeats.again); !ranks.isEmpty())
            where << ranks;
        if (!hosts.isEmpty())
            where << QStringLiteral("on %1").arg(hosts.join(QStringLiteral(", ")));
        out += QStringLiteral("       and %1%2\n")
                   .arg(moreTimes(static_cast<qsizetype>(repeats.again.size())),
                        where.isEmpty() ? QString() : QStringLiteral(": ") + where.join(QLatin1Char(' ')));
    }
    for (const QString& chain : nccl.orphanChains)
        out += QStringLiteral("  error chain %1\n").arg(chain);
}

void appendTimeouts(QString& out, const QList<CollectiveTimeout>& timeouts) {
    out += QStringLiteral("\nTimeouts\n");
    if (timeouts.isEmpty())
        out += QStringLiteral("  none found\n");
    for (const CollectiveTimeout& t : timeouts) {
        // "rank 5: _ALLGATHER_BASE #9141 ran 600020 ms (timeout 600000 ms), numel 19008 -> 152064, last enqueued
        // 9141, last completed 9140", each part only when the log gave it.
        const QString work =
            joinKnown({t.op, ifKnown(t.seq, QStringLiteral("#%1")), ifKnown(t.ranMs, QStringLiteral("ran %1 ms")),
                       ifKnown(t.timeoutMs, QStringLiteral("(timeout %1 ms)"))},
                      QStringLiteral(" "));
        const QString numel = t.numelIn >= 0 && t.numelOut >= 0
                                  ? QStringLiteral("numel %1 -> %2").arg(t.numelIn).arg(t.numelOut)
                                  : ifKnown(t.numelIn, QStringLiteral("numel in %1")) +
                                        ifKnown(t.numelOut, QStringLiteral("numel out %1"));
        const QString facts = joinKnown({work, numel, ifKnown(t.lastEnqueued, QStringLiteral("last enqueued %1")),
                                         ifKnown(t.lastCompleted, QStringLiteral("last completed %1"))},
                                        QStringLiteral(", "));
        // "rank 8 (rank 0 of process group 2): …": a timeout in another group than the default one; without the
        // run's rank (no "[rank8]:" before PyTorch's lines) only the group's.
        QString who = rankWords(t.rank, t.localRank);
        if (t.group > 0) {
            const QString inGroup = QStringLiteral("rank %1 of process group %2").arg(t.groupRank).arg(t.group);
            who = who.isEmpty() ? inGroup : QStringLiteral("%1 (%2)").arg(who, inGroup);
        }
        out += QStringLiteral("  %1%2\n").arg(who.isEmpty() ? QString() : who + QStringLiteral(": "), facts);
    }
}

void appendFailures(QString& out, const QList<ElasticFailure>& failures) {
    out += QStringLiteral("\nFailures\n");
    if (failures.isEmpty())
        out += QStringLiteral("  none found\n");
    for (const ElasticFailure& f : failures) {
        // What the log says, no more: the agent's one-line report names only the local rank.
        QString who = f.rank >= 0
                          ? QStringLiteral("rank %1").arg(f.rank) + ifKnown(f.localRank, QStringLiteral(" (local %1)"))
                          : ifKnown(f.localRank, QStringLiteral("local rank %1"));
        if (who.isEmpty())
            who = QStringLiteral("a rank");
        who += ifKnown(f.host, QStringLiteral(" on %1")) + ifKnown(f.time, QStringLiteral(" at %1"));
        QString exit = f.exitCode ? QStringLiteral("exit %1").arg(*f.exitCode) : QString();
        if (!f.signal.isEmpty())
            exit += exit.isEmpty() ? f.signal : QStringLiteral(" (%1)").arg(f.signal);
        const QString facts = joinKnown({exit, ifKnown(f.pid, QStringLiteral("pid %1"))}, QStringLiteral(", "));
        out += QStringLiteral("  %1%2: %3\n")
                   .arg(f.rootCause ? QStringLiteral("ROOT CAUSE ") : QString(), who,
                        facts.isEmpty() ? QStringLiteral("failed") : facts);
    }
}

void appendGpus(QString& out, const QList<GpuSample>& gpus) {
    if (gpus.isEmpty())
        return;
    out += QStringLiteral("\nGPUs (last nvidia-smi reading)\n");
    for (const GpuSample& g : gpus) {
        // "0 NVIDIA A10G 00000000:00:1E.0: 0% util, 8722/23028 MiB, 26 C, 60/300 W", each part only when known.
        const QString gpu = joinKnown({ifKnown(g.index, QStringLiteral("%1")), g.name, g.busId}, QStringLiteral(" "));
        const QString readings = joinKnown({ifKnown(g.utilizationPercent, QStringLiteral("%1% util")),
                                            pairIfKnown(g.memoryUsedMiB, g.memoryTotalMiB, QStringLiteral("MiB"),
                                                        QStringLiteral("used"), QStringLiteral("total")),
                                            ifKnown(g.temperatureC, QStringLiteral("%1 C")),
                                            pairIfKnown(g.powerWatts, g.powerLimitWatts, QStringLiteral("W"),
                                                        QStringLiteral("drawn"), QStringLiteral("cap"))},
                                           QStringLiteral(", "));
        out += QStringLiteral("  %1: %2\n")
                   .arg(gpu.isEmpty() ? QStringLiteral("GPU") : gpu,
                        readings.isEmpty() ? QStringLiteral("no readings") : readings);
    }
}

// An error whose text was found before (the same exception on every rank) is shown once, with the ranks and lines
// that repeat it; --json lists each.
void appendErrors(QString& out, const QList<LogError>& errors) {
    constexpr size_t kPlacesShown = 6;
    const auto groups = groupRepeats<LogError>(errors, [](const LogError& e) { return e.text; });
    out += groups.size() == static_cast<size_t>(errors.size())
               ? QStringLiteral("\nErrors\n")
               : QStringLiteral("\nErrors (%1, %2 different)\n").arg(errors.size()).arg(groups.size());
    if (errors.isEmpty())
        out += QStringLiteral("  none found\n");
    for (const Repeats<LogError>& repeats : groups) {
        const LogError& e = *repeats.first;
        out += QStringLiteral("  %1:%2%3: %4\n")
                   .arg(e.file)
                   .arg(e.line)
                   .arg(ifKnown(rankWords(e.rank, e.localRank), QStringLiteral(" %1")), QString::fromUtf8(e.text));
        if (repeats.again.empty())
            continue;
        bool otherFile = false;
        for (const LogError* again : repeats.again)
            otherFile = otherFile || again->file != e.file;
        const QString ranks = repeatRanks(repeats.again);
        // "lines 24, 28" within the first's file; "a.log:24, b.log:24" across files.
        QStringList shown;
        for (size_t i = 0; i < std::min(repeats.again.size(), kPlacesShown); ++i)
            shown << (otherFile ? QStringLiteral("%1:%2").arg(repeats.again[i]->file).arg(repeats.again[i]->line)
                                : QString::number(repeats.again[i]->line));
        QString places = shown.join(QStringLiteral(", "));
        if (repeats.again.size() > kPlacesShown)
            places += QStringLiteral(", …");
        out +=
            QStringLiteral("    and %1%2: %3%4\n")
                .arg(moreTimes(static_cast<qsizetype>(repeats.again.size())), ifKnown(ranks, QStringLiteral(" on %1")),
                     otherFile                   ? QString()
                     : repeats.again.size() == 1 ? QStringLiteral("line ")
                                                 : QStringLiteral("lines "),
                     places);
    }
    const auto interleaved =
        std::count_if(errors.cbegin(), errors.cend(), [](const LogError& e) { return e.interleaved; });
    if (interleaved > 0)
        out += QStringLiteral("  (%1 of these from tracebacks that several processes printed at once, line by line, "
                              "with nothing to say whose: torchrun --tee 3 puts [default<local rank>]: before each "
                              "line)\n")
                   .arg(interleaved);
}

} // namespace

QString formatInspectionText(const LogInspection& inspection) {
    QString out;
    appendNccl(out, inspection.nccl);
    for (const Diagnosis& finding : inspection.ncclFindings)
        out += QStringLiteral("  finding: %1\n").arg(finding.message);
    appendTimeouts(out, inspection.timeouts);
    appendFailures(out, inspection.failures);
    appendGpus(out, inspection.gpus);
    appendErrors(out, inspection.errors);
    return out;
}

namespace {

// "-": standard input (a pipe from `kubectl logs`, `journalctl`), read as a file is.
std::optional<QString> inspectStandardInput(LogInspector& inspector) {
    QFile in;
    if (!in.open(stdin, QIODevice::ReadOnly))
        return QStringLiteral("-: %1").arg(in.errorString());
    if (const QString tool = decompressorFor(in.peek(8)); !tool.isEmpty())
        return QStringLiteral("-: compressed with %1: name the file instead, or pipe `%1 -dc` into inspect").arg(tool);
    return inspector.inspectDevice(in, QStringLiteral("-"));
}

// A file, or a compressed one (an archived job log, `rank0.log.gz`) through the program that writes it out, which
// is given the file on its standard input: what it wrote before an error (a file cut short) is read too.
std::optional<QString> inspectPath(LogInspector& inspector, const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return QStringLiteral("%1: %2").arg(path, file.errorString());
    const QString tool = decompressorFor(file.peek(8));
    if (tool.isEmpty())
        return inspector.inspectDevice(file, path);
    file.close();
    QProcess process;
    process.setStandardInputFile(path);
    process.start(tool, {QStringLiteral("-dc")});
    if (!process.waitForStarted(-1))
        return QStringLiteral("%1: compressed with %2, which is not installed here to read it (%3)")
            .arg(path, tool, process.errorString());
    const std::optional<QString> error = inspector.inspectDevice(process, path);
    process.waitForFinished(-1);
    if (error)
        return error;
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0)
        return QStringLiteral("%1: %2 -dc failed, what it wrote out before is read: %3")
            .arg(path, tool, QString::fromLocal8Bit(process.readAllStandardError()).trimmed());
    return std::nullopt;
}

// a before b, with runs of digits compared as numbers ("rank2" before "rank10"). QCollator's numeric mode needs ICU,
// which a C locale does not use.
bool numbersInOrder(const QString& a, const QString& b) {
    qsizetype i = 0;
    qsizetype j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i].isDigit() && b[j].isDigit()) {
            const qsizetype startA = i;
            const qsizetype startB = j;
            while (i < a.size() && a[i].isDigit())
                ++i;
            while (j < b.size() && b[j].isDigit())
                ++j;
            // Without leading zeros, the longer number is the larger; of equal lengths, the first digit that differs.
            QStringView numberA = QStringView(a).sliced(startA, i - startA);
            QStringView numberB = QStringView(b).sliced(startB, j - startB);
            while (numberA.size() > 1 && numberA.front() == u'0')
                numberA = numberA.sliced(1);
            while (numberB.size() > 1 && numberB.front() == u'0')
                numberB = numberB.sliced(1);
            if (numberA.size() != numberB.size())
                return numberA.size() < numberB.size();
            if (const int order = numberA.compare(numberB); order != 0)
                return order < 0;
            continue;
        }
        if (a[i] != b[j])
            return a[i] < b[j];
        ++i;
        ++j;
    }
    if ((a.size() - i) != (b.size() - j))
        return a.size() - i < b.size() - j;
    return a < b; // equal but for leading zeros: any order that is total
}

// The files under a folder, at any depth (a torchrun --log-dir, Ray's session logs, a Slurm output folder), in the
// order of their paths with numbers compared as numbers (rank2 before rank10); empty when it holds none.
QStringList filesUnder(const QString& folder) {
    QStringList files;
    QDirIterator it(folder, QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext())
        files.append(it.next());
    std::sort(files.begin(), files.end(), numbersInOrder);
    return files;
}

} // namespace

int runInspectCommand(const QStringList& paths, bool json) {
    // A file that cannot be read is named and the exit status says so, but what the others hold is still shown.
    // When none could be read there is no report: "nothing found" would speak of files never seen.
    LogInspector inspector;
    bool unreadable = false;
    const auto fail = [&unreadable](const QString& error) {
        QTextStream(stderr) << "rankscope-cli inspect: " << error << '\n';
        unreadable = true;
    };
    for (const QString& path : paths) {
        if (path != QLatin1String("-") && QFileInfo(path).isDir()) {
            const QStringList files = filesUnder(path);
            if (files.isEmpty())
                fail(QStringLiteral("%1: a folder with no files in it").arg(path));
            for (const QString& file : files) {
                if (const auto error = inspectPath(inspector, file))
                    fail(*error);
            }
        } else if (const auto error =
                       path == QLatin1String("-") ? inspectStandardInput(inspector) : inspectPath(inspector, path)) {
            fail(*error);
        }
    }
    const LogInspection inspection = inspector.result();
    if (unreadable && inspection.files.isEmpty())
        return kExitUsage;
    if (json) {
        const QByteArray bytes = inspectionToJson(inspection);
        std::fwrite(bytes.constData(), 1, static_cast<size_t>(bytes.size()), stdout);
    } else {
        QTextStream(stdout) << formatInspectionText(inspection);
    }
    return unreadable ? kExitUsage : kExitOk;
}

} // namespace rankscope::cli
